"""`precision="auto"` after `wyoming-hayakoe quantize`, its measurement taken idle and with
one core busy, against `precision="int8"` asked for (issue 48).

On the full-size random-weight voice (`--quick`: the tests' small one), in a cache of its
own under benchmarks/.cache/auto-load/:

1. `quantize_voice` as the command runs it (into the cache, measuring when owed): graphs
   made and measured, then the same again (graphs and measurement kept), both timed;
2. the measurement taken again (`MeasureWhen.AGAIN`, what `quantize --measure` does) with
   one core busy, then idle; after each, what it chose, whether it is complete, and the
   real-time factor of a `TTS` with default options (which reads that choice) against one
   with `precision="int8"`, `--reps` alternating rounds over the benchmark texts, idle.

Before issue 48, a measurement cut short by load stored fp32 as the choice (1.25x hayakoe's
real-time factor where int8 ran at 0.35x, measured on this machine): the ratio here was then
about 3.5.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.lib import CACHE
from benchmarks.lib.report import Report, log
from benchmarks.lib.stats import alternate, busy_core, median
from benchmarks.lib.texts import TEXTS
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, fullsize_root, small_root

if TYPE_CHECKING:
    from engine import Speaker

RESULT = "auto-load"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reps", type=int, default=5, help="alternating rounds of each comparison")
    p.add_argument("--fresh", action="store_true", help="start from an empty cache")


def _quantize(root: Path, name: str, cache: Path, quick: bool, measure: str) -> float:
    from engine.int8.recipe import CALIBRATION_FILE, HELDOUT_FILE, read_sentences
    from engine.neural.quantize import MeasureWhen, quantize_voice

    t0 = time.perf_counter()
    quantize_voice(
        name,
        str(root),
        None,
        bert_source=str(root),
        cache_dir=cache,
        calibration=read_sentences(CALIBRATION_FILE)[:4] if quick else None,
        heldout=read_sentences(HELDOUT_FILE)[:1] if quick else None,
        progress=lambda line: log(f"quantize: {line}"),
        measure=MeasureWhen(measure),
    )
    return time.perf_counter() - t0


def _speaker(root: Path, name: str, cache: Path, precision: str) -> Speaker:
    from engine import TTS, EngineOptions
    from engine.options import Precision

    options = EngineOptions(precision=Precision(precision), progress=False)
    tts = TTS(bert_source=str(root), cache_dir=cache, options=options)
    return tts.load(name, source=str(root)).prepare().speakers[name]


def _rtf(speaker: Speaker, texts: list[str]) -> float:
    """Seconds of compute per second of audio over `texts`."""
    t0 = time.perf_counter()
    audio = sum(speaker.generate(text).duration for text in texts)
    return (time.perf_counter() - t0) / audio


def _compare(root: Path, name: str, cache: Path, texts: list[str], reps: int) -> dict[str, object]:
    """Defaults (what the stored measurement chose) against int8 asked for, idle."""
    defaults, int8 = _speaker(root, name, cache, "auto"), _speaker(root, name, cache, "int8")
    for speaker in (defaults, int8):
        _rtf(speaker, texts[:1])  # warm-up
    rounds = alternate(
        {"auto": lambda: _rtf(defaults, texts), "int8": lambda: _rtf(int8, texts)}, reps
    )
    ratio = median([a / b for a, b in zip(rounds["auto"], rounds["int8"])])
    return {"runs": defaults.runs, "rounds": rounds, "ratio": ratio}


def run(args: argparse.Namespace) -> Report:
    from engine.int8.measure import SPEED_FILE, Measurement

    root, name = (small_root(), SMALL_VOICE) if args.quick else (fullsize_root(), VOICE_NAME)
    cache = CACHE / ("auto-load-quick" if args.quick else "auto-load")
    if args.fresh or args.quick:
        shutil.rmtree(cache, ignore_errors=True)
    texts = list(TEXTS.values())[: 1 if args.quick else 3]
    reps = 1 if args.quick else args.reps
    report = Report("precision auto after quantize, measured idle and with one core busy")
    first = _quantize(root, name, cache, args.quick, "owed")
    second = _quantize(root, name, cache, args.quick, "owed")
    report.table(
        ["quantize run", "seconds", "second / first"],
        [
            ["first (made and measured)", f"{first:.2f}", "1.00"],
            ["second (kept)", f"{second:.2f}", f"{second / first:.4f}"],
        ],
    )
    report.data["quantize_s"] = [first, second]
    rows = []
    for busy in (True, False):
        with busy_core(busy):
            _quantize(root, name, cache, args.quick, "again")
        [speed] = cache.glob(f"int8/*/{SPEED_FILE}")
        taken = Measurement.load(speed)
        got = _compare(root, name, cache, texts, reps)
        chosen = taken.chosen.label if taken.chosen is not None else "none (incomplete)"
        rows.append(
            [
                "one core busy" if busy else "idle",
                chosen,
                str(taken.complete).lower(),
                f"{taken.seconds:.1f}",
                got["runs"],
                f"{got['ratio']:.3f}",
            ]
        )
        report.data["busy" if busy else "idle"] = {"measurement": taken.to_dict(), **got}
    report.note(
        'Real-time factor of defaults (`precision="auto"`, reading the stored measurement) '
        f'over `precision="int8"`, medians of {reps} alternating rounds, idle; the weights '
        "are random (a trained voice's int8 fidelity differs, its speed does not):"
    )
    report.table(
        [
            "measurement taken",
            "chosen",
            "complete",
            "measured in s",
            "defaults run",
            "RTF auto / int8",
        ],
        rows,
        "llrrlr",
    )
    return report
