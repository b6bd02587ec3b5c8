"""ONNX Runtime against OpenVINO × precision on the full-size voice, in one run.

    python -m benchmarks.runtimes                 # idle and one core busy; writes results
    python -m benchmarks.runtimes --quick         # medium text only, idle only

The full-size random-weight voice (`benchmarks/lib/fullsize.py`) and its int8 graphs (made once
into `benchmarks/.cache/fullsize-int8/`, the engine's own recipe) run as the engine runs
them (`engine.neural.build.split_synthesizer`: the front graph and the staged decoder) on
every runtime × precision this machine has (`engine.int8.measure.candidates`), all loaded
together and taken in turn, so the ratios against fp32 on ONNX Runtime come from the same
minutes. Three figures per candidate and condition:

- **decoder, 200 frames**: the decoder alone on one fixed 200-frame latent, warm (median
  of 5): the figure an issue measured OpenVINO on;
- **text, new lengths**: front graph + whole decoder of each sentence of the medium / long
  text, each sentence slightly stretched (length scale) so that its lengths are new to the
  runtime, as a new sentence's are in service;
- **text, seen lengths**: the same sentences again at the same lengths (warm shapes).

Conditions: as found ("idle"; the load average is printed: this machine may be shared),
and with one core busy (`yes > /dev/null`). Fidelity: audible-band SNR of each candidate's
audio of the medium text against fp32 on ONNX Runtime's (the weights are random: the
figures say how the runtimes round, not how a trained voice sounds). Results:
`benchmarks/results/runtimes.md` (machine, commit, versions).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.lib import fullsize
from benchmarks.lib.voices import TEXTS, VOICE_NAME
from engine import EngineOptions, layout

RESULTS = Path(__file__).resolve().parent / "results" / "runtimes.md"
INT8_ROOT = fullsize.CACHE / "fullsize-int8"
DECODER_FRAMES = 200


def _int8_graphs(root: Path, bert: Any) -> Any:
    from engine.int8.recipe import QuantSettings
    from engine.int8.store import read_int8_dir
    from engine.neural.quantize import quantize_voice

    folder = INT8_ROOT / layout.speaker_prefix(VOICE_NAME, "onnx")
    synthesizer = root / layout.speaker_prefix(VOICE_NAME, "onnx") / "synthesizer.onnx"
    found = read_int8_dir(folder / layout.INT8_SUBDIR, folder / "synthesizer.onnx", QuantSettings())
    if found is None:
        print("making the full-size voice's int8 graphs once (minutes) ...", flush=True)
        quantize_voice(VOICE_NAME, root.resolve(), INT8_ROOT.resolve(), bert=bert, threads=2)
        found = read_int8_dir(
            folder / layout.INT8_SUBDIR, folder / "synthesizer.onnx", QuantSettings()
        )
    assert found is not None, f"no int8 graphs in {folder} for {synthesizer}"
    return folder, found


def _inputs(texts: list[str], bert: Any, style: np.ndarray) -> list[Any]:
    from engine.synth.common import SynthInputs
    from engine.text import analyze, sentences_of

    out = []
    for text in texts:
        for sentence in sentences_of(text):
            a = analyze(sentence).with_blanks()
            feats = bert.features([a.bert_text], [a.word2ph])[0]
            out.append(
                SynthInputs(
                    np.asarray(a.phone_ids),
                    np.asarray(a.tone_ids),
                    np.asarray(a.lang_ids),
                    feats,
                    style,
                )
            )
    return out


def _text_run(synth: Any, inputs: list[Any], scale: float) -> tuple[float, np.ndarray]:
    from engine.synth.common import NoiseSource, SynthParams

    params = SynthParams(length_scale=scale)
    t0 = time.perf_counter()
    audio = [synth.synthesize(x, params, NoiseSource(11, k)).audio for k, x in enumerate(inputs)]
    return time.perf_counter() - t0, np.concatenate(audio)


def _decoder_run(synth: Any, z: np.ndarray, g: np.ndarray | None) -> float:
    from engine.synth.common import Latent

    t0 = time.perf_counter()
    synth.decode(Latent(z, g, None), z)
    return time.perf_counter() - t0


def _rss_mb() -> float:
    from engine.int8.measure import _rss_mb

    return _rss_mb() or 0.0


def _pair(ref: Any, cand: Any, inputs: dict[str, list[Any]], run: int) -> dict[str, Any]:
    """One candidate against the reference, taken in turn: decoder on 200 frames (warm,
    median of 5 each), then each text at new lengths (once) and at the same lengths
    again, and the candidate's memory growth over its new-length runs."""
    out: dict[str, Any] = {}
    channels = int(ref._decoder.get_inputs()[0].shape[1])
    z = np.random.default_rng(3).standard_normal((1, channels, DECODER_FRAMES)).astype(np.float32)
    g = np.random.default_rng(4).standard_normal((1, ref._gin, 1)).astype(np.float32)
    for synth in (ref, cand):
        _decoder_run(synth, z, g)  # warm this shape
    runs: dict[str, list[float]] = {"ref": [], "cand": []}
    for r in range(5):
        pair = [("cand", cand), ("ref", ref)]
        for key, synth in pair if r % 2 else pair[::-1]:
            runs[key].append(_decoder_run(synth, z, g))
    out["decoder"] = statistics.median(runs["cand"]) / statistics.median(runs["ref"])
    out["decoder_ref_s"] = statistics.median(runs["ref"])
    grew = 0.0
    new_runs = 0
    for label, xs in inputs.items():
        scale = 1.0 + 0.013 * (run + 1)  # lengths neither has seen yet
        ref_t, ref_audio = _text_run(ref, xs, scale)
        before = _rss_mb()
        cand_t, audio = _text_run(cand, xs, scale)
        grew += _rss_mb() - before
        new_runs += len(xs)
        out[f"{label} new"] = cand_t / ref_t
        out[f"{label} new_ref_s"] = ref_t
        cand_seen = _text_run(cand, xs, scale)[0]
        ref_seen = _text_run(ref, xs, scale)[0]
        out[f"{label} seen"] = cand_seen / ref_seen
        out[f"{label} seen_ref_s"] = ref_seen
        if label == "medium":
            from engine.int8.gate import compare

            out["snr"] = (
                compare(ref_audio, audio, ref.sample_rate)[0]
                if audio.shape == ref_audio.shape
                else float("nan")
            )
    out["mb_per_sentence"] = grew / max(1, new_runs)
    return out


