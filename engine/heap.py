"""The C heap of this process (glibc only; a no-op on musl, macOS, Windows).

ONNX Runtime parses whole model files and copies their weights when a session is built;
glibc keeps the freed parse buffers, and threads that allocate at the same time get malloc
arenas of their own whose freed memory is rarely handed back. The engine trims after
building sessions; a long-running server also limits the arenas and trims when idle.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os

__all__ = ["DEFAULT_ARENAS", "limit_malloc_arenas", "trim_heap"]

_LOGGER = logging.getLogger(__name__)

DEFAULT_ARENAS = 2
"""Arenas a server keeps: flat resident size at no measurable cost (benchmarks/soak.py)."""
_M_ARENA_MAX = -8  # glibc's mallopt parameter number


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c") or "libc.so.6"
    try:
        libc = ctypes.CDLL(name)
        _ = libc.gnu_get_libc_version  # only glibc has it (and its mallopt numbers)
    except (OSError, AttributeError):
        return None
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    libc.malloc_trim.restype = ctypes.c_int
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.mallopt.restype = ctypes.c_int
    return libc


def trim_heap() -> bool:
    """Hand the C heap's free pages back to the OS (all arenas); False without glibc."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def limit_malloc_arenas(arenas: int = DEFAULT_ARENAS) -> bool:
    """Ask glibc for at most `arenas` malloc arenas; True when it took effect. Call it
    before worker threads start allocating. A ``MALLOC_ARENA_MAX`` set in the environment
    wins (glibc reads it itself)."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        _LOGGER.debug("MALLOC_ARENA_MAX=%s from the environment", os.environ["MALLOC_ARENA_MAX"])
        return False
    libc = _glibc()
    if libc is None:
        return False
    ok = bool(libc.mallopt(_M_ARENA_MAX, arenas))
    _LOGGER.debug("malloc arenas limited to %d: %s", arenas, ok)
    return ok
