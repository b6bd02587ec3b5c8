"""A listener's clock: what someone hears when a stream is played the moment it arrives.

A player starts at the first chunk with audio and plays at real time; when the next chunk
has not arrived by the time the audio before it has played, it waits in silence (a gap)
and goes on from the chunk's arrival. `ListenerClock` does that bookkeeping and nothing
else: fed (arrival time, samples, sample rate) per chunk it computes the first audio, every
gap and when the last sample is heard, so hand-made arrival schedules can test it
(tests/benchmarks/test_listener.py) and any client can use it: the Wyoming listener
(`benchmarks.lib.wyoming.listen`), the engine timing of `benchmarks.compare.worker`.

Gaps shorter than `min_gap` (default 20 ms) are counted apart as scheduling noise (a
process woken a few milliseconds late, an event read in two parts) and not reported as gaps;
the clock still waits for them, as a player would.

Standard library only: `compare.worker` imports it in hayakoe's own venv too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MIN_GAP_S = 0.02
"""Shorter waits are scheduling noise, not a gap a listener hears (see the module text)."""


@dataclass(frozen=True)
class Gap:
    """One wait of the player for audio."""

    at_s: float
    """When the player ran dry, in seconds since the clock's start (the request)."""
    seconds: float
    """How long it waited."""


@dataclass
class ListenerClock:
    """Real-time playback of chunks as they arrive (times in seconds on any one clock)."""

    start: float = 0.0
    """When the request was sent: first audio is measured from here."""
    min_gap: float = MIN_GAP_S
    """Waits shorter than this are noise (`noise_count`, `noise_s`), not gaps."""
    gaps: list[Gap] = field(default_factory=list)
    """Every wait of at least `min_gap`, in order."""
    noise_count: int = 0
    """Waits shorter than `min_gap`."""
    noise_s: float = 0.0
    """Their total length."""
    first_arrival: float | None = None
    """Arrival of the first chunk with samples (None before it)."""
    play_end: float = 0.0
    """When everything fed so far will have been played (same clock as the arrivals)."""
    audio_s: float = 0.0
    """Seconds of audio fed."""
    chunks: int = 0
    """Chunks with samples fed."""
    last_arrival: float | None = None
    """Arrival of the latest chunk with samples."""
    gapless_start: float | None = None
    """The earliest start of playback (same clock) that would never have waited for these
    arrivals: the latest of (arrival − audio before the chunk). Hindsight: the shortest
    hold-back a server could have used for this request."""

    def feed(self, arrival: float, n_samples: int, rate: int) -> float:
        """One chunk of `n_samples` at `rate` Hz arrived at `arrival`; returns the wait it
        caused (0.0 when it came in time). Chunks without samples change nothing."""
        if n_samples <= 0:
            return 0.0
        if rate <= 0:
            raise ValueError(f"sample rate must be positive, got {rate}")
        if self.last_arrival is not None and arrival < self.last_arrival:
            raise ValueError(f"arrival {arrival} is before the previous one {self.last_arrival}")
        duration = n_samples / rate
        need = arrival - self.audio_s
        if self.gapless_start is None or need > self.gapless_start:
            self.gapless_start = need
        wait = 0.0
        if self.first_arrival is None:
            self.first_arrival = arrival
            self.play_end = arrival
        elif arrival > self.play_end:
            wait = arrival - self.play_end
            if wait >= self.min_gap:
                self.gaps.append(Gap(self.play_end - self.start, wait))
            else:
                self.noise_count += 1
                self.noise_s += wait
            self.play_end = arrival
        self.play_end += duration
        self.audio_s += duration
        self.chunks += 1
        self.last_arrival = arrival
        return wait

    @property
    def first_audio_s(self) -> float | None:
        """Seconds from the request to the first audio (None when none came)."""
        return None if self.first_arrival is None else self.first_arrival - self.start

    @property
    def gapless_start_s(self) -> float | None:
        """`gapless_start` in seconds from the request (None when no audio came)."""
        return None if self.gapless_start is None else self.gapless_start - self.start

    @property
    def gap_count(self) -> int:
        """Gaps of at least `min_gap`."""
        return len(self.gaps)

    @property
    def gap_s(self) -> float:
        """Their total length in seconds."""
        return sum(g.seconds for g in self.gaps)

    @property
    def heard_until_s(self) -> float:
        """Seconds from the request until the last sample has been played."""
        return self.play_end - self.start if self.first_arrival is not None else 0.0
