"""`Int8Control`: pause and cancel int8 work from outside the thread that does it.

Making a voice's int8 graphs is a long run of short steps (one sentence's front graph, one
calibration crop, one window of a held-out sentence). The maker calls `checkpoint` between
steps: it returns at once, waits while `busy()` says a request is in flight (background
work never competes with a request for the CPU), or raises `Cancelled`. A step already
inside ONNX Runtime is stopped by `cancel` too: every session run of the maker goes
through `run_options()`, whose `terminate` flag `cancel` sets, so a run ends within
milliseconds instead of finishing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import EngineError

if TYPE_CHECKING:
    import onnxruntime as ort

__all__ = ["Cancelled", "Int8Control"]

_LOGGER = logging.getLogger(__name__)

POLL_S = 0.02
"""How often a paused maker looks again (a request's end is seen within this)."""


class Cancelled(EngineError):
    """int8 work was cancelled (`Int8Control.cancel`): nothing half-made is used."""


class Int8Control:
    """Pause/cancel of one maker (see the module doc). `busy`: True while a request is in
    flight (None: never busy)."""

    def __init__(self, busy: Callable[[], bool] | None = None) -> None:
        self._busy = busy
        self._cancel = threading.Event()
        self._runs: list[Any] = []
        self._lock = threading.Lock()
        self.paused_s = 0.0
        """Seconds spent waiting for requests to end (progress lines and benchmarks)."""
        self.pauses = 0

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    @property
    def event(self) -> threading.Event:
        """Set once cancelled (to wait on)."""
        return self._cancel

    def cancel(self) -> None:
        """Stop the work: the next `checkpoint` raises, and ONNX Runtime runs made with
        `run_options()` end now. Idempotent; callable from any thread."""
        self._cancel.set()
        with self._lock:
            for options in self._runs:
                options.terminate = True

    def busy_now(self) -> bool:
        """Whether a request is in flight now (a timed run it overlapped is taken again)."""
        return bool(self._busy is not None and self._busy())

    def checkpoint(self) -> None:
        """Between two steps: wait while a request is in flight, raise `Cancelled` if
        cancelled."""
        if self._cancel.is_set():
            raise Cancelled()
        if self._busy is not None and self._busy():
            start = time.monotonic()
            self.pauses += 1
            while self._busy() and not self._cancel.wait(POLL_S):
                pass
            self.paused_s += time.monotonic() - start
        if self._cancel.is_set():
            raise Cancelled()

    def run_options(self) -> ort.RunOptions:
        """An ONNX Runtime `RunOptions` that `cancel` terminates (already terminated when
        cancelled before)."""
        import onnxruntime as ort

        options = ort.RunOptions()
        with self._lock:
            self._runs.append(options)
            if self._cancel.is_set():
                options.terminate = True
        return options

    def raise_if_cancelled(self, exc: BaseException) -> None:
        """Turn an ONNX Runtime error caused by `terminate` into `Cancelled`."""
        if self._cancel.is_set():
            raise Cancelled() from exc
