"""Export a JP-Extra synthesizer to ONNX in hayakoe's layout.

`export_voice(src_dir, out_root, name)` turns a plain Style-Bert-VITS2 model folder
(`config.json`, `*.safetensors`, `style_vectors.npy`) into

    OUT_ROOT/onnx/speakers/NAME/
        config.json               copied unchanged
        style_vectors.npy         copied unchanged
        synthesizer.onnx          hayakoe's inputs/outputs (noise drawn inside the graph)
        duration_predictor.onnx   text encoder + duration predictors only (for pauses)

Both graphs have exactly hayakoe's input names, dtypes and dynamic axes (opset 17, the
TorchScript-based exporter, decoder weight norm already folded by our loader), so hayakoe
can load what we export. `synthesizer.onnx` has a second output `durations` (frames per
phone id) that hayakoe reads when present. The noise nodes (RandomNormalLike) are turned
into inputs at load time by `engine.synth.onnx_backend`, which is how our `seed` option
works without a second copy of the weights on disk.
"""

from __future__ import annotations

import logging
import shutil
import warnings
from pathlib import Path

import torch
from torch import nn

from ..model import JPExtraSynthesizer, load_synthesizer
from ..voice_config import VoiceConfig, load_config

_LOGGER = logging.getLogger(__name__)

OPSET = 17

SYNTH_INPUTS = [
    "x",
    "x_lengths",
    "sid",
    "tone",
    "language",
    "bert",
    "style_vec",
    "noise_scale",
    "length_scale",
    "noise_scale_w",
    "sdp_ratio",
]
SYNTH_OUTPUTS = ["audio", "durations"]
DP_INPUTS = [
    "x",
    "x_lengths",
    "sid",
    "tone",
    "language",
    "bert",
    "style_vec",
    "length_scale",
    "noise_scale_w",
    "sdp_ratio",
]
DP_OUTPUTS = ["durations"]
_PHONE_AXES = {
    "x": {1: "phone_len"},
    "tone": {1: "phone_len"},
    "language": {1: "phone_len"},
    "bert": {2: "phone_len"},
}


