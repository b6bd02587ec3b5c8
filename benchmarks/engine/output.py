"""The output stage (`engine.output`): what it costs and what it guarantees, in one run.

On the embedded voice (48 kHz), the first six of `embedded`'s 12 sentences: the limiter's
peak (int16) at +6, +12 and +20 dB against full scale and the -1 dBFS ceiling, and the RMS's
real rise; per output rate, the resampler streamed (the voice's pieces) against one-shot (the
whole audio) in LSB, its time alone and with gain + limiter over the synthesis time of the
same audio (the baseline, this run), and the bytes against the voice rate's. `--busy`: one
core busy.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from benchmarks.engine.common import walls
from benchmarks.engine.embedded import TEXTS
from benchmarks.lib.report import Report
from benchmarks.lib.stats import busy_core

RESULT = None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--busy", action="store_true", help="keep one core busy meanwhile")


def _shape(options: Any, rate: int, pieces: list[np.ndarray]) -> np.ndarray:
    from engine.output import OutputStage

    stage = OutputStage(options, rate)
    out = [stage.push(p, final=True) for p in pieces]
    return np.concatenate([*out, stage.finish()])


def run(args: argparse.Namespace) -> Report:
    from engine import EMBEDDED_VOICE_NAME, TTS, OutputOptions
    from engine.output import OUTPUT_RATES
    from engine.text import sentences_of

    repeat = 1 if args.quick else args.repeat
    speaker = TTS().load(EMBEDDED_VOICE_NAME).prepare().speakers[EMBEDDED_VOICE_NAME]
    voice, rate = speaker.voice, speaker.sample_rate
    sentences = sentences_of(TEXTS["12 sentences"], rewrite=speaker.rewrite)[:6]
    opts = speaker.options()
    report = Report("Output stage" + (", one core busy" if args.busy else ""))
    with busy_core(args.busy):
        pieces = [p.samples for p in voice.render(sentences, opts)]
        seconds = sum(p.size for p in pieces) / rate
        stages: dict[str, Callable[[], object]] = {
            "synthesis": lambda: list(voice.render(sentences, opts))
        }
        shaped = {}
        for r in OUTPUT_RATES:
            shaped[r] = OutputOptions(sample_rate=r, volume=2.0, lead_silence=0.3)
            stages[f"resample {r}"] = partial(_shape, OutputOptions(sample_rate=r), rate, pieces)
            stages[f"shaped {r}"] = partial(_shape, shaped[r], rate, pieces)
        times = walls(stages, repeat)
    synth = times["synthesis"]
    report.note(
        f"Embedded voice, {seconds:.1f} s of audio at {rate} Hz; baseline: synthesis "
        f"{synth:.3f} s = {synth / seconds * 1000:.1f} ms per second of audio."
    )
    plain = np.mean(np.square(_shape(OutputOptions(), rate, pieces), dtype=np.float64))
    limits = []
    for db in (6, 12, 20):
        out = _shape(OutputOptions(volume=10 ** (db / 20)), rate, pieces)
        peak = int(np.abs(out.astype(np.int32)).max())
        rise = 10 * math.log10(np.mean(np.square(out, dtype=np.float64)) / plain)  # RMS
        limits.append((f"+{db} dB", peak, f"{peak / 32767:.3f}", f"+{rise:.2f} dB"))
    report.table(["gain", "peak (int16)", "of full scale", "RMS rise"], limits)
    report.note("The ceiling is -1 dBFS = 29204.")
    rows = []
    for r in OUTPUT_RATES:
        streamed = _shape(shaped[r], rate, pieces).astype(np.int32)
        diff = int(np.abs(streamed - _shape(shaped[r], rate, [np.concatenate(pieces)])).max())
        cost = [times[f"{kind} {r}"] / synth for kind in ("resample", "shaped")]
        rows.append((r, diff, *(f"{c:.4f}" for c in cost), f"{r / rate:.3f}"))
    head = ["output Hz", "streamed vs one-shot (LSB)", "resample / synthesis"]
    head += ["with gain + limiter / synthesis", "bytes / voice rate's"]
    report.table(head, rows)
    return report
