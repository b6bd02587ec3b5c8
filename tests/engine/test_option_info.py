"""`engine.option_info`: an option's help and range beside its type and default."""

from __future__ import annotations

import dataclasses
import math

import pytest

from engine.option_info import Bounds, option, option_info


@pytest.mark.parametrize(
    ("bounds", "inside", "outside", "said"),
    [
        (Bounds(0.0, low_open=True), [1e-9, 5.0], [0.0, -1.0, math.inf], "> 0"),
        (Bounds(0.0), [0.0, 3.0], [-1e-9, math.nan], ">= 0"),
        (Bounds(0.0, 1.0), [0.0, 1.0, 0.5], [1.0001, -0.1], "within 0..1"),
        (Bounds(high=2.0), [-5.0, 2.0], [2.5], "<= 2"),
        (Bounds(), [-1e9, 0.0], [math.nan], "a finite number"),
    ],
)
def test_bounds(bounds: Bounds, inside: list[float], outside: list[float], said: str) -> None:
    assert all(bounds.holds(v) for v in inside)
    assert not any(bounds.holds(v) for v in outside)
    assert bounds.describe() == said


def test_option_is_a_field_with_its_info_and_default() -> None:
    @dataclasses.dataclass(frozen=True)
    class Opts:
        plain: int = 3
        rate: float = option(1.0, "a rate", low=0.0, low_open=True, metavar="X")

    assert Opts().rate == 1.0 and Opts(rate=2.0).rate == 2.0
    plain, rate = dataclasses.fields(Opts)
    assert option_info(plain) is None
    info = option_info(rate)
    assert info is not None and info.help == "a rate" and info.metavar == "X"
    assert info.bounds == Bounds(0.0, low_open=True)
    assert not info.bounds.holds(0.0) and info.bounds.holds(2.0)
