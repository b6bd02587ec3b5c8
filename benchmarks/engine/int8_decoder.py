"""The int8 decoder: today's recipe against the new one, in one run.

On the full-size voice (random weights of the real JP-Extra shapes: timings are a real
voice's, the fidelity figures say how int8 rounding behaves in this architecture, not how a
trained voice sounds), the decoder alone, quantized here with `engine.int8.quantize` from
the voice's own calibration latents (the shipped 50 calibration sentences, kept in
benchmarks/.cache/ for the next run) for each recipe:

- `today`: Conv + ConvTranspose in int8 (ConvTranspose has no int8 kernel: fp32 between a
  Dequantize and a Quantize), the last stage fp32 — the recipe before issue 36;
- `new`: `QuantSettings()` as it is now (upsampling as polyphase convolutions, LeakyRelu and
  residual additions in int8, the last stage's residual blocks in int8);
- `fallback`: what a voice whose gate fails on `new` gets (`QuantSettings.fallback`: the last
  stage wholly fp32, only convolutions in int8);
- `blocks`, `activations`: one of the two steps of `new` each (`--variants`);
- `per_tensor`: `new` with one weight scale per convolution instead of one per output
  channel (a lead: ONNX Runtime's QLinearConv ran some shapes faster so, others slower);
- `new_float_cuts`: `new`'s graph run as the engine ran it before its QDQ graph was
  simplified and its stages handed each other uint8 (`engine.synth.qdq_simplify`).

`today` and `new_float_cuts` run as before that change (`AS_BEFORE`: float between the
stages, the graph as the quantizer wrote it); the others as the engine runs them now.

Each decoder runs the way the engine runs it (one ONNX Runtime session per upsampling stage,
`session_options`, `--threads`), on `--frames` latent frames. Printed:

1. kernel-time shares by operator (ONNX Runtime's profiler, after its fusions);
2. decoder time, medians of `--reps` alternating rounds and the per-round ratio to `today`,
   idle and with one core busy;
3. the fidelity of each against the fp32 decoder on the held-out sentences
   (`engine.int8.gate`: SNR min, log-mel, MCD, and the verdict against `GateThresholds`;
   the decoder only, the front graph fp32).

`QUICK = False`: a quantization of the full-size decoder takes a minute; the harness is
checked by hand with `--quick` (the tests' small voice).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.lib import CACHE
from benchmarks.lib.report import Report, log
from benchmarks.lib.stats import alternate, busy_core, median
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, fullsize_root, small_root

RESULT = "int8-decoder"
QUICK = False

VARIANTS: dict[str, dict[str, Any]] = {
    "today": {
        "upsample_as_conv": False,
        "op_types": ("Conv", "ConvTranspose"),
        "tail_blocks": False,
        "int8_activations": False,
    },
    "new": {},
    "fallback": {"tail_blocks": False, "int8_activations": False},
    "blocks": {"int8_activations": False},
    "activations": {"tail_blocks": False},
    "per_tensor": {"per_channel": False},
    "new_float_cuts": {},
}
"""Recipe name → `QuantSettings` fields that differ from the defaults."""

AS_BEFORE = frozenset({"today", "new_float_cuts"})
"""Variants whose stages are cut as before issue 36 (`split_decoder_stages(simplify=False)`)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--variants", default="today,new", help="recipes (first: the baseline)")
    p.add_argument("--frames", type=int, default=200, help="latent frames per decoder run")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--no-busy", action="store_true", help="skip the one-core-busy rounds")
    p.add_argument("--heldout", type=int, default=8, help="held-out sentences of the gate")


def _voice(quick: bool) -> tuple[Any, Any, Any]:
    """(files, fp32 split synthesizer, BERT) of the benchmark voice."""
    from engine import EngineOptions, layout
    from engine.bert import load_bert
    from engine.neural.build import split_synthesizer

    root, name = (small_root(), SMALL_VOICE) if quick else (fullsize_root(), VOICE_NAME)
    files = layout.onnx_folder_files(root / layout.speaker_prefix(name, "onnx"))
    synth = split_synthesizer(files, EngineOptions(threads=2), CACHE / "ours-cache")
    return files, synth, load_bert(root, "cpu")


