"""A thread's OS priority (its niceness), lowered for background work and raised back: the
int8 worker (`engine.int8.background`) and the server's library loading a voice
(`wyoming_hayakoe.library.priority`) use it. Linux only (priorities are per thread
there); elsewhere nothing is changed. A leaf."""

from __future__ import annotations

import logging
import os
import sys
import threading

__all__ = ["lower_thread_priority", "restore_priority"]

_LOGGER = logging.getLogger(__name__)


def lower_thread_priority(niceness: int) -> bool:
    """Lower the calling thread's OS priority to `niceness` (Linux: per thread; elsewhere
    nothing is changed). True when it was applied."""
    if niceness <= 0 or not sys.platform.startswith("linux"):
        return False
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid), niceness))
    except (AttributeError, OSError) as exc:
        _LOGGER.debug("Could not lower the thread's priority: %s", exc)
        return False
    return True


def restore_priority(niceness: int) -> int:
    """Raise this process's threads that run at `niceness` (the work's thread and the ONNX
    Runtime threads it started) back to the main thread's priority, so a cancelled step on
    a busy machine reaches its next check at once instead of waiting for idle CPU. Best
    effort (raising a priority can need privileges); returns how many threads were raised."""
    if niceness <= 0 or not sys.platform.startswith("linux"):
        return 0
    raised = 0
    try:
        base = os.getpriority(os.PRIO_PROCESS, os.getpid())
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return 0
    for tid in tids:
        try:
            if os.getpriority(os.PRIO_PROCESS, tid) == niceness > base:
                os.setpriority(os.PRIO_PROCESS, tid, base)
                raised += 1
        except OSError as exc:  # gone, or no permission to raise it
            _LOGGER.debug("Could not raise thread %d's priority: %s", tid, exc)
    return raised
