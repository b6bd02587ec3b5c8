"""Keep a long-running server's memory flat: few malloc arenas, freed memory handed back.

Every request is synthesized in a worker thread. glibc gives threads that allocate at the
same time arenas of their own (up to 8 per core), and memory freed inside an arena is
rarely handed back to the system, so with many short-lived threads the resident size
creeps up for a long time before it levels off. The soak benchmark
(`benchmarks/soak.py`) measured this; two arenas keep the resident size flat at no
measurable cost in speed (synthesis spends its time in ONNX Runtime and OpenJTalk, not in
malloc). A ``MALLOC_ARENA_MAX`` set in the environment wins (glibc reads it itself); other
C libraries (musl, macOS) are left alone.

Requests of different lengths leave different amounts of freed-but-kept heap behind, so
the resident size also swings by several percent with whatever ran last. `IdleHeapTrim`
hands freed heap back (glibc ``malloc_trim``) once the server has had no request for a
moment: an idle server sits at the same resident size however long it has run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from engine.heap import trim_heap

__all__ = ["IdleHeapTrim"]

_LOGGER = logging.getLogger(__name__)


class IdleHeapTrim:
    """Call it when the server has no request left; `delay_s` later, `trim_heap` runs in a
    worker thread (never on the event loop) once `is_idle` says so: a worker whose client
    left may still be finishing its sentence, so it is asked again every `delay_s`, up to
    `patience` times (a new request that comes meanwhile calls this again anyway)."""

    def __init__(
        self, is_idle: Callable[[], bool], delay_s: float = 1.0, patience: int = 30
    ) -> None:
        self._is_idle = is_idle
        self.delay_s = delay_s
        self.patience = patience
        self._tries = 0
        self._timer: asyncio.TimerHandle | None = None
        self._running: asyncio.Future[bool] | None = None
        self.trims = 0

    def __call__(self) -> None:
        self._tries = 0
        self._schedule()

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(self.delay_s, self._fire)

    def _fire(self) -> None:
        self._timer = None
        if not self._is_idle() or (self._running is not None and not self._running.done()):
            self._tries += 1
            if self._tries < self.patience:
                self._schedule()
            return
        self.trims += 1
        self._running = asyncio.ensure_future(asyncio.to_thread(trim_heap))

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