def _git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _machine() -> str:
    from engine.int8.measure import _cpu_model
    from engine.options import usable_cpus

    return f"{platform.machine()}, {_cpu_model()}, {usable_cpus()} usable CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="medium text, idle only")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    import onnxruntime as ort

    from engine.bert import load_bert
    from engine.int8.measure import REFERENCE, candidates
    from engine.layout import onnx_folder_files
    from engine.neural.build import split_synthesizer
    from engine.synth import openvino_backend

    root = fullsize.build()
    bert = load_bert(root, "cpu", threads=args.threads)
    folder, graphs = _int8_graphs(root, bert)
    files = onnx_folder_files(folder)
    style = np.load(files.style_vectors)[0].astype(np.float32)
    texts = (
        {"medium": [TEXTS["medium"]]}
        if args.quick
        else {
            "medium": [TEXTS["medium"]],
            "long": [TEXTS["long"]],
        }
    )
    inputs = {k: _inputs(v, bert, style) for k, v in texts.items()}
    del bert
    options = EngineOptions(threads=args.threads)
    reference = split_synthesizer(files, options, None, None, REFERENCE)
    conditions = ["idle"] if args.quick else ["idle", "one core busy"]
    whats = ["decoder"] + [f"{k} {m}" for k in texts for m in ("new", "seen")]
    heads = {
        "decoder": f"decoder, {DECODER_FRAMES} frames",
        **{f"{k} new": f"{k}, new lengths" for k in texts},
        **{f"{k} seen": f"{k}, seen lengths" for k in texts},
    }
    rows: dict[str, list[str]] = {c: [] for c in conditions}
    bases: dict[str, dict[str, float]] = {c: {} for c in conditions}
    loads: dict[str, list[float]] = {c: [] for c in conditions}
    for n, cand in enumerate(c for c in candidates("auto", int8=True) if c != REFERENCE):
        t0 = time.perf_counter()
        int8 = graphs if cand.precision == "int8" else None
        synth = split_synthesizer(files, options, None, int8, cand)
        built = time.perf_counter() - t0
        for cond in conditions:
            busy = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) if "busy" in cond else None
            try:
                loads[cond].append(os.getloadavg()[0])
                got = _pair(reference, synth, inputs, 2 * n + (cond != "idle"))
            finally:
                if busy is not None:
                    busy.kill()
                    busy.wait()
            cells = [f"{got[w]:.2f}×" for w in whats]
            rows[cond].append(
                f"| {cand.label} | " + " | ".join(cells) + f" | {got['snr']:.1f} dB | "
                f"{got['mb_per_sentence']:.0f} MB | {built:.0f} s |"
            )
            for w in whats:
                bases[cond].setdefault(w, got.get(f"{w}_ref_s", got.get("decoder_ref_s", 0.0)))
            print(f"{cond}: {rows[cond][-1]}", flush=True)
        del synth
    lines = [
        "# ONNX Runtime against OpenVINO × precision (`python -m benchmarks.runtimes`)",
        "",
        f"Machine: {_machine()}; {args.threads} threads; commit {_git_commit()}; "
        f"onnxruntime {ort.__version__}, openvino {openvino_backend.version()} "
        f"(CPU capabilities {', '.join(openvino_backend.cpu_capabilities())}). "
        "Full-size random-weight voice (`benchmarks/lib/fullsize.py`), its int8 graphs made by "
        "the engine's recipe. Each candidate is loaded next to fp32 on ONNX Runtime and "
        "the two are taken in turn: time relative to fp32 on ONNX Runtime in the same "
        "minutes. New lengths: each sentence stretched (length scale) to lengths neither "
        "runtime has seen, as a new sentence's are; seen lengths: the same run again. SNR: "
        "audible band, medium text, against fp32 on ONNX Runtime (random weights: how the "
        "runtimes round, not how a trained voice sounds). Memory: resident memory the "
        "candidate's new-length runs added, per sentence. Build: its sessions' start.",
        "",
    ]
    for cond in conditions:
        load = ", ".join(f"{x:.1f}" for x in loads[cond])
        lines += [
            f"## {cond} (load average at each candidate's start: {load}; 2 cores shared)",
            "",
            "| runtime × precision | "
            + " | ".join(heads[w] for w in whats)
            + " | SNR | memory | build |",
            "| --- | " + " | ".join("---:" for _ in whats) + " | ---: | ---: | ---: |",
            *rows[cond],
            "",
        ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
