"""The one logging setup of the server and every subcommand: stderr, a timestamp on each line,
secrets scrubbed.

Why one: a log line without a time cannot be matched to what Home Assistant saw, and each
command setting up its own handler had drifted (some with no time, some not scrubbing tokens).
stderr always: stdout carries the Wyoming protocol (``--uri stdio://``) or the audio
(``say -o -``).
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, TextIO

__all__ = ["LOG_FORMAT", "NOISY_LIBRARIES", "setup_logging"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
"""Every command's log line: ``2026-12-05 02:41:07,123 INFO wyoming_hayakoe.server: Ready``
(local time, milliseconds); the server's ``--log-format`` replaces it."""

NOISY_LIBRARIES = ("botocore", "boto3", "s3transfer", "urllib3", "httpx", "httpx2", "httpcore")
"""Libraries whose per-request chatter is kept to WARNING unless ``--debug``."""


if TYPE_CHECKING:
    _StreamHandler = logging.StreamHandler[TextIO]
else:  # not subscriptable at run time before Python 3.11
    _StreamHandler = logging.StreamHandler


class _OurHandler(_StreamHandler):
    """The handler `setup_logging` installs (told apart from others when it runs again).
    Without a stream of its own it writes to whatever `sys.stderr` is when a line is logged
    (not the object it was at set-up, which a test harness may have closed since)."""

    def __init__(self, stream: TextIO | None) -> None:
        super().__init__(stream)
        self._own = stream

    @property
    def stream(self) -> TextIO:
        return sys.stderr if self._own is None else self._own

    @stream.setter
    def stream(self, value: TextIO) -> None:
        self._own = value


def setup_logging(
    debug: bool,
    *,
    level: int = logging.INFO,
    fmt: str = LOG_FORMAT,
    stream: TextIO | None = None,
) -> logging.Handler:
    """Log to `stream` (default: stderr) in `fmt`, at DEBUG with `debug`, else at `level`.

    Replaces the handler of an earlier call and the plain stream handlers `logging.basicConfig`
    puts on the root logger (one line per message, never two); other handlers (a test's
    capture, the web page's warning list) stay. Returns the handler installed."""
    from engine.sources.redact import RedactingFilter

    handler = _OurHandler(stream)
    handler.setFormatter(logging.Formatter(fmt))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        if isinstance(old, _OurHandler) or type(old) is logging.StreamHandler:
            root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else level)
    for name in NOISY_LIBRARIES:
        logging.getLogger(name).setLevel(logging.NOTSET if debug else logging.WARNING)
    return handler
