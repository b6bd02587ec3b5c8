"""The connection limits' flags → `ConnectionLimits` (part of `wyoming_hayakoe.settings.Settings`).

One table of what a slow, stuck or greedy client may hold on each port; `docs/limits.md`
lists them with their defaults.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from ..flags import positive_float, positive_int

__all__ = ["ConnectionLimits", "add_connection_arguments", "connection_limits_from_args"]

KIB = 1024


@dataclass(frozen=True)
class ConnectionLimits:
    """What one client may hold, per port; every figure positive."""

    max_connections: int = 100
    """Wyoming connections open at once; one more is closed at once (with an ``error``)."""
    max_event_header_bytes: int = 64 * KIB
    """Longest Wyoming event header line. Today's clients send the event's data in a block
    of its own after a header of about 100 bytes; the room left is for a client that inlines
    a short event's data in the header, as the protocol allows."""
    event_timeout: float = 30.0
    """Seconds a Wyoming event may take to arrive once its first byte has come (header, data
    and payload); a connection idle between events may stay open as long as it likes."""
    write_timeout: float = 30.0
    """Seconds one write to a client (a Wyoming event, a streamed HTTP answer's piece) may
    wait for the client to read; past it the client is taken as gone: its synthesis stops
    and its voice is free for the next request."""
    http_max_connections: int = 256
    """Connections open at once on each HTTP port (the page, the engine APIs); one more gets
    ``503`` and is closed."""
    http_header_timeout: float = 15.0
    """Seconds a request's line and headers may take to arrive, from the connection's start
    or the next request's first byte."""
    http_body_timeout: float = 30.0
    """Seconds a request body may take to arrive after its headers, plus a second for each
    `http_body_min_rate` bytes received (a large upload on a slow link goes on; a body
    dribbled a byte at a time does not)."""
    http_body_min_rate: int = 16 * KIB
    """Bytes per second that earn a body more time past `http_body_timeout`."""
    http_idle_timeout: float = 60.0
    """Seconds a kept-alive HTTP connection may wait for its next request."""


_FLAGS: tuple[tuple[str, Callable[[str], Callable[[str], float]], str, str], ...] = (
    (
        "--max-connections",
        positive_int,
        "N",
        "Wyoming connections open at once; one more gets an error and is closed",
    ),
    ("--max-event-header-bytes", positive_int, "BYTES", "longest Wyoming event header line"),
    (
        "--event-timeout",
        positive_float,
        "SECONDS",
        "a Wyoming event must arrive whole within this long of its first byte; idle "
        "connections between events stay open",
    ),
    (
        "--write-timeout",
        positive_float,
        "SECONDS",
        "a client that reads nothing for this long while audio waits for it is taken as "
        "gone: its synthesis stops and its voice is freed, on every port",
    ),
    (
        "--http-max-connections",
        positive_int,
        "N",
        "connections open at once on each HTTP port (the page, the engine APIs); one more gets 503",
    ),
    (
        "--http-header-timeout",
        positive_float,
        "SECONDS",
        "an HTTP request's line and headers must arrive within this long",
    ),
    (
        "--http-body-timeout",
        positive_float,
        "SECONDS",
        "an HTTP request body must arrive within this long after its headers, plus a second "
        "per --http-body-min-rate received",
    ),
    (
        "--http-body-min-rate",
        positive_int,
        "KIB_PER_S",
        "KiB of body that earn a request one more second",
    ),
    (
        "--http-idle-timeout",
        positive_float,
        "SECONDS",
        "a kept-alive HTTP connection is closed after this long without a request",
    ),
)
"""Each flag: its name (the field's, in dashes), its type's maker, metavar and help."""


def _field(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = ConnectionLimits()
    g = parser.add_argument_group(
        "connection limits (slow, stuck or greedy clients; see docs/limits.md)"
    )
    for flag, kind, metavar, text in _FLAGS:
        default = getattr(defaults, _field(flag))
        if flag == "--http-body-min-rate":
            default //= KIB
        g.add_argument(
            flag,
            type=kind(flag),
            default=default,
            metavar=metavar,
            help=text + " (default: %(default)s)",
        )


def connection_limits_from_args(args: argparse.Namespace) -> ConnectionLimits:
    values = {_field(flag): getattr(args, _field(flag)) for flag, *_ in _FLAGS}
    values["http_body_min_rate"] *= KIB
    return ConnectionLimits(**values)
