"""The rewrite pass on the Home Assistant phrase set, against `analyze` in the same run.

Per sentence of tests/data/readings_ha.tsv (the text column), median of ``--repeats``:
``analyze`` (the baseline: the reference frontend the rewrite pass runs before);
``rewrite, warm`` (what a running server pays once a word has been seen: kanalizer's
readings are cached per process, table words never reach it); ``rewrite, cold`` (kanalizer's
cache emptied before every pass: the first time a word is heard); and one uncached kanalizer
call per word the set sends to it. ``--busy`` keeps one other core busy meanwhile.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from benchmarks.lib.report import Report
from benchmarks.lib.stats import busy_core, median

RESULT = None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--busy", action="store_true", help="keep one other core busy")


def _median(fn: Callable[[], object], repeats: int, before: Callable[[], object]) -> float:
    before()
    fn()  # warm-up
    runs = []
    for _ in range(repeats):
        before()
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return median(runs)


def run(args: argparse.Namespace) -> Report:
    from engine.text import analyze, rewrite
    from engine.text.english import kanalizer_reading
    from tests.helpers.readings import load_phrases

    texts = [p.text for p in load_phrases()]
    texts, repeats = (texts[:20], 1) if args.quick else (texts, args.repeats)
    n = len(texts)
    with busy_core(args.busy):
        kanalizer_reading.cache_clear()
        for t in texts:
            rewrite(t)
        words = kanalizer_reading.cache_info().currsize

        def nothing() -> None:
            pass

        t_analyze = _median(lambda: [analyze(t) for t in texts], repeats, nothing) / n
        t_warm = _median(lambda: [rewrite(t) for t in texts], repeats, nothing) / n
        t_cold = _median(
            lambda: [rewrite(t) for t in texts], repeats, kanalizer_reading.cache_clear
        )
        t_cold /= n
    per_word = (t_cold - t_warm) * n / max(words, 1)
    report = Report("Rewrite pass, time per sentence" + (" (one other core busy)" * args.busy))
    report.note(
        f"{n} sentences, {sum(map(len, texts)) / n:.1f} characters on average, median of "
        f"{repeats}; {words} distinct words go to kanalizer."
    )
    rows = [("analyze (baseline)", t_analyze), ("rewrite, warm", t_warm)]
    rows += [("rewrite, cold", t_cold), ("kanalizer per uncached word", per_word)]
    report.table(
        ["stage", "ms / sentence", "× analyze"],
        [(name, f"{s * 1e3:.3f}", f"{s / t_analyze:.2f}") for name, s in rows],
    )
    report.data["seconds"] = dict(rows)
    return report
