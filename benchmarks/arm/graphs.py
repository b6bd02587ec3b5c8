"""The decoder graphs the ARM evidence runs: fp32, int8 (our recipe) and fp16, made on the host.

    python -m benchmarks.arm.graphs OUT [--small]

- the synthesizer: the project's `JPExtraSynthesizer` with the full-size JP-Extra shapes
  (the default `VoiceConfig`, as `benchmarks/fullsize.py` builds it) and random weights,
  exported by the project's exporter; `--small` takes `tests/data/model_small` instead
  (the quick mode's voice, seconds to build);
- `decoder.fp32.onnx`: its decoder, cut by the engine's own `derived_graphs` (what
  `SplitOnnxSynthesizer` loads by default: 1-D convolutions);
- `decoder.int8.onnx`: that decoder through the engine's int8 recipe (`quantize_decoder`
  with the default `QuantSettings`: static QDQ, per-channel int8 weights, uint8 activations,
  min-max ranges, the last upsampling stage left in fp32). It is calibrated on random
  latents, not the voice's own: ranges (scales, zero points) differ from a real voice's,
  the graph's structure — which nodes are int8, which kernels ORT picks, how many
  instructions they run — does not;
- `decoder.fp16.onnx`: the fp32 decoder with its weights and arithmetic in float16
  (onnxconverter-common's `convert_float_to_float16`, inputs and outputs kept float32),
  when that package is importable; fp16 graphs the engine makes itself are used instead
  when the engine has them (`engine.int8` has no fp16 recipe at this commit);
- `graphs.json`: the decoder's input names and shapes, hop size and sample rate, the
  multiply-accumulates per latent frame (by precision of the convolution), for the
  drivers inside the arm64 root (which have no torch and do not import the engine).

Weights are random (no trained voice exists here): costs depend on shapes, not values.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

_LOG = logging.getLogger("benchmarks.arm.graphs")

SMALL_VOICE = REPO / "tests" / "data" / "model_small"
CALIBRATION_CROPS = 8


def _export_full_size(out: Path) -> Path:
    """Random full-size JP-Extra synthesizer → `out/synthesizer.onnx`."""
    import torch

    from engine.model import JPExtraSynthesizer
    from engine.synth.export import export_synthesizer_onnx
    from engine.voice_config import VoiceConfig, parse_config

    cfg = VoiceConfig().to_dict()
    cfg["version"] = "2.5.0-JP-Extra"
    cfg["data"].update(n_speakers=1, spk2id={"arm": 0}, num_styles=1, use_jp_extra=True)
    cfg["model"].pop("bert_channels", None)
    torch.manual_seed(1234)
    model = JPExtraSynthesizer(parse_config(cfg)).eval()
    path = out / "synthesizer.onnx"
    export_synthesizer_onnx(model, path)
    (out / "config.json").write_text(json.dumps(cfg, indent=1), encoding="utf-8")
    return path


def _export_small(out: Path) -> Path:
    """The small test voice (PyTorch weights) exported → `out/.../synthesizer.onnx`."""
    from engine.synth.export import export_voice

    return export_voice(SMALL_VOICE, out / "small-voice", "small") / "synthesizer.onnx"


def decoder_inputs(decoder: Path) -> list[dict[str, Any]]:
    """Name, element type and shape (None for a free axis) of each decoder input."""
    import onnx

    graph = onnx.load(str(decoder), load_external_data=False).graph
    inits = {t.name for t in graph.initializer}
    out = []
    for inp in graph.input:
        if inp.name in inits:
            continue
        dims = [
            d.dim_value if d.HasField("dim_value") else None for d in inp.type.tensor_type.shape.dim
        ]
        out.append({"name": inp.name, "elem_type": inp.type.tensor_type.elem_type, "shape": dims})
    return out


def random_feed(inputs: list[dict[str, Any]], frames: int, seed: int) -> dict[str, np.ndarray]:
    """A decoder feed of `frames` latent frames (free axes: batch 1, time `frames`)."""
    rng = np.random.default_rng(seed)
    feed = {}
    for spec in inputs:
        dims = list(spec["shape"])
        free = [i for i, d in enumerate(dims) if d is None]
        for i in free:
            dims[i] = 1 if i == 0 else frames
        feed[spec["name"]] = (0.5 * rng.standard_normal(dims)).astype(np.float32)
    return feed


def macs_per_frame(decoder: Path, tail_stages: int) -> dict[str, float]:
    """Convolution multiply-accumulates per latent frame: in the int8 part and the fp32 tail."""
    import onnx

    from engine.int8.quantize import tail_nodes

    model = onnx.load(str(decoder))
    inits = {t.name: t for t in model.graph.initializer}
    tail = set(tail_nodes(decoder, tail_stages))
    rate: dict[str, float] = {i.name: 1.0 for i in model.graph.input}  # samples per frame
    q = f = 0.0
    for node in model.graph.node:
        r = max((rate.get(x, 0.0) for x in node.input if x), default=1.0)
        r_out = r
        if node.op_type in ("Conv", "ConvTranspose") and node.input[1] in inits:
            w = list(inits[node.input[1]].dims)
            if node.op_type == "ConvTranspose":
                r_out = r * next(a.ints[0] for a in node.attribute if a.name == "strides")
                macs = w[0] * w[1] * w[2] * r
            else:
                macs = w[0] * w[1] * w[2] * r_out
            if node.name in tail:
                f += macs
            else:
                q += macs
        for o in node.output:
            rate[o] = r_out
    return {"int8_part": q, "fp32_tail": f, "hop": max(rate.values())}


def fp16_copy(fp32: Path, out: Path) -> bool:
    """`out`: `fp32` in float16 (inputs/outputs float32); False when the converter is missing."""
    try:
        from onnxconverter_common import float16
    except ImportError:
        _LOG.warning("onnxconverter-common is not installed: no fp16 decoder")
        return False
    import onnx

    model = onnx.load(str(fp32))
    onnx.save(float16.convert_float_to_float16(model, keep_io_types=True), str(out))
    return True


def build(out: Path, small: bool = False) -> dict[str, Any]:
    """Make the graphs under `out` (see the module doc) and return `graphs.json`'s content."""
    from engine.int8.quantize import quantize_decoder
    from engine.int8.recipe import QuantSettings
    from engine.synth.decoder_split import derived_graphs

    out.mkdir(parents=True, exist_ok=True)
    source = _export_small(out) if small else _export_full_size(out)
    _, decoder = derived_graphs(source, cache_dir=out / "cache")
    fp32 = out / "decoder.fp32.onnx"
    fp32.write_bytes(decoder.read_bytes())
    inputs = decoder_inputs(fp32)
    settings = QuantSettings()
    feeds = [random_feed(inputs, settings.crop_frames, seed) for seed in range(CALIBRATION_CROPS)]
    quantize_decoder(fp32, out / "decoder.int8.onnx", feeds, settings)
    graphs = {"fp32": fp32.name, "int8": "decoder.int8.onnx"}
    if fp16_copy(fp32, out / "decoder.fp16.onnx"):
        graphs["fp16"] = "decoder.fp16.onnx"
    cfg_path = source.parent / "config.json"
    sample_rate = 44100
    if cfg_path.is_file():
        sample_rate = int(json.loads(cfg_path.read_text(encoding="utf-8"))["data"]["sampling_rate"])
    macs = macs_per_frame(fp32, settings.fp32_tail_stages)
    info = {
        "voice": "small (tests/data/model_small)"
        if small
        else "full-size JP-Extra, random weights",
        "graphs": graphs,
        "inputs": inputs,
        "hop": int(macs["hop"]),
        "sample_rate": sample_rate,
        "macs_per_frame": {"int8_part": macs["int8_part"], "fp32_tail": macs["fp32_tail"]},
        "quant_settings": settings.to_dict(),
    }
    (out / "graphs.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for the graphs and graphs.json")
    parser.add_argument("--small", action="store_true", help="the small test voice (quick)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    info = build(args.out, args.small)
    print(json.dumps({k: info[k] for k in ("voice", "graphs", "hop", "sample_rate")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
