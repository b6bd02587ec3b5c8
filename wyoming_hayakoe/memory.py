"""Keep a long-running server's memory flat: limit glibc's malloc arenas.

Every request is synthesized in a worker thread. glibc gives threads that allocate at the
same time arenas of their own (up to 8 per core), and memory freed inside an arena is
rarely handed back to the system, so with many short-lived threads the resident size
creeps up for a long time before it levels off. The soak benchmark
(`benchmarks/soak.py`) measured this; two arenas keep the resident size flat at no
measurable cost in speed (synthesis spends its time in ONNX Runtime and OpenJTalk, not in
malloc). A ``MALLOC_ARENA_MAX`` set in the environment wins (glibc reads it itself); other
C libraries (musl, macOS) are left alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

__all__ = ["DEFAULT_ARENAS", "limit_malloc_arenas"]

_LOGGER = logging.getLogger(__name__)

DEFAULT_ARENAS = 2
_M_ARENA_MAX = -8  # glibc's mallopt parameter number


def limit_malloc_arenas(arenas: int = DEFAULT_ARENAS) -> bool:
    """Ask glibc for at most `arenas` malloc arenas; True when it took effect. Call it
    before worker threads start allocating."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        _LOGGER.debug("MALLOC_ARENA_MAX=%s from the environment", os.environ["MALLOC_ARENA_MAX"])
        return False
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # only glibc has it (and its mallopt numbers)
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = bool(mallopt(_M_ARENA_MAX, arenas))
    _LOGGER.debug("malloc arenas limited to %d: %s", arenas, ok)
    return ok
