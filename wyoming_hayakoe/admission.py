"""Admission: how many requests may wait for one voice, and no new ones while draining.

Each voice (engine `Speaker`) speaks one request at a time; the others wait in its queue,
first come first served (the engine's speaker lock is FIFO). This module bounds that queue:
a voice holds at most one request being spoken plus `max_queue` waiting; one more gets an
``error`` event at once (code ``busy``) instead of an ever longer wait. A request counts
from the moment it is accepted until its ``audio-stop`` is sent (a one-shot), or from
``synthesize-start`` until its audio is done (a stream, also while the text is still
arriving). Styles of one voice share its queue; different voices queue independently.

When the server drains (SIGTERM) it stops admitting (code ``shutting-down``) and waits
until the requests already admitted are done (`wait_idle`).

Everything here runs on the event loop; nothing blocks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from .errors import HayakoeError

__all__ = ["Admission", "AdmissionRefused", "Ticket"]

_LOGGER = logging.getLogger(__name__)


class AdmissionRefused(HayakoeError):
    """A request not admitted; `code` is the Wyoming ``error`` code sent to the client."""

    def __init__(self, text: str, code: str) -> None:
        super().__init__(text)
        self.code = code


class Ticket:
    """One admitted request; `release` (idempotent) when it is done."""

    def __init__(self, admission: Admission, voice: str) -> None:
        self._admission = admission
        self.voice = voice
        self._released = False

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._admission._leave(self.voice)


class Admission:
    """Per-voice counts of admitted requests, bounded by `max_queue` waiting ones."""

    def __init__(self, max_queue: int, on_idle: Callable[[], None] | None = None) -> None:
        """`on_idle` is called (on the event loop) each time the last admitted request is done."""
        if max_queue < 0:
            raise ValueError(f"max_queue must be >= 0, got {max_queue}")
        self.max_queue = max_queue
        self.on_idle = on_idle
        self._in_flight: dict[str, int] = {}
        self._draining = False
        self._idle: asyncio.Event | None = None
        self.admitted = 0
        """Requests admitted since the start (the web page's Status view)."""

    @property
    def in_flight(self) -> int:
        """Requests admitted and not done yet, all voices together."""
        return sum(self._in_flight.values())

    def in_flight_for(self, voice: str) -> int:
        return self._in_flight.get(voice, 0)

    @property
    def draining(self) -> bool:
        return self._draining

    def enter(self, voice: str) -> Ticket:
        """Admit one request for `voice`, or raise `AdmissionRefused` saying why not."""
        if self._draining:
            raise AdmissionRefused(
                "the server is shutting down and takes no new requests; retry on another "
                "server or after it restarts",
                code="shutting-down",
            )
        count = self._in_flight.get(voice, 0)
        if count > self.max_queue:
            raise AdmissionRefused(
                f"voice {voice!r} is busy: one request is being spoken and {count - 1} are "
                f"waiting (limit --max-queue {self.max_queue}); try again shortly",
                code="busy",
            )
        self._in_flight[voice] = count + 1
        self.admitted += 1
        if self._idle is not None:
            self._idle.clear()
        return Ticket(self, voice)

    def _leave(self, voice: str) -> None:
        count = self._in_flight.get(voice, 0) - 1
        if count > 0:
            self._in_flight[voice] = count
        else:
            self._in_flight.pop(voice, None)
        if not self._in_flight:
            if self._idle is not None:
                self._idle.set()
            if self.on_idle is not None:
                self.on_idle()

    def start_draining(self) -> None:
        """Refuse every new request from now on (requests already admitted go on)."""
        self._draining = True

    async def wait_idle(self, timeout: float) -> bool:
        """Wait until no admitted request is left (True) or `timeout` seconds pass (False)."""
        if not self._in_flight:
            return True
        if self._idle is None:
            self._idle = asyncio.Event()
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True
