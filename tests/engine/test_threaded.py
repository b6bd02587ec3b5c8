"""`engine.threaded.iterate_in_thread`: a blocking generator read from async code. Real
threads; every wait is bounded by an event, none by a sleep."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Generator

import pytest

from engine.threaded import iterate_in_thread

WAIT_S = 10.0


class Source:
    """A blocking generator that records what it made, on which thread, and when it ended."""

    def __init__(self, count: int, fail_at: int | None = None) -> None:
        self.count = count
        self.fail_at = fail_at
        self.made: list[int] = []
        self.threads: set[str] = set()
        self.closed = threading.Event()
        self.made_one = threading.Condition()

    def __call__(self) -> Generator[int, None, None]:
        try:
            for i in range(self.count):
                self.threads.add(threading.current_thread().name)
                if i == self.fail_at:
                    raise ValueError(f"bad item {i}")
                with self.made_one:
                    self.made.append(i)
                    self.made_one.notify_all()
                yield i
        finally:
            self.threads.add(threading.current_thread().name)
            self.closed.set()

    def wait_made(self, n: int) -> bool:
        with self.made_one:
            return self.made_one.wait_for(lambda: len(self.made) >= n, WAIT_S)


def test_every_item_in_order_on_the_worker_thread() -> None:
    source = Source(20)

    async def main() -> list[int]:
        return [i async for i in iterate_in_thread(source, threading.Event(), name="w-1")]

    assert asyncio.run(main()) == list(range(20))
    assert source.threads == {"w-1"} and source.closed.is_set()


def test_the_worker_runs_at_most_buffer_items_ahead() -> None:
    source = Source(100)

    async def main() -> int:
        items = iterate_in_thread(source, threading.Event(), buffer=3)
        first = await items.__anext__()
        assert first == 0
        # one taken frees one place: 3 more handed over, a 5th made and waiting for room
        assert await asyncio.to_thread(source.wait_made, 5)
        await items.aclose()  # no room came meanwhile, so no 6th can have been made
        return len(source.made)

    assert asyncio.run(main()) == 5  # 1 taken + 3 waiting to be read + 1 in hand: not 100
    assert source.closed.wait(WAIT_S)


def test_an_error_reaches_the_consumer_where_it_was_raised() -> None:
    source = Source(10, fail_at=5)
    got: list[int] = []

    async def main() -> None:
        async for i in iterate_in_thread(source, threading.Event()):
            got.append(i)

    with pytest.raises(ValueError, match="bad item 5"):
        asyncio.run(main())
    assert got == [0, 1, 2, 3, 4]


def test_closing_early_sets_cancel_closes_the_generator_and_waits_for_it() -> None:
    source = Source(1000)
    cancel = threading.Event()
    closed_hook: list[bool] = []

    async def main() -> None:
        items = iterate_in_thread(
            source, cancel, on_close=lambda: closed_hook.append(cancel.is_set())
        )
        async for i in items:
            if i == 2:
                break
        await items.aclose()
        # aclose returned: the generator's finally has already run on its own thread
        assert source.closed.is_set()

    asyncio.run(main())
    assert cancel.is_set() and closed_hook == [True]
    assert len(source.made) < 1000


class Cancelled(Exception):
    pass


def test_a_quiet_exception_ends_the_iteration_silently() -> None:
    def produce() -> Generator[int, None, None]:
        yield 1
        raise Cancelled()

    async def main() -> list[int]:
        items = iterate_in_thread(produce, threading.Event(), quiet=(Cancelled,))
        return [i async for i in items]

    assert asyncio.run(main()) == [1]
