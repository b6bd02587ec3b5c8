"""A simulated clock for pacing tests (`engine.pacing.Clock`): time moves only when a test
(or a stand-in voice doing "work") advances it, so pacing runs without sleeping and gives
the same figures on a busy machine as on an idle one."""

from __future__ import annotations

import threading


class SimulatedClock:
    """`now()` in seconds from 0; `advance(seconds)` moves it on. Thread-safe."""

    def __init__(self) -> None:
        self._t = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._t

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a clock does not go back ({seconds} s)")
        with self._lock:
            self._t += seconds
