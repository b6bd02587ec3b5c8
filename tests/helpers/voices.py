"""Builders for neural-voice tests: small synthesizers with random weights, hayakoe-layout
roots, and a stand-in BERT. Shared by the neural-voice tests in tests/engine and tests/server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import torch

from engine import EngineOptions, layout
from tests.helpers.paths import BERT_SMALL, MODEL_SMALL

SMALL = MODEL_SMALL
ONE_THREAD = EngineOptions(threads=1)
"""Engine options for tests: one thread per session (the machine is shared)."""
LAYOUT_VOICE = "tiny"
"""The voice `build_layout_root` writes for the `layout_root` fixture."""


def small_config(bert_channels: int = 1024, n_speakers: int = 2) -> dict:
    """model_small's config.json, with a chosen BERT width."""
    cfg = json.loads((SMALL / "config.json").read_text())
    cfg["model"]["bert_channels"] = bert_channels
    cfg["data"]["n_speakers"] = n_speakers
    return cfg


def write_random_voice(folder: Path, *, bert_channels: int, seed: int = 0) -> Path:
    """A plain model folder (config.json, model.safetensors, style_vectors.npy) holding a
    model_small-sized network with random weights and the given BERT width."""
    from safetensors.torch import save_file

    from engine.model import JPExtraSynthesizer
    from engine.voice_config import parse_config

    folder.mkdir(parents=True, exist_ok=True)
    raw = small_config(bert_channels)
    torch.manual_seed(seed)
    model = JPExtraSynthesizer(parse_config(raw))
    with torch.no_grad():
        # Make durations span a few frames and the audio clearly audible.
        assert model.dp.proj.bias is not None
        model.dp.proj.bias.fill_(1.0)
        for p in model.dec.parameters():
            p.mul_(1.5)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    state["iteration"] = torch.tensor([1], dtype=torch.int64)
    save_file(state, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(raw, indent=2))
    shutil.copyfile(SMALL / "style_vectors.npy", folder / "style_vectors.npy")
    return folder


def copy_small(folder: Path) -> Path:
    """The reference model_small as a plain folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "model.safetensors", "style_vectors.npy"):
        shutil.copyfile(SMALL / name, folder / name)
    return folder


class FakeBert:
    """Deterministic stand-in for `engine.bert` features (any width); counts calls."""

    def __init__(self, hidden: int = 1024) -> None:
        self.hidden = hidden
        self.calls: list[list[str]] = []

    def features(self, bert_texts, word2phs, **_: object) -> list[np.ndarray]:
        self.calls.append(list(bert_texts))
        out = []
        for text, w2p in zip(bert_texts, word2phs):
            seed = sum(ord(c) for c in text) + len(text)
            rng = np.random.default_rng(seed)
            out.append(rng.standard_normal((self.hidden, int(sum(w2p)))).astype(np.float32))
        return out


_SHARED: dict[str, Path] = {}


def shared_small_root() -> Path:
    """A hayakoe-layout root with model_small as `pytorch/speakers/small/` and its ONNX export
    as `onnx/speakers/small/`, made once per test process (exporting is the slow part).
    Read-only by convention: tests that change files copy them first."""
    if "small" not in _SHARED:
        import atexit
        import tempfile

        from engine.synth.export import export_model_dir

        root = Path(tempfile.mkdtemp(prefix="small-root-"))
        atexit.register(shutil.rmtree, root, True)
        plain = copy_small(root / "pytorch" / "speakers" / "small")
        export_model_dir(
            plain / "config.json",
            plain / "model.safetensors",
            plain / "style_vectors.npy",
            root / "onnx" / "speakers" / "small",
        )
        _SHARED["small"] = root
    return _SHARED["small"]


def build_layout_root(root: Path, voice: str) -> Path:
    """hayakoe's layout with small models, as an official repository would hold it: the test
    BERT (hidden 64) as int8 ONNX and as PyTorch files, and a random-weight synthesizer of
    matching BERT width named `voice`, in both backends' folders."""
    from engine.bert import export_bert
    from engine.synth.export import export_voice

    torch.set_num_threads(1)
    export_bert(BERT_SMALL, root, tokenizer_dir=BERT_SMALL, quantize=True, check=False)
    fp32 = root / layout.BERT_TORCH_PREFIX
    fp32.mkdir(parents=True)
    for name in ("config.json", "model.safetensors"):
        shutil.copyfile(BERT_SMALL / name, fp32 / name)
    plain = write_random_voice(root / layout.speaker_prefix(voice, "pytorch"), bert_channels=64)
    export_voice(plain, root, voice)
    return root


def write_outlier_voice(folder: Path, scale: float = 3000.0, channel: int = 0) -> Path:
    """model_small with one decoder channel made `scale` times louder before the first
    upsampling layer, which is scaled down by as much: the fp32 audio is model_small's
    (LeakyReLU commutes with a positive scale), but the int8 activation range of that tensor
    is set by the outlier and every other channel collapses — a voice made to fail the gate."""
    from safetensors.torch import load_file, save_file

    copy_small(folder)
    state = load_file(str(folder / "model.safetensors"))
    for key in (
        "dec.conv_pre.weight",
        "dec.conv_pre.bias",
        "dec.cond.weight",
        "dec.cond.bias",
    ):
        state[key] = state[key].clone()
        state[key][channel] *= scale
    for key in [k for k in state if k.startswith("dec.ups.0.")]:
        # the weight itself, or its weight-norm magnitude (g; v is normalised away)
        if key.endswith(("weight", "weight_g", "original0")):
            state[key] = state[key].clone()
            state[key][channel] /= scale
    save_file(state, str(folder / "model.safetensors"))
    return folder
