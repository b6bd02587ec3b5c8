"""Benchmark the rewrite pass on the Home-Assistant phrase set, against analyze() in the same run.

Per sentence of tests/data/readings_ha.tsv (the ``text`` column), median of ``--repeats``:

- ``analyze`` (baseline: the reference frontend the rewrite pass runs before);
- ``rewrite, warm``: what a running server pays once a word has been seen (kanalizer's
  readings are cached per process; table words never reach kanalizer);
- ``rewrite, cold``: with kanalizer's cache emptied before every pass, so every word that is
  not in the table is sent to the kanalizer model again (the first time a word is heard);
- ``kanalizer per word``: one uncached kanalizer call, over the words the set sends to it.

    python benchmarks/bench_rewrite.py [--repeats 7] [--busy]

``--busy`` keeps one other core busy with a spinning process while measuring.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _spin() -> None:  # pragma: no cover - a load generator
    while True:
        pass


def _median(
    fn: Callable[[], object], repeats: int, before: Callable[[], object] | None = None
) -> float:
    if before:
        before()
    fn()  # warm-up
    runs = []
    for _ in range(repeats):
        if before:
            before()
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--busy", action="store_true", help="keep one other core busy")
    args = parser.parse_args()

    from readings_score import load_phrases

    from engine.text import analyze, rewrite
    from engine.text.english import kanalizer_reading

    texts = [p.text for p in load_phrases()]
    n = len(texts)
    busy = None
    if args.busy:
        busy = multiprocessing.Process(target=_spin, daemon=True)
        busy.start()
    try:
        kanalizer_reading.cache_clear()
        for t in texts:
            rewrite(t)
        words = kanalizer_reading.cache_info().currsize
        t_analyze = _median(lambda: [analyze(t) for t in texts], args.repeats) / n
        t_warm = _median(lambda: [rewrite(t) for t in texts], args.repeats) / n
        t_cold = (
            _median(
                lambda: [rewrite(t) for t in texts], args.repeats, kanalizer_reading.cache_clear
            )
            / n
        )
    finally:
        if busy is not None:
            busy.terminate()
            busy.join()
    per_word = (t_cold - t_warm) * n / max(words, 1)
    mean_chars = sum(map(len, texts)) / n
    load = " (one other core busy)" if args.busy else ""
    print(
        f"rewrite benchmark{load}: {n} sentences, {mean_chars:.1f} characters on average, "
        f"median of {args.repeats}; {words} distinct words go to kanalizer"
    )
    print(f"{'stage':34} {'ms/sentence':>12} {'× analyze':>10}")
    for name, sec in (
        ("analyze (baseline)", t_analyze),
        ("rewrite, warm", t_warm),
        ("rewrite, cold", t_cold),
    ):
        print(f"{name:34} {sec * 1e3:12.3f} {sec / t_analyze:10.2f}")
    print(f"{'kanalizer per uncached word':34} {per_word * 1e3:12.3f} {per_word / t_analyze:10.2f}")


if __name__ == "__main__":
    main()
