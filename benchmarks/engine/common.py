"""What the engine suite's parts share: timing calls, the voice they load, the ratio tables."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from benchmarks.lib import CACHE
from benchmarks.lib.report import Report
from benchmarks.lib.stats import Figures, alternate, busy_core, median, medians, ratios, timed
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, fullsize_root, small_root

if TYPE_CHECKING:
    from engine import EngineOptions, Speaker

FIGURES = ("ttfa", "wall", "cpu")
Variants = Mapping[str, Callable[[], Figures]]


def walls(calls: Mapping[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Per callable, the median wall time of one call over `repeats` alternating rounds
    after a warm-up round."""

    def wall(fn: Callable[[], object]) -> Callable[[], float]:
        return lambda: timed(lambda: [fn()])["wall"]

    rounds = alternate({name: wall(fn) for name, fn in calls.items()}, repeats + 1)
    return {name: median(times[1:]) for name, times in rounds.items()}


def load_speaker(quick: bool, options: EngineOptions | None = None) -> Speaker:
    """The full-size random-weight voice (`--quick`: the tests' small one), prepared."""
    from engine import TTS

    root, name = (small_root(), SMALL_VOICE) if quick else (fullsize_root(), VOICE_NAME)
    tts = TTS(bert_source=str(root), cache_dir=CACHE / "ours-cache", options=options)
    return tts.load(name, source=str(root)).prepare().speakers[name]


def add_rounds(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--no-busy", action="store_true", help="skip the one-core-busy rounds")


def ratio_tables(
    report: Report, args: argparse.Namespace, groups: Mapping[str, Variants], base: str, *lead: str
) -> None:
    """Idle and (unless `--no-busy`) with one core busy, `--reps` alternating rounds per
    group after a warm-up; a table with a row per group (a `lead` column when named) and
    variant: medians (s) and medians of the per-round ratios to `base`."""
    reps = 1 if args.quick else args.reps
    for busy in (False,) if args.no_busy or args.quick else (False, True):
        with busy_core(busy):
            for variant in (v for variants in groups.values() for v in variants.values()):
                variant()  # warm-up: every shape once
            runs = {group: alternate(variants, reps) for group, variants in groups.items()}
        report.data.setdefault("rounds", []).append({"busy": busy, "runs": runs})
        rows = []
        for group, by_name in runs.items():
            for name, rounds in by_name.items():
                m, r = medians(rounds), ratios(rounds, by_name[base])
                cells = [f"{m[k]:.2f}" for k in FIGURES] + [f"{r[k]:.2f}" for k in FIGURES]
                rows.append([*([group] if lead else []), name, *cells])
        head = [*lead, "variant", "TTFA s", "wall s", "CPU s"]
        head += [f"{k} / {base.split()[0]}" for k in ("TTFA", "wall", "CPU")]
        report.note(f"{'one core busy' if busy else 'idle'}, medians of {reps} rounds:")
        report.table(head, rows, "l" * (len(lead) + 1) + "r" * 6)
