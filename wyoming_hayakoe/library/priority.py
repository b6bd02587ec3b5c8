"""An install's loading at a lower OS priority than the voices serving meanwhile.

Loading a voice (its ONNX Runtime sessions, the warm-up sentence) takes both cores of a
small machine for seconds; at normal priority a request that arrives meanwhile waits for
them. `lowered()` runs the loading thread at `INSTALL_NICENESS` (Linux, per thread: the
ONNX Runtime threads the new sessions start inherit it) and afterwards raises every thread
left at that priority (the new voice's session threads, this thread) back to the process's
own, so the installed voice serves at normal priority. Where a priority cannot be raised
back (no root, a low `RLIMIT_NICE`), nothing is lowered: a voice must never be left serving
at a low priority.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator

from engine.priority import lower_thread_priority, restore_priority

__all__ = ["INSTALL_NICENESS", "lowered"]

_LOGGER = logging.getLogger(__name__)

INSTALL_NICENESS = 15
"""The loading thread's niceness: the scheduler gives a nice-0 thread about 28 times its CPU
time (CFS weights 1024 and 36). Measured (library-load, one other core busy): first audio
during installs 3.68x the median without at nice 10, 1.07x at 15; installs then take 81-97 s
instead of 53-62 s. Not 19: the background int8 work's threads run there, and
`restore_priority` raises the threads at exactly this niceness."""


def can_raise_back() -> bool:
    """Whether this process may set a thread's priority back to its own after lowering it
    (root, or an `RLIMIT_NICE` that allows the process's own niceness)."""
    if not sys.platform.startswith("linux"):
        return False
    if os.geteuid() == 0:
        return True
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NICE)[0]
        base = os.getpriority(os.PRIO_PROCESS, 0)
    except (ImportError, AttributeError, OSError, ValueError):
        return False
    return soft == resource.RLIM_INFINITY or 20 - soft <= base


@contextlib.contextmanager
def lowered() -> Iterator[bool]:
    """Run the block on this thread at `INSTALL_NICENESS`, then every thread left there back
    at the process's priority (see the module doc). Yields whether it was lowered."""
    done = can_raise_back() and lower_thread_priority(INSTALL_NICENESS)
    try:
        yield done
    finally:
        if done:
            raised = restore_priority(INSTALL_NICENESS)
            _LOGGER.debug("Install done: %d thread(s) back at normal priority", raised)