class SynthesizerGraph(nn.Module):
    """hayakoe's synthesizer call: full inference with noise drawn in the graph."""

    def __init__(self, model: JPExtraSynthesizer) -> None:
        super().__init__()
        self.model = model

    def forward(
        self,
        x: torch.Tensor,
        x_lengths: torch.Tensor,
        sid: torch.Tensor,
        tone: torch.Tensor,
        language: torch.Tensor,
        bert: torch.Tensor,
        style_vec: torch.Tensor,
        noise_scale: torch.Tensor,
        length_scale: torch.Tensor,
        noise_scale_w: torch.Tensor,
        sdp_ratio: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        audio, durations = self.model.infer(
            x,
            x_lengths,
            sid,
            tone,
            language,
            bert,
            style_vec,
            noise_scale=noise_scale,
            length_scale=length_scale,
            noise_scale_w=noise_scale_w,
            sdp_ratio=sdp_ratio,
        )
        return audio, durations


class DurationGraph(nn.Module):
    """hayakoe's duration predictor call: frames per phone id, no flow or decoder."""

    def __init__(self, model: JPExtraSynthesizer) -> None:
        super().__init__()
        self.model = model

    def forward(
        self,
        x: torch.Tensor,
        x_lengths: torch.Tensor,
        sid: torch.Tensor,
        tone: torch.Tensor,
        language: torch.Tensor,
        bert: torch.Tensor,
        style_vec: torch.Tensor,
        length_scale: torch.Tensor,
        noise_scale_w: torch.Tensor,
        sdp_ratio: torch.Tensor,
    ) -> torch.Tensor:
        enc = self.model.encode(x, x_lengths, sid, tone, language, bert, style_vec)
        logw = self.model.log_durations(enc, sdp_ratio, noise_scale_w, None)
        return self.model.frames(logw, enc.x_mask, length_scale)[:, 0]


def _dummy_inputs(config: VoiceConfig, length: int = 20) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(0)
    return (
        torch.randint(1, config.n_vocab, (1, length), generator=gen),
        torch.tensor([length], dtype=torch.int64),
        torch.tensor([0], dtype=torch.int64),
        torch.randint(0, config.n_tones, (1, length), generator=gen),
        torch.ones(1, length, dtype=torch.int64),
        torch.randn(1, config.model.bert_channels, length, generator=gen),
        torch.randn(1, config.style_dim, generator=gen),
    )


def _export(
    module: nn.Module,
    args: tuple[torch.Tensor, ...],
    path: Path,
    inputs: list[str],
    outputs: list[str],
    axes: dict[str, dict[int, str]],
    opset: int,
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    module.eval()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            args,
            str(path),
            input_names=inputs,
            output_names=outputs,
            dynamic_axes=axes,
            opset_version=opset,
            do_constant_folding=True,
            dynamo=False,
        )


def export_synthesizer_onnx(
    model: JPExtraSynthesizer, path: str | Path, opset: int = OPSET
) -> Path:
    """Write hayakoe's `synthesizer.onnx` for `model`."""
    path = Path(path)
    scalars = (torch.tensor([0.6]), torch.tensor([1.0]), torch.tensor([0.8]), torch.tensor([0.2]))
    axes = dict(_PHONE_AXES, audio={2: "audio_len"}, durations={1: "phone_len"})
    _export(
        SynthesizerGraph(model),
        _dummy_inputs(model.config) + scalars,
        path,
        SYNTH_INPUTS,
        SYNTH_OUTPUTS,
        axes,
        opset,
    )
    return path


def export_duration_predictor_onnx(
    model: JPExtraSynthesizer, path: str | Path, opset: int = OPSET
) -> Path:
    """Write hayakoe's `duration_predictor.onnx` for `model`."""
    path = Path(path)
    scalars = (torch.tensor([1.0]), torch.tensor([0.8]), torch.tensor([0.0]))
    axes = dict(_PHONE_AXES, durations={1: "phone_len"})
    _export(
        DurationGraph(model),
        _dummy_inputs(model.config) + scalars,
        path,
        DP_INPUTS,
        DP_OUTPUTS,
        axes,
        opset,
    )
    return path


def export_model_dir(
    config_path: Path, checkpoint: Path, style_vectors: Path, out_dir: Path, opset: int = OPSET
) -> Path:
    """Export one voice's files into `out_dir` (hayakoe's `onnx/speakers/<name>/`)."""
    config = load_config(config_path)
    model = load_synthesizer(config, checkpoint)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / ".partial"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    export_synthesizer_onnx(model, tmp / "synthesizer.onnx", opset)
    export_duration_predictor_onnx(model, tmp / "duration_predictor.onnx", opset)
    shutil.copyfile(config_path, tmp / "config.json")
    shutil.copyfile(style_vectors, tmp / "style_vectors.npy")
    for f in tmp.iterdir():  # move into place only when everything is written
        f.replace(out_dir / f.name)
    tmp.rmdir()
    _LOGGER.info("Exported %s → %s", checkpoint, out_dir)
    return out_dir


def export_voice(src_dir: str | Path, out_root: str | Path, name: str, opset: int = OPSET) -> Path:
    """Export the plain model folder `src_dir` to `out_root/onnx/speakers/<name>/`."""
    from ..layout import plain_folder_files, speaker_prefix

    try:
        prefix = speaker_prefix(name, "onnx")
    except ValueError:
        raise ValueError(f"export: invalid voice name {name!r}") from None
    files = plain_folder_files(Path(src_dir))
    out_dir = Path(out_root) / prefix
    return export_model_dir(files.config, files.checkpoint, files.style_vectors, out_dir, opset)


def check_export(src_dir: str | Path, out_dir: str | Path) -> float:
    """Max |ONNX Runtime − PyTorch| of an exported voice on a fixed random input, noise off
    (inf when the audio lengths differ): the proof that the export is faithful."""
    import numpy as np

    from ..layout import plain_folder_files
    from .common import NoiseSource, SynthInputs, SynthParams
    from .onnx_backend import OnnxSynthesizer
    from .torch_backend import TorchSynthesizer

    files = plain_folder_files(Path(src_dir))
    cfg = load_config(files.config)
    rng = np.random.default_rng(0)
    t = 41
    phones = rng.integers(1, cfg.n_vocab, t)
    phones[::2] = 0
    inputs = SynthInputs(
        phones,
        np.where(phones > 0, 7, 0),
        np.where(phones > 0, 1, 0),
        rng.standard_normal((cfg.model.bert_channels, t)).astype(np.float32),
        np.load(files.style_vectors)[0].astype(np.float32),
        0,
    )
    params = SynthParams(noise_scale=0.0, length_scale=1.0, noise_scale_w=0.0, sdp_ratio=0.0)
    ref = TorchSynthesizer(cfg, files.checkpoint).synthesize(inputs, params, NoiseSource(0))
    ort = OnnxSynthesizer(
        Path(out_dir) / "synthesizer.onnx",
        None,
        inter_channels=cfg.model.inter_channels,
        hop_length=cfg.hop_length,
        sample_rate=cfg.sample_rate,
    ).synthesize(inputs, params, NoiseSource(0))
    if ref.audio.shape != ort.audio.shape:
        return float("inf")
    return float(np.abs(ref.audio - ort.audio).max())
