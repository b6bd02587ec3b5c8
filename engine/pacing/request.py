"""`RequestPacing`: one request's pacing, the one owner of everything that paces it.

It holds the request's `Listener` (the only model of the listener: the playback guard
decides against it, the windowed decoder sizes its windows from it), the text that arrived
in deltas and waits for the voice (`TextBacklog`), and, when the request is guarded, its
`PlaybackGuard`. `Speaker` tells it what happens (`arrived`, `begin_part`, `produced`) and
passes the output chunks through `pace`; the voice sees it as the request's
`engine.voice_backend.ListenerView` (`now`, `in_hand`); `report` says how it went.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .clock import SYSTEM_CLOCK, Clock
from .guard import C, PlaybackGuard
from .listener import Listener


class TextBacklog:
    """Characters of a request's text that have arrived (text in deltas) and are not yet
    being rendered: audio still to come that no voice has predicted yet. Thread-safe (the
    event loop counts arrivals, the worker thread what it takes)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.arrived = 0
        self.taken = 0

    def arrive(self, chars: int) -> None:
        with self._lock:
            self.arrived += chars

    def take(self, chars: int) -> None:
        with self._lock:
            self.taken += chars

    @property
    def waiting(self) -> int:
        with self._lock:
            return max(0, self.arrived - self.taken)


@dataclass(frozen=True)
class PacingReport:
    """How one request was paced (`RequestPacing.report`)."""

    guarded: bool
    """The playback guard was on for it."""
    rate: float | None
    """The speed the guard used at the end (real-time factor with its margin; None: unguarded
    or nothing measured)."""
    holds: int
    """Times the guard held audio back."""
    held_s: float
    """Seconds it held audio back in all."""
    first_audio_s: float | None
    """Seconds from the start of the request to its first audio handed out (None: none)."""
    audio_s: float
    """Seconds of audio handed out."""
    stalls: int
    """Times the modelled real-time listener ran dry after it started (a gap heard)."""
    stalled_s: float
    """Seconds it waited in all."""


class RequestPacing:
    """One request's pacing (see the module doc). `base_rate` is the voice's measured speed
    (`engine.pacing.speed.SpeedMeter`) when the request starts; `guard` turns the playback
    guard on. Everything but `arrived` runs on the request's worker thread."""

    def __init__(
        self,
        clock: Clock = SYSTEM_CLOCK,
        *,
        base_rate: float | None = None,
        guard: bool = True,
        label: str = "",
    ) -> None:
        self.clock = clock
        self._begun = clock.now()
        self._listener = Listener(clock)
        self._backlog = TextBacklog()
        self._guard = PlaybackGuard(base_rate, self._listener, label=label) if guard else None
        self._made = 0.0  # seconds of audio the voice made (pauses before parts included)

    # -- what the voice sees (engine.voice_backend.ListenerView) --------------------------
    def now(self) -> float:
        return self.clock.now()

    def in_hand(self) -> float:
        """Seconds the listener can play on before it needs audio not yet made: what it has
        not played yet of the audio handed out, and what is made but not handed out (held
        back by the guard or by the output stage). A lower bound while the guard holds (the
        listener has not started)."""
        return self._listener.ahead() + max(0.0, self._made - self._listener.handed_out)

    def silence_heard(self) -> float:
        """Seconds the listener has already waited in silence for what comes next (0 while it
        still has audio, handed out or made and held back)."""
        if self._made - self._listener.handed_out > 1e-6:
            return 0.0
        return self._listener.waiting()

    # -- what the speaker reports ----------------------------------------------------------
    def arrived(self, chars: int) -> None:
        """`chars` characters of text arrived (text in deltas); thread-safe."""
        self._backlog.arrive(chars)

    def begin_part(self, chars: int) -> None:
        """The voice starts on `chars` characters of the request's text."""
        self._backlog.take(chars)
        if self._guard is not None:
            self._guard.begin_part(chars)

    def produced(
        self, audio_s: float, compute_s: float, remaining: float | None, tail: float = 0.0
    ) -> None:
        """The voice made `audio_s` seconds in `compute_s` seconds; `remaining` seconds are
        still to come in its render call (`engine.voice_backend.AudioPiece.remaining`), the
        largest piece of them `tail` seconds."""
        self._made += audio_s
        if self._guard is not None:
            self._guard.produced(audio_s, compute_s, remaining, tail, self._backlog.waiting)

    # -- pacing ----------------------------------------------------------------------------
    def pace(self, chunks: Iterable[C]) -> Iterator[C]:
        """`chunks` as they may go to the listener: held back by the guard where it would
        outrun synthesis, at once without a guard; each handed to the listener as it goes."""
        if self._guard is not None:
            yield from self._guard.pace(chunks)
            return
        for chunk in chunks:
            self._listener.hand_out(chunk.duration)
            yield chunk

    def report(self) -> PacingReport:
        """The request so far (its stalls: those before the last audio handed out)."""
        listener, guard = self._listener, self._guard
        first = listener.first_at
        return PacingReport(
            guarded=guard is not None,
            rate=guard.rate() if guard is not None else None,
            holds=guard.holds if guard is not None else 0,
            held_s=guard.held_s if guard is not None else 0.0,
            first_audio_s=None if first is None else first - self._begun,
            audio_s=listener.handed_out,
            stalls=listener.stalls,
            stalled_s=listener.stalled_s,
        )