def _latents(files: Any, synth: Any, bert: Any, quick: bool, n_heldout: int) -> dict[str, Any]:
    """Calibration crops and held-out latents of the voice (made once, kept as .npz)."""
    from engine.int8.calibrate import crop, voice_latents
    from engine.int8.recipe import CALIBRATION_FILE, HELDOUT_FILE, QuantSettings, read_sentences
    from engine.neural.build import voice_spec

    settings = QuantSettings()
    calibration = read_sentences(CALIBRATION_FILE)[: 8 if quick else None]
    heldout = read_sentences(HELDOUT_FILE)[:n_heldout]
    stat = files.synthesizer.stat()
    key = f"{files.synthesizer.parent.name}-{stat.st_size}-{stat.st_mtime_ns}-{len(calibration)}"
    path = CACHE / "int8-decoder" / f"latents-{key}-{len(heldout)}.npz"
    if path.is_file():
        with np.load(path) as data:
            arrays = {k: data[k] for k in data.files}
    else:
        spec = voice_spec(files.synthesizer.parent.name, files)
        arrays = {}
        t0 = time.perf_counter()
        for lat in voice_latents(synth, bert, spec, calibration, settings.seed):
            i = lat.style_index * len(calibration) + lat.sentence_index
            key = f"{lat.style}|{lat.sentence}"
            arrays[f"cal{i:04d}.z"] = crop(lat.z, settings.crop_frames, key)
            if lat.g is not None:
                arrays[f"cal{i:04d}.g"] = lat.g
        for lat in voice_latents(synth, bert, spec, heldout, settings.seed + 1):
            i = lat.style_index * len(heldout) + lat.sentence_index
            arrays[f"held{i:04d}.z"] = lat.z
            if lat.g is not None:
                arrays[f"held{i:04d}.g"] = lat.g
        log(f"latents in {time.perf_counter() - t0:.0f} s")
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **arrays)

    def feeds(prefix: str) -> list[dict[str, np.ndarray]]:
        keys = sorted({k.split(".")[0] for k in arrays if k.startswith(prefix)})
        return [
            {name: arrays[f"{k}.{name}"] for name in ("z", "g") if f"{k}.{name}" in arrays}
            for k in keys
        ]

    return {"calibration": feeds("cal"), "heldout": feeds("held")}


def _stages(
    decoder: Path, threads: int, profile: str | None = None, simplify: bool = True
) -> Callable[..., Any]:
    """The decoder as the engine runs it (one session per stage; `simplify=False`: as it ran
    before its QDQ graph was simplified, `AS_BEFORE`): feeds → audio."""
    import onnx
    import onnxruntime as ort

    from engine.synth.decoder_split import G_NAME, STAGE_IN, Z_NAME, split_decoder_stages
    from engine.synth.onnx_backend import session_options

    sessions = []
    for k, stage in enumerate(split_decoder_stages(onnx.load(str(decoder)), simplify)):
        opts = session_options(threads)
        if profile is not None:
            opts.enable_profiling = True
            opts.profile_file_prefix = f"{profile}-stage{k}"
        sessions.append(
            ort.InferenceSession(
                stage.SerializeToString(), opts, providers=["CPUExecutionProvider"]
            )
        )
    has_g = G_NAME in {i.name for i in sessions[0].get_inputs()}

    def run(feeds: dict[str, np.ndarray]) -> np.ndarray:
        first = {Z_NAME: feeds["z"]}
        if has_g:
            first[G_NAME] = feeds["g"]
        x = sessions[0].run(None, first)[0]
        for sess in sessions[1:]:
            x = sess.run(None, {STAGE_IN: x})[0]
        return np.asarray(x).reshape(-1)

    run.sessions = sessions  # type: ignore[attr-defined]
    return run


def _profile(
    decoder: Path,
    threads: int,
    feeds: dict[str, np.ndarray],
    scratch: Path,
    tag: str,
    simplify: bool = True,
):
    """Kernel time by operator (ONNX Runtime's profiler, runs after a warm-up), and the
    node count by operator after its fusions."""
    run = _stages(decoder, threads, str(scratch / tag), simplify)
    for _ in range(3):
        run(feeds)
    per_op: dict[str, float] = defaultdict(float)
    nodes: dict[str, set[str]] = defaultdict(set)
    for sess in run.sessions:  # type: ignore[attr-defined]
        trace = json.loads(Path(sess.end_profiling()).read_text())
        for ev in trace:
            if ev.get("cat") != "Node" or not ev.get("name", "").endswith("_kernel_time"):
                continue
            op = ev["args"].get("op_name", "?")
            per_op[op] += float(ev["dur"])
            nodes[op].add(ev["name"])
    total = sum(per_op.values())
    return {op: t / total for op, t in per_op.items()}, {op: len(n) for op, n in nodes.items()}


def _share(shares: dict[str, float], counts: dict[str, int], op: str) -> str:
    return f"{100 * shares.get(op, 0.0):.1f} % ({counts.get(op, 0)})"


def _fidelity(run: Callable[..., Any], ref: list[np.ndarray], held: list[dict], sr: int):
    from engine.int8.gate import SentenceFidelity, compare, judge

    rows = []
    for i, (feeds, want) in enumerate(zip(held, ref, strict=True)):
        got = np.clip(run(feeds), -1, 1)
        snr, logmel, mcd = compare(want, got, sr)
        rows.append(SentenceFidelity(str(i), "", len(want) / sr, snr, logmel, mcd))
    return judge("bench", rows)


