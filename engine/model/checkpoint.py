"""Loading published JP-Extra checkpoints (`*.safetensors`, also `G_*.pth`) into
`JPExtraSynthesizer`.

Rules (explicit, so nothing is dropped by accident):
- `iteration` (the training step) is metadata and ignored.
- `enc_q.*` (posterior encoder), `sdp.post_*` (training-time posterior of the stochastic
  duration predictor) and `sdp.flows.1.*` (the flow inference skips) are training-only and
  ignored.
- Weight-normalised convolutions are folded into plain weights, both in the legacy naming
  (`X.weight_g` / `X.weight_v`) and the parametrization naming
  (`X.parametrizations.weight.original0` / `original1`): weight = g · v / ‖v‖, the norm taken
  over every axis but the first.
- Anything else must match the network exactly: a missing or unexpected key is an error
  that names the file and the keys.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path

import torch

from ..errors import EngineError
from ..voice_config import VoiceConfig
from .synthesizer import JPExtraSynthesizer

_LOGGER = logging.getLogger(__name__)

_IGNORED = re.compile(r"^(iteration$|enc_q\.|sdp\.post_|sdp\.flows\.1\.|module\.enc_q\.)")


class CheckpointError(EngineError, ValueError):
    """A checkpoint that does not fit the network built from its config."""


def is_ignored_key(key: str) -> bool:
    """True for keys the inference network does not use (see module doc)."""
    return bool(_IGNORED.match(key))


def _fold(g: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    dims = list(range(1, v.dim()))
    norm = torch.linalg.vector_norm(v, dim=dims, keepdim=True) if dims else v.abs()
    return v * (g / norm)


def prepare_state_dict(tensors: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Apply the loading rules: drop ignored keys, fold weight norm, cast to float32."""
    out: dict[str, torch.Tensor] = {}
    pending: dict[str, dict[str, torch.Tensor]] = {}
    for key, value in tensors.items():
        key = key.removeprefix("module.")
        if is_ignored_key(key):
            continue
        for g_suffix, v_suffix in (
            (".weight_g", ".weight_v"),
            (".parametrizations.weight.original0", ".parametrizations.weight.original1"),
        ):
            if key.endswith(g_suffix):
                pending.setdefault(key[: -len(g_suffix)], {})["g"] = value
                break
            if key.endswith(v_suffix):
                pending.setdefault(key[: -len(v_suffix)], {})["v"] = value
                break
        else:
            out[key] = value
    for base, pair in pending.items():
        if set(pair) != {"g", "v"}:
            missing = "weight_v" if "g" in pair else "weight_g"
            raise CheckpointError(f"weight-norm pair of {base!r} lacks its {missing}")
        out[base + ".weight"] = _fold(pair["g"].float(), pair["v"].float())
    return {k: (v.float() if v.is_floating_point() else v) for k, v in out.items()}


def is_safetensors(path: str | Path) -> bool:
    """Whether `path` is a Safetensors file, by its content (an 8-byte little-endian header
    length, then a JSON object), not its name: `.safetensors` and AivisHub's `.aivm` are."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            head = f.read(9)
    except OSError:
        return path.suffix == ".safetensors"
    if len(head) < 9:
        return False
    n = int.from_bytes(head[:8], "little")
    return 2 <= n <= size - 8 and head[8:9] == b"{"


def read_tensors(path: str | Path) -> dict[str, torch.Tensor]:
    """All tensors of a Safetensors checkpoint (`.safetensors`, `.aivm`; told by content) or
    a `.pth` one (`model` entry if present)."""
    path = Path(path)
    if is_safetensors(path):
        from safetensors.torch import load_file

        return load_file(str(path), device="cpu")
    data = torch.load(str(path), map_location="cpu", weights_only=True)
    if isinstance(data, dict) and "model" in data and isinstance(data["model"], dict):
        data = data["model"]
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: not a state dict")
    return {k: v for k, v in data.items() if isinstance(v, torch.Tensor)}


def load_state(model: JPExtraSynthesizer, tensors: Mapping[str, torch.Tensor], source: str) -> None:
    """Strictly load `tensors` (after `prepare_state_dict`) into `model`."""
    state = prepare_state_dict(tensors)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing keys {missing[:8]}{' …' if len(missing) > 8 else ''}")
        if unexpected:
            parts.append(f"unexpected keys {unexpected[:8]}{' …' if len(unexpected) > 8 else ''}")
        raise CheckpointError(
            f"{source}: checkpoint does not match the network from config.json: " + "; ".join(parts)
        )
    wrong = [
        f"{k} {tuple(state[k].shape)} != {tuple(v.shape)}"
        for k, v in expected.items()
        if tuple(state[k].shape) != tuple(v.shape)
    ]
    if wrong:
        raise CheckpointError(f"{source}: tensor shapes differ from config.json: {wrong[:8]}")
    model.load_state_dict(state, strict=True)


def load_synthesizer(
    config: VoiceConfig, checkpoint: str | Path, device: str | torch.device = "cpu"
) -> JPExtraSynthesizer:
    """Build the network for `config` and load `checkpoint` into it (eval mode)."""
    model = JPExtraSynthesizer(config)
    load_state(model, read_tensors(checkpoint), str(checkpoint))
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    _LOGGER.info("Loaded synthesizer %s", checkpoint)
    return model.to(device)
