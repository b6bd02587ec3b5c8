"""Candidates timed interleaved, in short slices on the same inputs, compared as ratios.

`precision="auto"` asks which way to run a voice is fastest on this machine. A server
measures while the machine does other things (Home Assistant on the same Pi, other
containers, a request now and then), so a figure taken as "the reference for a while, then
the candidate for a while" says as much about the load as about the runtimes: measured on a
busy 2-core x86, a full fp32 reference run first took 70 s of a 30-s budget and int8 was
never timed. Here every round times one slice of each candidate back to back on the same
input (one timing sentence at one length), the order rotated round by round; each
candidate's figure is the **median of its paired ratios** (its slice / the reference's slice
of the same round). A burst of load that hits one slice of a pair spoils that pair alone,
and a load that lasts slows both sides of every pair alike.

How many slices, and why they are enough:

- at least `MIN_PAIRS` (6) pairs per candidate, both timing sentences at least three times:
  the median of six ratios still lies between unspoilt pairs when two are spoilt;
- a candidate is *settled* once it has them and either its spread (`Slices.spread`, the
  interquartile range of its ratios over their median) is at most `SETTLED_SPREAD` (10 %),
  or its whole interquartile range lies on one side of 1.0 (faster or slower either way);
  an unsettled one gets more rounds, up to `MAX_PAIRS`, while the budget lasts;
- a candidate whose first `SLOWER_PAIRS` pairs have a median over `SLOWER_CUTOFF` is
  clearly slower: it cannot be chosen, so it is not timed further.

A candidate left with fewer than `MIN_PAIRS` pairs when the budget is spent has no figure
(`Slices.enough` is False): the measurement is then incomplete, and an incomplete
measurement decides nothing (`engine.int8.measure`).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

__all__ = [
    "MAX_PAIRS",
    "MIN_PAIRS",
    "SETTLED_SPREAD",
    "SLOWER_CUTOFF",
    "Slices",
    "interleave",
    "load_per_cpu",
    "rss_mb",
]

K = TypeVar("K", bound=Hashable)

MIN_PAIRS = 6
"""Paired slices a candidate needs for a figure (see the module doc)."""
MAX_PAIRS = 24
"""Rounds at most: an unsettled candidate is not timed past this."""
SETTLED_SPREAD = 0.10
"""A candidate whose ratios' interquartile range is at most this share of their median
needs no more rounds."""
SLOWER_CUTOFF = 1.5
"""A candidate whose first `SLOWER_PAIRS` pairs have a median ratio over this is clearly
slower: not timed further (it cannot be chosen)."""
SLOWER_PAIRS = 2
RETRIES = 3
"""A round overlapped by a request is taken again at most this many times in a row."""


class Sliceable(Protocol):
    """What a timing input does: run one slice of a runner (`round` picks the sentence and
    its length) and say how long it took; `busy` whether a request overlapped it."""

    def slice(self, runner: object, round_: int) -> float: ...

    def busy(self) -> bool: ...

    def checkpoint(self) -> None: ...


@dataclass
class Slices:
    """One candidate's timed slices, each beside the reference's of the same round."""

    seconds: list[float] = field(default_factory=list)
    reference: list[float] = field(default_factory=list)
    rss_steps_mb: list[float] = field(default_factory=list)
    """Resident memory added across each of its slices (MB; empty off Linux)."""

    @property
    def pairs(self) -> int:
        return min(len(self.seconds), len(self.reference))

    def ratios(self) -> list[float]:
        return [c / r for c, r in zip(self.seconds, self.reference) if r > 0]

    def ratio(self) -> float | None:
        """The median paired ratio (None before the first pair)."""
        ratios = self.ratios()
        return float(statistics.median(ratios)) if ratios else None

    def quartiles(self) -> tuple[float, float] | None:
        ratios = sorted(self.ratios())
        if len(ratios) < 2:
            return None
        q = statistics.quantiles(ratios, n=4, method="inclusive")
        return q[0], q[2]

    def spread(self) -> float | None:
        """The interquartile range of the ratios over their median (None under 2 pairs)."""
        quartiles, ratio = self.quartiles(), self.ratio()
        if quartiles is None or not ratio:
            return None
        return (quartiles[1] - quartiles[0]) / ratio

    def clearly_slower(self) -> bool:
        ratio = self.ratio()
        return self.pairs >= SLOWER_PAIRS and ratio is not None and ratio > SLOWER_CUTOFF

    def settled(self) -> bool:
        """Enough pairs, and more would not change what they say (see the module doc)."""
        if self.clearly_slower() or self.pairs >= MAX_PAIRS:
            return True
        if self.pairs < MIN_PAIRS:
            return False
        quartiles, spread = self.quartiles(), self.spread()
        assert quartiles is not None and spread is not None
        return spread <= SETTLED_SPREAD or quartiles[1] < 1.0 or quartiles[0] > 1.0

    def enough(self) -> bool:
        """Whether its figure may decide (`MIN_PAIRS` pairs, or clearly slower)."""
        return self.pairs >= MIN_PAIRS or self.clearly_slower()


def rss_mb() -> float | None:
    """This process's resident memory (MB; Linux), else None."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return None


def load_per_cpu(cpus: int) -> float | None:
    """The 1-minute load average over `cpus` (None where the OS gives none)."""
    try:
        return round(os.getloadavg()[0] / max(1, cpus), 2)
    except (AttributeError, OSError):
        return None


def _timed(timing: Sliceable, runner: object, round_: int) -> tuple[float, float | None]:
    """One slice: its seconds and the resident memory it added (None off Linux)."""
    before = rss_mb()
    took = timing.slice(runner, round_)
    after = rss_mb()
    return took, (after - before if before is not None and after is not None else None)


def interleave(
    reference: object,
    runners: Mapping[K, object],
    timing: Sliceable,
    *,
    rounds: Sequence[int],
    out_of_time: Callable[[], bool],
) -> dict[K, Slices]:
    """Time `runners` (by key) against `reference`, round by round (see the module doc):
    each round one slice of the reference and of every candidate still unsettled, in an
    order rotated by the round, on the same input. `rounds` are the round numbers handed to
    `timing.slice` (each picks an input of its own); before them every runner runs once at
    round 0, not counted (first-call costs). `out_of_time()` is asked before each round. A
    round a request overlapped does not count, at most `RETRIES` times in a row."""
    slices: dict[K, Slices] = {key: Slices() for key in runners}
    for runner in (reference, *runners.values()):
        timing.checkpoint()
        timing.slice(runner, 0)
    retries = 0
    for round_ in rounds:
        active = [key for key, s in slices.items() if not s.settled()]
        if not active or out_of_time():
            break
        order: list[K | None] = [None, *active]
        shift = round_ % len(order)
        took: dict[K | None, tuple[float, float | None]] = {}
        overlapped = False
        for key in order[shift:] + order[:shift]:
            timing.checkpoint()
            took[key] = _timed(timing, reference if key is None else runners[key], round_)
            overlapped = overlapped or timing.busy()
        if overlapped and retries < RETRIES:
            retries += 1
            continue
        retries = 0
        for key in active:
            seconds, grown = took[key]
            slices[key].seconds.append(seconds)
            slices[key].reference.append(took[None][0])
            if grown is not None:
                slices[key].rss_steps_mb.append(grown)
    return slices
