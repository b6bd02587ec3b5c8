"""What a user-settable option of the engine's typed options says about itself.

A field of `SynthesisOptions` or `EngineOptions` that users set (a server flag, a preset key)
is declared with `option(default, help, ...)`: its help text and its allowed range live
beside its type and default, in one place. The server derives its flags, its preset keys
and the configuration reference from these fields (`wyoming_hayakoe.knobs`), and its
converters refuse a value out of range. Adding an option is one field plus its use.
"""

from __future__ import annotations

import math
from dataclasses import Field, dataclass, field
from typing import TypeVar

__all__ = ["Bounds", "OptionInfo", "option", "option_info"]

_T = TypeVar("_T")
_KEY = "option"


@dataclass(frozen=True)
class Bounds:
    """An allowed numeric range; None: unbounded on that side."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    """The low end excluded (``> low`` rather than ``>= low``)."""

    def holds(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or value <= self.high

    def describe(self) -> str:
        """``> 0``, ``>= 0``, ``0..1``: how a message states it."""
        if self.low is not None and self.high is not None and not self.low_open:
            return f"within {self.low:g}..{self.high:g}"
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"<= {self.high:g}")
        return " and ".join(parts) or "a finite number"


@dataclass(frozen=True)
class OptionInfo:
    """The help text and range of one option (a field's metadata)."""

    help: str
    """One line, as ``--help`` and the configuration reference show it."""
    bounds: Bounds = Bounds()
    metavar: str | None = None
    """The value's name in ``--help`` (None: the flag's own name)."""


def option(
    default: _T,
    help: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    metavar: str | None = None,
) -> _T:
    """A dataclass field with `default` that users set, described by `help` and bounded."""
    info = OptionInfo(help, Bounds(low, high, low_open), metavar)
    made: _T = field(default=default, metadata={_KEY: info})
    return made


def option_info(f: Field[object]) -> OptionInfo | None:
    """The `OptionInfo` of a field declared with `option`, else None."""
    info = f.metadata.get(_KEY)
    return info if isinstance(info, OptionInfo) else None
