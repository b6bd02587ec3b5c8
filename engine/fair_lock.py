"""`FairLock`: a lock that serves its waiters first come, first served.

`threading.Lock` wakes waiters in no particular order, and a waiter that polls with a
timeout (to notice a cancelled request) even loses its place each time it gives up. A
speaker's lock is where requests for one voice queue, so its order is what a user sees
when several rooms announce at once: this lock keeps one queue of waiters and hands the
lock to the oldest. A waiter may watch a `threading.Event` while it waits and leave the
queue when it is set, without losing its place before that.
"""

from __future__ import annotations

import threading
import time
from collections import deque

__all__ = ["FairLock"]

_POLL_S = 0.05


class FairLock:
    """A non-reentrant FIFO lock with `acquire`, `release`, `locked` and `with` support."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._waiters: deque[object] = deque()
        self._held = False

    def acquire(
        self,
        blocking: bool = True,
        timeout: float = -1,
        *,
        cancel: threading.Event | None = None,
    ) -> bool:
        """Take the lock when every earlier waiter has had it; False if `blocking` is
        false and the lock is busy, `timeout` seconds pass (when >= 0), or `cancel` is set."""
        with self._cond:
            if not self._held and not self._waiters:
                self._held = True
                return True
            if not blocking or timeout == 0:
                return False
            me = object()
            self._waiters.append(me)
            deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
            acquired = False
            try:
                while self._held or self._waiters[0] is not me:
                    if cancel is not None and cancel.is_set():
                        return False
                    wait = _POLL_S if cancel is not None else None
                    if deadline is not None:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            return False
                        wait = left if wait is None else min(wait, left)
                    self._cond.wait(wait)
                self._waiters.popleft()
                self._held = acquired = True
                return True
            finally:
                if not acquired:
                    self._waiters.remove(me)
                    self._cond.notify_all()  # the next waiter may be first now

    def release(self) -> None:
        with self._cond:
            if not self._held:
                raise RuntimeError("release of an unlocked FairLock")
            self._held = False
            self._cond.notify_all()

    def locked(self) -> bool:
        return self._held

    @property
    def waiting(self) -> int:
        """How many threads wait for the lock now."""
        return len(self._waiters)

    def __enter__(self) -> FairLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
