"""`iterate_in_thread`: a blocking generator consumed from async code, run on a worker thread.

The worker runs at most `buffer` items ahead of the consumer (bounded memory); an exception
in the generator reaches the consumer at the point it would have been raised; closing the
async generator (or cancelling the task iterating it) sets `cancel`, closes the blocking
generator on its own thread and waits until that thread has finished, so whatever the
generator holds (a speaker's lock) is released when the close returns. `Speaker.astream`
is built on it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Generic, TypeVar

T = TypeVar("T")

POLL_S = 0.05
"""How often a worker waiting for the consumer looks at `cancel`."""


class _End:
    """The generator is exhausted."""


class Failure:
    """An exception carried from one thread to another, to be raised there (here: the
    generator's, to the consumer; `engine.speaker`: an async delta source's, to the worker)."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


class _Worker(Generic[T]):
    """The thread's side: runs the generator, hands items over as the consumer frees room."""

    def __init__(
        self,
        produce: Callable[[], Generator[T, None, None]],
        cancel: threading.Event,
        loop: asyncio.AbstractEventLoop,
        buffer: int,
        quiet: tuple[type[BaseException], ...],
    ) -> None:
        self.produce = produce
        self.cancel = cancel
        self.loop = loop
        self.quiet = quiet
        self.out: asyncio.Queue[T | _End | Failure] = asyncio.Queue()
        self.credits = threading.Semaphore(buffer)
        self.done: asyncio.Future[None] = loop.create_future()

    def send(self, item: T | _End | Failure) -> bool:
        """Hand `item` to the consumer once it has room; False once cancelled or the loop is
        gone."""
        while not self.cancel.is_set():
            if self.credits.acquire(timeout=POLL_S):
                try:
                    self.loop.call_soon_threadsafe(self.out.put_nowait, item)
                except RuntimeError:  # loop closed
                    return False
                return True
        return False

    def run(self) -> None:
        try:
            items = self.produce()
            try:
                for item in items:
                    if not self.send(item):
                        return
            finally:
                items.close()
            self.send(_End())
        except self.quiet:
            self.send(_End())  # (a no-op once cancelled: nobody is waiting)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            self.send(Failure(exc))
        finally:
            try:
                self.loop.call_soon_threadsafe(self._finished)
            except RuntimeError:
                pass

    def _finished(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def iterate_in_thread(
    produce: Callable[[], Generator[T, None, None]],
    cancel: threading.Event,
    *,
    buffer: int = 2,
    name: str = "worker",
    quiet: tuple[type[BaseException], ...] = (),
    on_close: Callable[[], None] | None = None,
) -> AsyncGenerator[T, None]:
    """The items of `produce()`, made on a daemon thread named `name` (see the module doc).
    `quiet`: exceptions that end the iteration silently (the generator's own way of saying
    it was cancelled); `on_close`: called once `cancel` is set, before waiting for the
    thread (to wake a generator blocked on something else than the consumer)."""
    worker = _Worker(produce, cancel, asyncio.get_running_loop(), buffer, quiet)
    threading.Thread(target=worker.run, name=name, daemon=True).start()
    try:
        while True:
            item = await worker.out.get()
            worker.credits.release()
            if isinstance(item, _End):
                break
            if isinstance(item, Failure):
                raise item.exc
            yield item
    finally:
        cancel.set()
        if on_close is not None:
            on_close()
        try:
            await asyncio.shield(worker.done)
        except asyncio.CancelledError:
            pass
