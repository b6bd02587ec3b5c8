"""Interleaved slices and paired ratios (`engine.int8.timing`) on a simulated machine.

The runners do no work: each slice's time is what a simulated machine says it took (a
runner's own cost per sentence, times the load of the moment). That makes the rule's
behaviour under load exact and repeatable; the real runtimes are timed through it in
`test_measure.py` and in `benchmarks/engine/auto_load.py`.
"""

from __future__ import annotations

import itertools

import pytest

from engine.int8.timing import (
    MAX_PAIRS,
    MIN_PAIRS,
    SETTLED_SPREAD,
    Slices,
    interleave,
)


class _Machine:
    """Slices timed on a machine whose load changes slice by slice (`loads`, cycled):
    runner `cost[name]` seconds per unit of sentence length, sentences of length 2 and 1
    by round."""

    def __init__(self, cost: dict[str, float], loads: list[float]) -> None:
        self.cost = cost
        self.loads = itertools.cycle(loads)
        self.log: list[tuple[str, int]] = []
        self.busy_rounds: set[int] = set()
        self._round = 0

    def slice(self, runner: object, round_: int) -> float:
        self._round = round_
        self.log.append((str(runner), round_))
        length = 2.0 if round_ % 2 == 0 else 1.0
        return self.cost[str(runner)] * length * next(self.loads)

    def busy(self) -> bool:
        return self._round in self.busy_rounds

    def checkpoint(self) -> None:
        pass


def test_a_load_that_comes_and_goes_spoils_pairs_not_the_figure() -> None:
    """int8 at 0.4x fp32's cost on a machine whose load jumps to 6x for whole stretches
    (a soak of requests, another process): timed one after the other, as the old
    measurement did (the reference's runs first), the load decides the figure; interleaved,
    the median paired ratio is int8's own."""
    loads = [1.0, 1.0, 6.0, 6.0, 6.0, 1.0, 1.0, 1.0, 6.0, 1.0, 1.0]
    machine = _Machine({"fp32": 1.0, "int8": 0.4}, loads)
    timed = interleave(
        "fp32", {"int8": "int8"}, machine, rounds=range(1, 40), out_of_time=lambda: False
    )
    int8 = timed["int8"]
    assert int8.enough() and int8.settled()
    assert int8.ratio() == pytest.approx(0.4, rel=0.01)
    assert MIN_PAIRS <= int8.pairs <= MAX_PAIRS
    # the same machine, the reference's runs first: the figure is the load's
    sequential = _Machine({"fp32": 1.0, "int8": 0.4}, loads)
    ref = [sequential.slice("fp32", r) for r in range(1, 7)]
    cand = [sequential.slice("int8", r) for r in range(1, 7)]
    assert sum(cand) / sum(ref) < 0.25  # the load hit the reference: int8 "2x faster" than it is


def test_the_order_rotates_and_every_runner_warms_up_first() -> None:
    machine = _Machine({"fp32": 1.0, "a": 0.5, "b": 1.2}, [1.0])
    interleave("fp32", {"a": "a", "b": "b"}, machine, rounds=range(1, 4), out_of_time=lambda: False)
    assert machine.log[:3] == [("fp32", 0), ("a", 0), ("b", 0)]  # warm-up, not counted
    rounds = [[name for name, r in machine.log[3:] if r == k] for k in (1, 2, 3)]
    assert rounds[0] == ["a", "b", "fp32"]  # rotated by one each round
    assert rounds[1] == ["b", "fp32", "a"]
    assert rounds[2] == ["fp32", "a", "b"]


def test_a_clearly_slower_candidate_stops_early_and_a_settled_one_stops_at_six() -> None:
    machine = _Machine({"fp32": 1.0, "fast": 0.5, "slow": 2.0}, [1.0])
    timed = interleave(
        "fp32",
        {"fast": "fast", "slow": "slow"},
        machine,
        rounds=range(1, 60),
        out_of_time=lambda: False,
    )
    assert timed["slow"].pairs == 2 and timed["slow"].clearly_slower() and timed["slow"].enough()
    assert timed["fast"].pairs == MIN_PAIRS  # spread 0: settled as soon as it may be
    assert timed["fast"].spread() == 0.0


def test_near_one_and_noisy_it_takes_more_rounds_up_to_the_cap() -> None:
    """Ratios straddling 1.0 with a wide spread: more pairs, at most `MAX_PAIRS`."""

    class Noisy(_Machine):
        swing = itertools.cycle([0.8, 1.25, 1.0])

        def slice(self, runner: object, round_: int) -> float:
            took = super().slice(runner, round_)
            return took * next(self.swing) if runner == "even" else took

    machine = Noisy({"fp32": 1.0, "even": 1.0}, [1.0])
    timed = interleave(
        "fp32", {"even": "even"}, machine, rounds=range(1, 200), out_of_time=lambda: False
    )
    even = timed["even"]
    spread, quartiles = even.spread(), even.quartiles()
    assert spread is not None and spread > SETTLED_SPREAD
    assert quartiles is not None and quartiles[0] < 1.0 < quartiles[1]
    assert even.pairs == MAX_PAIRS and even.enough()


def test_out_of_time_leaves_too_few_pairs_and_no_figure() -> None:
    machine = _Machine({"fp32": 1.0, "int8": 0.4}, [1.0])
    rounds_left = iter(range(3, -1, -1))
    timed = interleave(
        "fp32",
        {"int8": "int8"},
        machine,
        rounds=range(1, 40),
        out_of_time=lambda: next(rounds_left) == 0,
    )
    assert timed["int8"].pairs == 3 and not timed["int8"].enough()


def test_a_round_a_request_overlapped_does_not_count() -> None:
    machine = _Machine({"fp32": 1.0, "int8": 0.5}, [1.0])
    machine.busy_rounds = {2, 3}
    timed = interleave(
        "fp32", {"int8": "int8"}, machine, rounds=range(1, 40), out_of_time=lambda: False
    )
    counted = [r for name, r in machine.log if name == "int8" and r > 0]
    assert 2 in counted and 3 in counted  # timed ...
    assert timed["int8"].pairs == MIN_PAIRS
    assert len(counted) == MIN_PAIRS + 2  # ... but not counted


def test_slices_figures() -> None:
    s = Slices(seconds=[0.5, 0.4, 0.6, 0.5], reference=[1.0, 1.0, 1.0, 1.0])
    assert s.ratio() == pytest.approx(0.5)
    assert s.quartiles() == pytest.approx((0.475, 0.525))
    assert s.spread() == pytest.approx(0.1)
    assert not s.enough() and not s.settled()
    assert Slices().ratio() is None and Slices().spread() is None
