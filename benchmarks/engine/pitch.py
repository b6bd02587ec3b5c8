"""What a pitched request costs: `pitch_scale=1.1` (WORLD on every sentence,
`engine.neural.world`) against the same request unpitched, on the full-size voice (random
weights of the real shapes), idle and with one core busy.

Per text, `--reps` alternating rounds of `generate` and `stream`, each plain (the baseline)
and pitched: time to first audio, wall and process CPU time, each as a ratio to the plain
call of its kind in the same round. A pitched stream decodes each sentence whole before
WORLD runs on it, so its first audio waits for its first sentence. Also WORLD alone
(Harvest, CheapTrick, D4C, synthesis) per second of audio, on the audio of the same text.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.engine.common import Variants, add_rounds, load_speaker, ratio_tables
from benchmarks.lib.report import Report
from benchmarks.lib.stats import busy_core, median, timed
from benchmarks.lib.voices import OPTIONS, TEXTS

RESULT = "pitch"
PITCH = 1.1


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--texts", default="short,medium", help="comma-separated keys of TEXTS")
    add_rounds(p)


def _variants(speaker, text: str, call: str) -> Variants:
    options = dict(OPTIONS)
    if call == "generate":
        return {
            "plain": lambda: timed(lambda: [speaker.generate(text, **options)]),
            f"pitch {PITCH}": lambda: timed(
                lambda: [speaker.generate(text, pitch_scale=PITCH, **options)]
            ),
        }
    return {
        "plain": lambda: timed(lambda: speaker.stream(text, guard=False, **options)),
        f"pitch {PITCH}": lambda: timed(
            lambda: speaker.stream(text, guard=False, pitch_scale=PITCH, **options)
        ),
    }


def _world_per_second(speaker, text: str, reps: int, busy: bool) -> float:
    """Seconds WORLD takes per second of audio (median of `reps`), on this text's audio."""
    from engine.neural.world import reshape_pitch

    audio = speaker.generate(text, **OPTIONS)
    x = audio.data.astype(np.float32) / 32768.0
    times = []
    with busy_core(busy):
        for _ in range(reps + 1):
            t0 = time.perf_counter()
            reshape_pitch(x, audio.sr, PITCH, 1.0)
            times.append(time.perf_counter() - t0)
    return median(times[1:]) / audio.duration


def run(args: argparse.Namespace) -> Report:
    speaker = load_speaker(args.quick)
    keys = ["short"] if args.quick else [t.strip() for t in args.texts.split(",") if t.strip()]
    report = Report(f"A pitched request (pitch_scale={PITCH}, WORLD) against an unpitched one")
    report.note(f"Voice: {speaker.name}, {speaker.runs}; options {OPTIONS}.")
    groups = {
        f"{k} {call}": _variants(speaker, TEXTS[k], call)
        for k in keys
        for call in ("generate", "stream")
    }
    ratio_tables(report, args, groups, "plain", "text, call")
    reps = 1 if args.quick else args.reps
    rows = []
    for busy in (False,) if args.no_busy or args.quick else (False, True):
        rtf = _world_per_second(speaker, TEXTS[keys[-1]], reps, busy)
        rows.append(("one core busy" if busy else "idle", f"{rtf:.3f}"))
    report.table(["machine", "WORLD s per s of audio"], rows)
    return report
