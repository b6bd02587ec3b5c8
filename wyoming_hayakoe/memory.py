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
import ctypes
import ctypes.util
import logging
import os
from collections.abc import Callable
from typing import Any

__all__ = ["DEFAULT_ARENAS", "IdleHeapTrim", "limit_malloc_arenas", "trim_heap"]

_LOGGER = logging.getLogger(__name__)

DEFAULT_ARENAS = 2
_M_ARENA_MAX = -8  # glibc's mallopt parameter number


def _glibc() -> Any | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
        _ = libc.gnu_get_libc_version  # only glibc has it (and its mallopt numbers)
    except (OSError, AttributeError):
        return None
    return libc


def trim_heap() -> bool:
    """Hand the C heap's free pages back to the OS (all arenas); False without glibc."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    libc.malloc_trim.restype = ctypes.c_int
    libc.malloc_trim(0)
    return True


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


def limit_malloc_arenas(arenas: int = DEFAULT_ARENAS) -> bool:
    """Ask glibc for at most `arenas` malloc arenas; True when it took effect. Call it
    before worker threads start allocating."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        _LOGGER.debug("MALLOC_ARENA_MAX=%s from the environment", os.environ["MALLOC_ARENA_MAX"])
        return False
    libc = _glibc()
    if libc is None:
        return False
    mallopt = libc.mallopt
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = bool(mallopt(_M_ARENA_MAX, arenas))
    _LOGGER.debug("malloc arenas limited to %d: %s", arenas, ok)
    return ok
