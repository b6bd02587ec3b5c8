"""`Prefetch`: the next items of a generator computed on a background thread.

`NeuralVoice.render` uses it to overlap sentences (`EngineOptions.overlap`): while the
calling thread decodes sentence n, the background thread runs BERT and the front graph
(encoder, duration predictor, flow) of sentence n+1, so the second core does work that the
serial path leaves for later.

The background thread computes at most `ahead` items that the caller has not taken yet,
then waits. An exception raised while computing an item is raised again by the `take` that
would have returned it (with its own traceback). `close` stops the thread after the item it
is computing (nothing further starts), closes the generator there and waits for the thread
to end: after `close` returns, no work of this object runs any more.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Generator
from typing import Generic, TypeVar

_LOGGER = logging.getLogger(__name__)

T = TypeVar("T")


class _Failed:
    """What computing an item raised, handed to the caller by `Prefetch.take`."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class Prefetch(Generic[T]):
    """Items of `items` computed in order on one background thread (see the module doc).

    The iterator is advanced only by the background thread from the moment this object is
    made: the caller must not use it any more."""

    def __init__(
        self, items: Generator[T, None, None], *, ahead: int = 1, name: str = "prefetch"
    ) -> None:
        if ahead < 1:
            raise ValueError(f"Prefetch: ahead must be >= 1, not {ahead}")
        self._items = items
        self._ahead = ahead
        self._cond = threading.Condition()
        self._ready: deque[T | _Failed] = deque()
        self._stop = False
        self._finished = False  # the thread computes nothing more
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while len(self._ready) >= self._ahead and not self._stop:
                        self._cond.wait()
                    if self._stop:
                        return
                try:
                    item = next(self._items)
                except StopIteration:
                    return
                except BaseException as exc:  # handed to the caller by take()
                    with self._cond:
                        self._ready.append(_Failed(exc))
                    return
                with self._cond:
                    self._ready.append(item)
                    self._cond.notify_all()
        finally:
            try:
                self._items.close()  # the generator's own cleanup runs here, on this thread
            except Exception:  # pragma: no cover - cleanup must not hide the result
                _LOGGER.exception("closing the prefetched generator failed")
            with self._cond:
                self._finished = True
                self._cond.notify_all()

    def take(self) -> T:
        """The next item (waits for it); raises what computing it raised, StopIteration
        when the iterator is exhausted."""
        with self._cond:
            while not self._ready and not self._finished:
                self._cond.wait()
            if not self._ready:
                raise StopIteration
            entry = self._ready.popleft()
            self._cond.notify_all()
        if isinstance(entry, _Failed):
            raise entry.error
        return entry

    @property
    def alive(self) -> bool:
        """True while the background thread runs."""
        return self._thread.is_alive()

    def close(self) -> None:
        """Stop after the item being computed, close the iterator, wait for the thread."""
        with self._cond:
            self._stop = True
            self._ready.clear()
            self._cond.notify_all()
        self._thread.join()

    def __enter__(self) -> Prefetch[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
