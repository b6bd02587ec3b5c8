"""An AivisHub `.aivmx` voice against the same voice in hayakoe's layout: RTF and first audio,
fp32 and int8, in one run.

    python benchmarks/aivm.py                 # builds the voice once (benchmarks/.cache/aivm/)
    python benchmarks/aivm.py --reps 5 --no-int8

The voice: the project's full-size JP-Extra network (default config: 62.8 M parameters),
random weights (seeded; the duration predictor's bias set so phones last about three
frames), written twice from the same weights:

- hayakoe's layout, by the project's exporter (`engine.synth.export`, what a native voice is);
- an `.aivmx` as AivisHub publishes it: the graph in the form of Style-Bert-VITS2's
  convert_onnx (AivisSpeech's inputs by position, 0-d scalars, seven outputs, opset 18,
  noise inside), simplified by onnxslim, metadata written by aivmlib
  (`tests/helpers/aivm.py`, the same writer the tests use).

Both load through `engine.TTS`-equivalent code paths (`load_neural_voice` and
`load_aivm_voice`) with the same stand-in BERT features (a fixed 1024-wide array per
sentence, the same for both), so the figures are the synthesizer's: RTF of `generate()`
(whole sentences) and time to first audio of `stream()` (windowed decoding), medians over
`--reps` runs taken in turn. int8: each voice's own int8 graphs, made once into the cache
and gated. Writes benchmarks/results/aivm.json and aivm.md.

AivisSpeech's own inference path is not a peer here: `style-bert-vits2` /
`style-bert-vits2-mk` on PyPI pull PyTorch and download their BERT from the Hugging Face Hub
when they run, which this benchmark's rules (no downloads at run time) exclude.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

CACHE = HERE / ".cache" / "aivm"
RESULTS = HERE / "results"
TEXTS = {
    "short": "こんにちは。",
    "medium": "今日はいい天気ですね。散歩に出かけたくなります。",
    "long": (
        "本日は晴れ、最高気温は二十五度の予報です。午後から風が強まりますので、洗濯物には"
        "お気をつけください。明日は雨の見込みです。"
    ),
}
BUILD_VERSION = 1


class StandInBert:
    """Fixed features per sentence (the BERT's cost is the same for both voices)."""

    def features(self, bert_texts, word2phs, **_: object) -> list[np.ndarray]:
        out = []
        for text, w2p in zip(bert_texts, word2phs, strict=True):
            rng = np.random.default_rng(len(text))
            out.append(rng.standard_normal((1024, int(sum(w2p)))).astype(np.float32) * 0.1)
        return out


def build(root: Path = CACHE) -> tuple[Path, Path]:
    """(hayakoe-layout root, .aivmx file) of the full-size voice, built once."""
    marker = root / "built.json"
    native, aivmx = root / "native", root / "bench.aivmx"
    try:
        if json.loads(marker.read_text())["version"] == BUILD_VERSION:
            return native, aivmx
    except (OSError, ValueError, KeyError):
        pass
    import torch

    from engine.layout import speaker_prefix
    from engine.model import JPExtraSynthesizer
    from engine.neural.config import VoiceConfig, parse_config
    from engine.synth.export import export_model_dir
    from tests.helpers.aivm import Speaker, Spec, export_aivis_onnx, save_checkpoint, write_aivmx

    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    torch.manual_seed(1234)
    raw = VoiceConfig().to_dict()
    raw["data"]["style2id"] = {"Neutral": 0, "Happy": 1}
    raw["data"]["spk2id"] = {"bench": 0}
    raw["data"]["use_jp_extra"] = True
    model = JPExtraSynthesizer(parse_config(raw)).eval()
    with torch.no_grad():
        model.dp.proj.weight.mul_(0.01)
        model.dp.proj.bias.fill_(0.9)  # exp(0.9) = 2.5 → ceil 3 frames per phone id
        model.sdp.flows[0].logs[0].fill_(3.0)
        model.sdp.flows[0].m[0].fill_(-0.9 * float(np.exp(3.0)))
    vectors = np.random.default_rng(1234).standard_normal((2, 256)).astype(np.float32) * 0.1
    plain = root / "plain"
    plain.mkdir()
    save_checkpoint(model, plain / "model.safetensors")
    (plain / "config.json").write_text(json.dumps(raw), encoding="utf-8")
    np.save(plain / "style_vectors.npy", vectors)
    t0 = time.perf_counter()
    export_model_dir(
        plain / "config.json",
        plain / "model.safetensors",
        plain / "style_vectors.npy",
        native / speaker_prefix("bench", "onnx"),
    )
    logging.info("hayakoe layout exported in %.0f s", time.perf_counter() - t0)
    t0 = time.perf_counter()
    export_aivis_onnx(model, root / "bench.onnx")
    spec = Spec("Bench Voice", [Speaker("bench", 0, {"Neutral": 0, "Happy": 1})])
    write_aivmx(root / "bench.onnx", aivmx, raw, vectors, spec)
    (root / "bench.onnx").unlink()
    logging.info(".aivmx exported and simplified in %.0f s", time.perf_counter() - t0)
    marker.write_text(json.dumps({"version": BUILD_VERSION}))
    return native, aivmx


def load(kind: str, precision: str, native: Path, aivmx: Path, cache: Path) -> Any:
    from engine import EngineOptions, Speaker
    from engine.aivm.loader import load_aivm_voice
    from engine.neural.loader import load_neural_voice

    opts = EngineOptions(precision=precision)
    bert = StandInBert()
    if kind == "native":
        voice = load_neural_voice("bench", native, bert=bert, cache_dir=cache, options=opts)
    else:
        voice = load_aivm_voice("bench-aivmx", str(aivmx), bert=bert, cache_dir=cache, options=opts)
    return Speaker(voice, playback_guard=False)  # first audio as made, not paced


def measure(speaker: Any, text: str) -> tuple[float, float]:
    """(RTF of generate, seconds to the first audio of stream)."""
    t0 = time.perf_counter()
    audio = speaker.generate(text, seed=0)  # default style: row 0 in both (Neutral, ノーマル)
    rtf = (time.perf_counter() - t0) / audio.duration
    t0 = time.perf_counter()
    stream = speaker.stream(text, seed=0)
    next(stream)
    first = time.perf_counter() - t0
    for _ in stream:
        pass
    return rtf, first


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--no-int8", action="store_true")
    p.add_argument("--only-int8", action="store_true", help="int8 rows only")
    p.add_argument("--texts", default=",".join(TEXTS), help="comma-separated: short,medium,long")
    p.add_argument("--out", default="aivm", help="results file stem under benchmarks/results/")
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    native, aivmx = build()
    cache = CACHE / "engine-cache"
    precisions = ["fp32"] if args.no_int8 else ["int8"] if args.only_int8 else ["fp32", "int8"]
    texts = {k: TEXTS[k] for k in args.texts.split(",")}
    speakers = {
        (kind, prec): load(kind, prec, native, aivmx, cache)
        for prec in precisions
        for kind in ("native", "aivmx")
    }
    for sp in speakers.values():  # warm-up
        measure(sp, TEXTS["short"])
    rows: dict[str, dict[str, dict[str, list[float]]]] = {}
    for _ in range(args.reps):
        for text_name, text in texts.items():
            for (kind, prec), sp in speakers.items():
                rtf, first = measure(sp, text)
                cell = rows.setdefault(f"{kind} {prec}", {}).setdefault(text_name, {})
                cell.setdefault("rtf", []).append(rtf)
                cell.setdefault("first", []).append(first)
    med = {
        name: {t: {k: statistics.median(v) for k, v in c.items()} for t, c in cells.items()}
        for name, cells in rows.items()
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(
        json.dumps({"reps": args.reps, "median": med}, indent=1)
    )
    lines = [
        "| voice | text | RTF | first audio (s) | RTF .aivmx / native | first audio ratio |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for prec in precisions:
        for t in texts:
            n, a = med[f"native {prec}"][t], med[f"aivmx {prec}"][t]
            for kind, m in (("native", n), (".aivmx", a)):
                ratio_rtf = f"{a['rtf'] / n['rtf']:.2f}" if kind == ".aivmx" else ""
                ratio_first = f"{a['first'] / n['first']:.2f}" if kind == ".aivmx" else ""
                lines.append(
                    f"| {kind} {prec} | {t} | {m['rtf']:.3f} | {m['first']:.3f} | "
                    f"{ratio_rtf} | {ratio_first} |"
                )
    md = "\n".join(lines) + "\n"
    (RESULTS / f"{args.out}.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
