"""Progress a library user sees without configuring `logging`: long work (int8 graphs made,
a runtime measured) announced on stderr.

The engine's long steps report through one seam, a callable taking one line of text
(``progress: Callable[[str], None]``). `TTS` hands them a `StderrProgress` unless
`EngineOptions.progress` is off (the server turns it off: it logs the same lines).

- On a terminal, consecutive lines of one counted step (``"<step> 12/64 ..."``) redraw one
  line in place as a bar (``<step> [######------] 12/64``); other lines print as they come.
- Elsewhere (a pipe, a CI log, a journal) each line is printed once, prefixed by the time
  since the reporter started, so a log shows how long each step took.

Every line is also logged at DEBUG on this module's logger (the server's log keeps them at
INFO through its own reporter, `engine.int8`'s default).
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
from typing import TextIO

__all__ = ["StderrProgress"]

_LOGGER = logging.getLogger(__name__)

_COUNTED = re.compile(r"^(?P<step>.*?)\s(?P<done>\d+)/(?P<total>\d+)(?P<rest>.*)$")
BAR_WIDTH = 24


class StderrProgress:
    """A progress sink (``Callable[[str], None]``) writing to `stream` (default stderr);
    `tty` overrides the terminal check (tests)."""

    def __init__(self, stream: TextIO | None = None, *, tty: bool | None = None) -> None:
        self._stream = stream
        self._tty = tty
        self._start = time.monotonic()
        self._lock = threading.Lock()
        self._open_step: str | None = None  # the counted step drawn on the current line

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stderr

    def _is_tty(self) -> bool:
        if self._tty is not None:
            return self._tty
        isatty = getattr(self.stream, "isatty", None)
        try:
            return bool(isatty()) if callable(isatty) else False
        except ValueError:  # a closed stream
            return False

    def __call__(self, message: str) -> None:
        _LOGGER.debug("%s", message)
        with self._lock:
            try:
                if self._is_tty():
                    self._draw(message)
                else:
                    elapsed = time.monotonic() - self._start
                    self.stream.write(f"[{elapsed:6.1f} s] {message}\n")
                self.stream.flush()
            except (OSError, ValueError):  # stderr closed or gone: progress is not worth failing
                pass

    def _draw(self, message: str) -> None:
        counted = _COUNTED.match(message)
        if counted is None or int(counted["total"]) <= 0:
            self._end_line()
            self.stream.write(message + "\n")
            return
        step, done, total = counted["step"], int(counted["done"]), int(counted["total"])
        if self._open_step is not None and self._open_step != step:
            self._end_line()
        filled = min(BAR_WIDTH, BAR_WIDTH * done // total)
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        self.stream.write(f"\r\x1b[K{step} [{bar}] {done}/{total}{counted['rest']}")
        self._open_step = step
        if done >= total:
            self._end_line()

    def _end_line(self) -> None:
        if self._open_step is not None:
            self.stream.write("\n")
            self._open_step = None
