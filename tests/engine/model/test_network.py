"""The JP-Extra network against the reference (Style-Bert-VITS2 2.5.0) outputs held in
tests/data/model_small, and the key layout of a full-size published checkpoint."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from engine.model import (
    CheckpointError,
    JPExtraSynthesizer,
    is_ignored_key,
    load_state,
    load_synthesizer,
    prepare_state_dict,
)
from engine.voice_config import load_config, parse_config
from tests.helpers.paths import DATA

SMALL = DATA / "model_small"
CASES = sorted((SMALL / "cases").glob("case_*.npz"))
ATOL = 1e-4


@pytest.fixture(scope="module")
def small_model() -> JPExtraSynthesizer:
    torch.set_num_threads(1)
    cfg = load_config(SMALL / "config.json")
    return load_synthesizer(cfg, SMALL / "model.safetensors")


def _inputs(case: np.lib.npyio.NpzFile) -> dict[str, torch.Tensor]:
    t = len(case["x"])
    return {
        "x": torch.from_numpy(case["x"])[None],
        "x_lengths": torch.tensor([t]),
        "sid": torch.tensor([int(case["sid"])]),
        "tone": torch.from_numpy(case["tones"])[None],
        "language": torch.from_numpy(case["lang_ids"])[None],
        "bert": torch.from_numpy(case["bert"])[None],
        "style_vec": torch.from_numpy(case["style_vec"])[None],
    }


def test_cases_present() -> None:
    assert len(CASES) == 4


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_reference_parity(small_model: JPExtraSynthesizer, path: Path) -> None:
    case = np.load(path)
    inp = _inputs(case)
    t = inp["x"].shape[1]
    c = small_model.inter_channels
    with torch.no_grad():
        enc = small_model.encode(**inp)
        np.testing.assert_allclose(enc.hidden[0].numpy(), case["dbg_enc_x"], atol=ATOL, rtol=0)
        np.testing.assert_allclose(enc.m_p[0].numpy(), case["dbg_enc_m_p"], atol=ATOL, rtol=0)
        np.testing.assert_allclose(enc.logs_p[0].numpy(), case["dbg_enc_logs_p"], atol=ATOL, rtol=0)
        logw_dp = small_model.dp(enc.hidden, enc.x_mask, g=enc.g)
        logw_sdp = small_model.sdp(enc.hidden, enc.x_mask, torch.zeros(1, 2, t), g=enc.g)
        np.testing.assert_allclose(logw_dp[0, 0].numpy(), case["dbg_logw_dp"], atol=ATOL, rtol=0)
        np.testing.assert_allclose(logw_sdp[0, 0].numpy(), case["dbg_logw_sdp"], atol=ATOL, rtol=0)

        # The whole call, as the backends make it (noise given, scaled by 0).
        audio, durations = small_model.infer(
            **inp,
            noise_scale=float(case["noise_scale"]),
            length_scale=float(case["length_scale"]),
            noise_scale_w=float(case["noise_scale_w"]),
            sdp_ratio=float(case["sdp_ratio"]),
            sdp_noise=torch.randn(1, 2, t),
            z_noise=torch.randn(1, c, 8),
        )
    np.testing.assert_array_equal(durations[0].long().numpy(), case["durations"])
    assert audio.shape == (1, 1, 512 * int(case["durations"].sum()))
    np.testing.assert_allclose(audio[0, 0].numpy(), case["audio"], atol=ATOL, rtol=0)

    with torch.no_grad():
        w = torch.from_numpy(case["durations"]).float().view(1, 1, -1)
        _, z_p, z = small_model.decode(enc, w, 0.0, torch.zeros(1, c, 0))
    np.testing.assert_allclose(z_p[0].numpy(), case["dbg_z_p"], atol=ATOL, rtol=0)
    np.testing.assert_allclose(z[0].numpy(), case["dbg_z"], atol=ATOL, rtol=0)


def _manifest() -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for line in (DATA / "full_size_manifest.tsv").read_text().splitlines()[1:]:
        if not line or line.startswith("#"):
            continue
        key, shape, _dtype = line.split("\t")
        shapes[key] = tuple(int(s) for s in shape.strip("[]").split(",") if s)
    return shapes


def test_full_size_manifest_keys_and_shapes() -> None:
    """A default-config network holds exactly the manifest's inference keys and shapes,
    and a checkpoint with the manifest's tensors loads strictly. Built on the meta device,
    so nothing is allocated."""
    manifest = _manifest()
    assert len(manifest) == 1165  # 1164 tensors + iteration
    cfg = parse_config({"version": "2.5.0-JP-Extra", "data": {"n_speakers": 1}})
    with torch.device("meta"):
        model = JPExtraSynthesizer(cfg)
        fake = {k: torch.empty(s) for k, s in manifest.items()}
    state = prepare_state_dict(fake)
    ours = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    assert {k: tuple(v.shape) for k, v in state.items()} == ours

    ignored = [k for k in manifest if is_ignored_key(k)]
    assert "iteration" in ignored
    assert all(k == "iteration" or k.startswith(("sdp.post_", "sdp.flows.1.")) for k in ignored)
    assert sum(k.startswith("sdp.post_") for k in ignored) == 142
    pairs = [k for k in manifest if k.endswith(".weight_g")]
    assert len(pairs) == 95
    # Everything else is used one to one; folded pairs become `.weight` of v's shape.
    for k in pairs:
        base = k[: -len("_g")]
        assert ours[base] == manifest[base + "_v"]
    n_params = sum(int(np.prod(s)) for k, s in manifest.items() if k != "iteration")
    assert n_params == 62756657
    model.load_state_dict(state, strict=True, assign=True)


def test_weight_norm_folding_matches_definition() -> None:
    g = torch.rand(4, 1, 1) + 0.5
    v = torch.randn(4, 3, 5)
    folded = prepare_state_dict({"dec.x.weight_g": g, "dec.x.weight_v": v})["dec.x.weight"]
    expected = g * v / v.norm(dim=(1, 2), keepdim=True)
    torch.testing.assert_close(folded, expected)
    with pytest.raises(CheckpointError, match="lacks"):
        prepare_state_dict({"dec.x.weight_g": g})


def test_missing_and_unexpected_keys_are_errors(small_model: JPExtraSynthesizer) -> None:
    from engine.model import read_tensors

    tensors = read_tensors(SMALL / "model.safetensors")
    fresh = JPExtraSynthesizer(small_model.config)
    broken = dict(tensors)
    del broken["dp.proj.bias"]
    broken["dp.extra"] = torch.zeros(1)
    with pytest.raises(
        CheckpointError, match=r"missing keys \['dp.proj.bias'\].*unexpected keys \['dp.extra'\]"
    ):
        load_state(fresh, broken, "x.safetensors")
