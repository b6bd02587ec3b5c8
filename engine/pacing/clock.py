"""The clock pacing runs on: one per `Speaker`, injectable (`Speaker(clock=...)`), so the
playback guard, the listener it models and the decoder's window timing all read the same
time, and tests can run them on a simulated clock without sleeping."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Seconds on a clock that never goes back (any origin)."""

    def now(self) -> float: ...


class SystemClock:
    """This process's `time.perf_counter`."""

    def now(self) -> float:
        return time.perf_counter()


SYSTEM_CLOCK: Clock = SystemClock()
