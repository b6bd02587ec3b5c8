"""Pacing: when a request's audio may go to its listener, and how large the decoder's next
window may be, decided against one model of that listener.

- `clock`: `Clock` (the time pacing reads; one per `Speaker`, injectable), `SYSTEM_CLOCK`;
- `listener`: `Listener`, a real-time player that starts with the first audio and waits when
  the next comes late: the one model of the listener;
- `speed`: `SpeedMeter`, a voice's real-time factor per precision (one per `Speaker`);
- `guard`: `PlaybackGuard`, the hold-back rule that keeps a slow board's speech whole;
- `request`: `RequestPacing`, one request's pacing, owner of its listener, its text backlog
  and its guard; `Speaker` tells it what happens and the voice asks it (`ListenerView`).

A leaf of the engine: it imports nothing from the engine's other parts.
"""

from .clock import SYSTEM_CLOCK, Clock, SystemClock
from .guard import PlaybackGuard
from .listener import Listener
from .request import PacingReport, RequestPacing
from .speed import SpeedMeter

__all__ = [
    "SYSTEM_CLOCK",
    "Clock",
    "Listener",
    "PacingReport",
    "PlaybackGuard",
    "RequestPacing",
    "SpeedMeter",
    "SystemClock",
]
