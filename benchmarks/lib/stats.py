"""Medians, alternating rounds and ratios against a baseline of the same round.

rows = alternate({"generate": gen, "stream": stream}, reps=3)   # name -> one dict per round
medians(rows["stream"])                 # {"ttfa": ..., "wall": ...}
ratios(rows["stream"], rows["generate"])  # median of the per-round ratios
with busy_core(): ...                   # one core kept busy by a spinning process
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
Figures = dict[str, float]


def median(values: Iterable[float]) -> float:
    """The median (NaN for no values)."""
    values = list(values)
    return float(statistics.median(values)) if values else float("nan")


def alternate(variants: Mapping[str, Callable[[], T]], reps: int) -> dict[str, list[T]]:
    """Every variant once per round, `reps` rounds, the order reversed every other round, so
    a change in the machine's load falls on all of them alike."""
    names = list(variants)
    out: dict[str, list[T]] = {n: [] for n in names}
    for rep in range(reps):
        for name in names if rep % 2 == 0 else names[::-1]:
            out[name].append(variants[name]())
    return out


def medians(rows: Sequence[Mapping[str, float]]) -> Figures:
    """Per figure, the median over rounds."""
    return {k: median(r[k] for r in rows) for k in rows[0]} if rows else {}


def ratios(rows: Sequence[Mapping[str, float]], base: Sequence[Mapping[str, float]]) -> Figures:
    """Per figure, the median of this variant's figure over the baseline's, round by round."""
    if not rows:
        return {}
    return {
        k: median(r[k] / b[k] for r, b in zip(rows, base, strict=True) if b[k]) for k in rows[0]
    }


def timed(run: Callable[[], Iterable[Any]]) -> Figures:
    """Consume `run()`: time to its first item (`ttfa`), wall and process CPU time."""
    c0, t0 = time.process_time(), time.perf_counter()
    first = None
    for _ in run():
        if first is None:
            first = time.perf_counter() - t0
    wall = time.perf_counter() - t0
    return {"ttfa": wall if first is None else first, "wall": wall, "cpu": time.process_time() - c0}


@contextmanager
def busy_core(on: bool = True) -> Iterator[None]:
    """One core kept busy by a spinning process meanwhile (nothing when `on` is False)."""
    if not on:
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        yield
    finally:
        spinner.kill()
        spinner.wait()