def run(args: argparse.Namespace) -> Report:
    from engine.int8.quantize import quantize_decoder
    from engine.int8.recipe import QuantSettings

    report = Report("int8 decoder: today's recipe against the new one")
    files, synth, bert = _voice(args.quick)
    data = _latents(files, synth, bert, args.quick, 2 if args.quick else args.heldout)
    fp32 = synth.fp32_decoder_path
    sr = synth.sample_rate
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    base = names[0]
    del bert
    gc.collect()
    report.data["settings"] = {}
    with tempfile.TemporaryDirectory(prefix="int8-decoder-", dir=CACHE) as tmp:
        scratch = Path(tmp)
        graphs: dict[str, Path] = {}
        for name in names:
            settings = dataclasses.replace(QuantSettings(), **VARIANTS[name])
            report.data["settings"][name] = settings.to_dict()
            t0 = time.perf_counter()
            graphs[name] = scratch / f"{name}.onnx"
            quantize_decoder(fp32, graphs[name], data["calibration"], settings)
            log(f"{name}: quantized in {time.perf_counter() - t0:.0f} s")
        rng = np.random.default_rng(7)
        first = data["heldout"][0]
        feeds = {"z": rng.standard_normal((1, first["z"].shape[1], args.frames)).astype(np.float32)}
        if "g" in first:
            feeds["g"] = first["g"]

        # 1. kernel-time shares by operator
        shares, counts = {}, {}
        for name, path in graphs.items():
            shares[name], counts[name] = _profile(
                path, args.threads, feeds, scratch, name, name not in AS_BEFORE
            )
        ops = sorted(
            {op for s in shares.values() for op in s},
            key=lambda o: -max(s.get(o, 0.0) for s in shares.values()),
        )
        report.note(
            f"Kernel time by operator (ONNX Runtime profiler, after its fusions; {args.frames} "
            f"frames, {args.threads} threads; share %, nodes):"
        )
        report.table(
            ["operator", *names],
            [[op, *(_share(shares[n], counts[n], op) for n in names)] for op in ops],
            "l" + "r" * len(names),
        )
        int8_conv = {n: shares[n].get("QLinearConv", 0.0) for n in names}
        report.note(
            "int8 convolutions (QLinearConv) share of kernel time: "
            + ", ".join(f"{n} {100 * v:.1f} %" for n, v in int8_conv.items())
        )
        report.data["shares"] = shares
        report.data["counts"] = counts

        # 2. decoder time, alternating rounds
        runs = {
            name: _stages(path, args.threads, simplify=name not in AS_BEFORE)
            for name, path in graphs.items()
        }
        runs["fp32"] = _stages(fp32, args.threads)

        def timing(fn: Callable[..., Any]) -> Callable[[], float]:
            def once() -> float:
                t = time.perf_counter()
                fn(feeds)
                return time.perf_counter() - t

            return once

        reps = 1 if args.quick else args.reps
        rows = []
        for busy in (False,) if args.no_busy or args.quick else (False, True):
            with busy_core(busy):
                for fn in runs.values():
                    fn(feeds)  # warm-up
                rounds = alternate({n: timing(fn) for n, fn in runs.items()}, reps)
            for name, times in rounds.items():
                ratio = median(t / b for t, b in zip(times, rounds[base], strict=True))
                vs_fp32 = median(t / b for t, b in zip(times, rounds["fp32"], strict=True))
                rows.append(
                    [
                        "one core busy" if busy else "idle",
                        name,
                        f"{median(times):.3f}",
                        f"{ratio:.2f}",
                        f"{vs_fp32:.2f}",
                    ]
                )
            report.data.setdefault("rounds", []).append({"busy": busy, "rounds": rounds})
        report.note(f"Decoder time, {args.frames} frames, medians of {reps} alternating rounds:")
        report.table(["load", "decoder", "s", f"/ {base}", "/ fp32"], rows, "llrrr")

        # 3. fidelity against the fp32 decoder
        ref = [np.clip(runs["fp32"](f), -1, 1) for f in data["heldout"]]
        fid_rows = []
        for name in graphs:
            rep = _fidelity(runs[name], ref, data["heldout"], sr)
            fid_rows.append(
                [
                    name,
                    f"{rep.snr_db_min:.1f}",
                    f"{rep.logmel_db_mean:.2f}",
                    f"{rep.mcd_db_mean:.2f}",
                    "passes" if rep.passed else "FAILS: " + "; ".join(rep.reasons),
                ]
            )
            report.data.setdefault("fidelity", {})[name] = {
                "snr_db_min": rep.snr_db_min,
                "logmel_db_mean": rep.logmel_db_mean,
                "mcd_db_mean": rep.mcd_db_mean,
                "passed": rep.passed,
            }
        th = rep.thresholds
        report.note(
            f"Fidelity against the fp32 decoder, {len(ref)} held-out sentences (decoder only; "
            f"thresholds: SNR ≥ {th.min_snr_db:g} dB, log-mel ≤ {th.max_logmel_db:g} dB, "
            f"MCD ≤ {th.max_mcd_db:g} dB):"
        )
        report.table(["decoder", "SNR min dB", "log-mel dB", "MCD dB", "gate"], fid_rows, "lrrrl")
        del runs
    return report


if __name__ == "__main__":  # python -m benchmarks.engine.int8_decoder [--quick] [options]
    import sys

    from benchmarks.lib import cli

    sys.exit(cli.main(__spec__.name, __doc__ or "", {"run": __spec__.name}, ["run", *sys.argv[1:]]))
