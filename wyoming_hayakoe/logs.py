"""The one logging setup of the server and every subcommand: stderr, a timestamp on each line,
secrets scrubbed, control characters in messages escaped.

Why one: a log line without a time cannot be matched to what Home Assistant saw, and each
command setting up its own handler had drifted (some with no time, some not scrubbing tokens).
stderr always: stdout carries the Wyoming protocol (``--uri stdio://``) or the audio
(``say -o -``).

What a client sends (an upload's file name, a refused request's path, a voice name) reaches
the log inside messages; `SafeFormatter` writes the message on one line with its control
characters escaped (``\\n``, ``\\x1b``, ``\\u2028``), so nobody can forge a line (a fake
``ERROR``) or send escape sequences to the terminal reading the log. A traceback keeps its
lines; only the exceptions' own messages in it are escaped.
"""

from __future__ import annotations

import copy
import logging
import re
import sys
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

__all__ = ["LOG_FORMAT", "NOISY_LIBRARIES", "SafeFormatter", "escape_controls", "setup_logging"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
"""Every command's log line: ``2026-12-05 02:41:07,123 INFO wyoming_hayakoe.server: Ready``
(local time, milliseconds); the server's ``--log-format`` replaces it."""

NOISY_LIBRARIES = ("botocore", "boto3", "s3transfer", "urllib3", "httpx", "httpx2", "httpcore")
"""Libraries whose per-request chatter is kept to WARNING unless ``--debug``."""


_UNSAFE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
"""What a log line never carries from a message: C0 controls but the tab (newline, CR, ESC,
...), DEL, C1 controls (NEL among them), the Unicode line and paragraph separators, and the
bidirectional marks, embeddings, overrides and isolates (text that reads other than it is)."""
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, keep_newlines: bool = False) -> str:
    """`text` with every character of `_UNSAFE` written as its escape (``\\n``, ``\\x1b``,
    ``\\u2028``); with `keep_newlines`, ``\\n`` is left as it is."""
    if _UNSAFE.search(text) is None:
        return text
    if keep_newlines:
        return "\n".join(_UNSAFE.sub(_escaped, line) for line in text.split("\n"))
    return _UNSAFE.sub(_escaped, text)


_ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc`, its causes and contexts, and the members of exception groups, each once."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo:
        current = todo.pop()
        if any(current is s for s in seen):
            continue
        seen.append(current)
        todo += [e for e in (current.__cause__, current.__context__) if e is not None]
        todo += list(getattr(current, "exceptions", ()))
    return seen


def _messages(exc: BaseException) -> list[str]:
    """What an exception of the chain says in its traceback's text: its message, its notes."""
    try:
        said = [str(exc)]
    except Exception:  # noqa: BLE001 - a broken __str__ is the traceback module's to show
        said = []
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list | tuple):
        said += [note for note in notes if isinstance(note, str)]
    return said


def _safe_traceback(text: str, exc: BaseException | None) -> str:
    """A traceback's `text` with its lines kept: the messages of `exc`'s chain escaped in it
    whole (a newline in one is no line of the traceback), other control characters too."""
    if exc is not None:
        for each in _chain(exc):
            for said in _messages(each):
                safe = escape_controls(said)
                if safe != said:
                    text = text.replace(said, safe)
    return escape_controls(text, keep_newlines=True)


class SafeFormatter(logging.Formatter):
    """A `logging.Formatter` that writes the message (its arguments put in) on one line,
    its control characters escaped (`escape_controls`). The rest of the record is the
    program's own and left alone; a traceback keeps its lines, the messages of its
    exceptions (which may quote a request) escaped in it, other control characters too.
    The record itself is not changed (other handlers, the page's warning list, see it as
    logged)."""

    def format(self, record: logging.LogRecord) -> str:
        shown = copy.copy(record)
        if shown.exc_info and not shown.exc_text:
            shown.exc_text = self.formatException(shown.exc_info)
        if shown.exc_text:
            exc = shown.exc_info[1] if shown.exc_info else None
            shown.exc_text = _safe_traceback(shown.exc_text, exc)
        return super().format(shown)

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = escape_controls(record.message)  # the copy `format` made
        return super().formatMessage(record)


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
    handler.setFormatter(SafeFormatter(fmt))
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
