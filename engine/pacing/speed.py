"""`SpeedMeter`: a voice's real-time factor on this machine (seconds of synthesis per second
of audio), one estimate per precision, learned from the warm-up and from every request:
rising fast when the machine gets busier and falling slowly. One per `Speaker`; each
request's playback guard starts from it."""

from __future__ import annotations

import threading

METER_MIN_AUDIO_S = 0.3
"""Render calls with less audio than this teach the meter nothing (all overhead)."""
RISE, FALL = 0.5, 0.2
"""Weights of a new measurement in the meter's moving average, when it is slower / faster."""


class SpeedMeter:
    """Synthesis seconds per second of audio (the real-time factor) of one voice on this
    machine, one estimate per precision. Thread-safe."""

    def __init__(self) -> None:
        self._rates: dict[str, float] = {}
        self._lock = threading.Lock()

    def observe(self, key: str, compute_s: float, audio_s: float) -> None:
        """One render call's work: `compute_s` seconds for `audio_s` seconds of audio."""
        if audio_s < METER_MIN_AUDIO_S or compute_s <= 0:
            return
        rate = compute_s / audio_s
        with self._lock:
            old = self._rates.get(key)
            if old is None:
                self._rates[key] = rate
            else:
                weight = RISE if rate > old else FALL
                self._rates[key] = old + weight * (rate - old)

    def rate(self, key: str) -> float | None:
        """The current estimate for `key`; before any measurement of it, the slowest other
        one (a voice that just switched from fp32 to int8 is at most that slow); None when
        nothing was measured."""
        with self._lock:
            found = self._rates.get(key)
            return found if found is not None else max(self._rates.values(), default=None)
