"""The rewrite pass on the Home Assistant phrase set, against `analyze` in the same run.

Per sentence of tests/data/readings_ha.tsv, medians of `--repeats` alternating passes:
`analyze` (the baseline: the reference frontend the rewrite pass runs before); `rewrite,
warm` (what a running server pays once a word has been seen: kanalizer's readings are
cached per process, table words never reach it); `rewrite, cold` (that cache emptied before
each pass: a word heard for the first time); per word the set sends to kanalizer, one
uncached call. `--busy` keeps one other core busy.
"""

from __future__ import annotations

import argparse

from benchmarks.engine.common import walls
from benchmarks.lib.report import Report
from benchmarks.lib.stats import busy_core

RESULT = None
BASELINE = "analyze (baseline)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--busy", action="store_true", help="keep one other core busy")


def run(args: argparse.Namespace) -> Report:
    from engine.text import analyze, rewrite
    from engine.text.english import kanalizer_reading
    from tests.helpers.readings import load_phrases

    texts = [p.text for p in load_phrases()]
    texts, repeats = (texts[:20], 1) if args.quick else (texts, args.repeats)
    n = len(texts)

    def warm() -> None:
        for t in texts:
            rewrite(t)

    def cold() -> None:
        kanalizer_reading.cache_clear()
        warm()

    with busy_core(args.busy):
        cold()
        words = kanalizer_reading.cache_info().currsize
        calls = {BASELINE: lambda: [analyze(t) for t in texts]}
        per = walls({**calls, "rewrite, warm": warm, "rewrite, cold": cold}, repeats)
    per = {name: s / n for name, s in per.items()}
    uncached = (per["rewrite, cold"] - per["rewrite, warm"]) * n / max(words, 1)
    per["kanalizer per uncached word"] = uncached
    report = Report("Rewrite pass, time per sentence" + (" (one other core busy)" * args.busy))
    report.note(
        f"{n} sentences, {sum(map(len, texts)) / n:.1f} characters on average, median of "
        f"{repeats}; {words} distinct words go to kanalizer."
    )
    report.table(
        ["stage", "ms / sentence", "× analyze"],
        [(name, f"{s * 1e3:.3f}", f"{s / per[BASELINE]:.2f}") for name, s in per.items()],
    )
    report.data["seconds"] = per
    return report
