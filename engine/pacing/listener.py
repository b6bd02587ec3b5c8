"""`Listener`: the one model of a request's listener.

A listener (Home Assistant's media player, `aplay`) starts playing at the first audio it is
handed and then plays in real time; when the next audio is not there yet it waits, without
skipping, and resumes with it. The playback guard decides against this model what may be
sent (`engine.pacing.guard`), and the windowed decoder sizes its next window from what it
says the listener still has in hand (`engine.pacing.request.RequestPacing.in_hand`).
"""

from __future__ import annotations

from .clock import SYSTEM_CLOCK, Clock


class Listener:
    """How much audio handed out is still ahead of a real-time player that starts with the
    first piece (and waits, without skipping, when a piece comes late)."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self.start: float | None = None  # when the player would have started (shifted by stalls)
        self.first_at: float | None = None  # when the first audio was handed out
        self.handed_out = 0.0  # seconds of audio handed out
        self.stalls = 0  # times the player ran dry after it started
        self.stalled_s = 0.0  # seconds it waited in all
        self._dry = False  # ran dry since the last hand-out (a stall counted once)
        self._dry_since = 0.0  # when it ran dry (while `_dry`)

    def now(self) -> float:
        return self.clock.now()

    @property
    def started(self) -> bool:
        return self.start is not None

    def ahead(self) -> float:
        """Seconds of audio handed out but not yet played (0 if the player is waiting)."""
        if self.start is None:
            return 0.0
        ahead = self.handed_out - (self.clock.now() - self.start)
        if ahead < 0:  # the player ran dry and waited: it resumes with the next piece
            self.start -= ahead
            if not self._dry:
                self.stalls += 1
                self._dry = True
                self._dry_since = self.clock.now() + ahead  # the moment its audio ran out
            self.stalled_s -= ahead
            ahead = 0.0
        return ahead

    def waiting(self) -> float:
        """Seconds the player has been waiting for audio since it ran dry (0 while it plays
        or before it starts): the silence it has already made."""
        self.ahead()
        return self.clock.now() - self._dry_since if self._dry else 0.0

    def in_hand(self) -> float:
        """Seconds the player can play on without more audio (audio handed out is all it
        gets: the same as `ahead`)."""
        return self.ahead()

    def hand_out(self, seconds: float) -> None:
        self.ahead()  # account for any stall first
        if self.start is None:
            self.start = self.first_at = self.clock.now()
        self._dry = False
        self.handed_out += seconds
