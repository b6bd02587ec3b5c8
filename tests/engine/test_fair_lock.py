"""`FairLock`: waiters get the lock in the order they asked, and one whose request was
cancelled leaves the queue without blocking those behind it."""

from __future__ import annotations

import threading
import time

import pytest

from engine.fair_lock import FairLock

pytestmark = pytest.mark.timeout(60)


def _wait_for(condition) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_waiters_are_served_in_arrival_order() -> None:
    lock = FairLock()
    lock.acquire()
    order: list[int] = []

    def worker(i: int) -> None:
        with lock:
            order.append(i)

    threads = []
    for i in range(12):
        thread = threading.Thread(target=worker, args=(i,))
        thread.start()
        _wait_for(lambda n=i + 1: lock.waiting == n)  # queued before the next one starts
        threads.append(thread)
    lock.release()
    for thread in threads:
        thread.join(10)
    assert order == list(range(12))
    assert not lock.locked() and lock.waiting == 0


def test_a_cancelled_waiter_leaves_and_the_next_one_gets_the_lock() -> None:
    lock = FairLock()
    lock.acquire()
    cancel = threading.Event()
    results: dict[str, bool] = {}
    first = threading.Thread(
        target=lambda: results.setdefault("first", lock.acquire(cancel=cancel))
    )
    first.start()
    _wait_for(lambda: lock.waiting == 1)
    second = threading.Thread(target=lambda: results.setdefault("second", lock.acquire()))
    second.start()
    _wait_for(lambda: lock.waiting == 2)
    cancel.set()
    first.join(10)
    assert results == {"first": False} and lock.waiting == 1
    lock.release()
    second.join(10)
    assert results == {"first": False, "second": True} and lock.locked()
    lock.release()


def test_non_blocking_and_timeouts_and_misuse() -> None:
    lock = FairLock()
    assert lock.acquire(blocking=False)
    assert not lock.acquire(blocking=False)
    assert not lock.acquire(timeout=0.01) and lock.waiting == 0
    lock.release()
    with pytest.raises(RuntimeError):
        lock.release()
