"""Reading Wyoming events defensively.

The wyoming library's reader trusts its peer: a header that is JSON but not an object, a
missing ``type``, a huge ``data_length`` or JSON nested 100,000 deep (`RecursionError`)
raise or allocate without limit. A server facing
the network reads with limits instead and reports what was wrong, so that one bad client
gets an ``error`` and a closed connection while the others go on.

It also bounds time: a connection may sit idle between events as long as it likes (Home
Assistant keeps its connections), but once an event's first byte has come the rest must
follow within `EventLimits.event_timeout` seconds, so that a client dribbling a header
cannot hold a connection and its buffer for ever.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from wyoming.event import Event

from .errors import HayakoeError
from .json_depth import MAX_JSON_DEPTH, JsonDepthError, loads_bounded

__all__ = ["BadEvent", "EventLimits", "EventTimeout", "EventTooLarge", "read_event"]


class BadEvent(HayakoeError):
    """The peer sent something that is not a Wyoming event; the connection cannot go on."""

    code = "bad-event"


class EventTooLarge(BadEvent):
    """An event larger than the server accepts."""

    code = "event-too-large"


class EventTimeout(BadEvent):
    """An event begun but not finished in time."""

    code = "event-timeout"


@dataclass(frozen=True)
class EventLimits:
    """Limits for one event: bytes of its header line, data block and payload; seconds for
    the rest of an event once it has begun, and for one write to the peer."""

    max_data: int = 1 << 20
    max_payload: int = 1 << 20
    max_header: int = 64 << 10
    """Longest header line. Today's wyoming library sends an event's data in a block of its
    own after a header of about 100 bytes; the room left is for a peer that inlines a short
    event's data in the header, as the protocol allows (``data`` merged with the block)."""
    event_timeout: float | None = None
    """Seconds an event may take to arrive once its first byte has come; None: no limit."""
    write_timeout: float | None = None
    """Seconds one event may take to go out while the peer reads nothing; past it the
    peer is taken as gone. None: no limit."""

    @property
    def max_line(self) -> int:
        """The header line limit (the stream reader's ``limit``)."""
        return self.max_header


def _length(header: dict[str, Any], key: str, limit: int) -> int:
    value = header.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadEvent(f"{key} must be a non-negative integer, got {value!r}")
    if value > limit:
        raise EventTooLarge(f"{key} {value} exceeds the limit of {limit} bytes")
    return value


def _json(raw: bytes, what: str) -> object:
    """`raw` as JSON text in UTF-8 (Wyoming's encoding; `json.loads` of bytes would guess
    UTF-16 from a leading ``\\xff\\xfe``), or `BadEvent` naming what is wrong."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.end]
        raise BadEvent(
            f"{what} is not valid UTF-8: invalid byte(s) {bad!r} at offset {exc.start}"
        ) from None
    try:
        return loads_bounded(text, MAX_JSON_DEPTH)
    except JsonDepthError:
        raise BadEvent(f"{what} nests JSON deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:
        raise BadEvent(f"{what} is not JSON: {exc}") from None


async def read_event(reader: asyncio.StreamReader, limits: EventLimits) -> Event | None:
    """The next event, or None when the peer has gone (EOF, reset, cut mid-event).

    Waits for an event's first byte without limit, then for the rest of it at most
    `limits.event_timeout` seconds (`EventTimeout`). Raises `BadEvent` (or `EventTooLarge`)
    for anything that is not a valid event. The reader's own limit must be at least
    `limits.max_line`.
    """
    try:
        first = await reader.readexactly(1)
    except (ConnectionError, asyncio.IncompleteReadError):
        return None
    if limits.event_timeout is None:
        return await _read_rest(first, reader, limits)
    try:
        return await asyncio.wait_for(_read_rest(first, reader, limits), limits.event_timeout)
    except asyncio.TimeoutError:
        raise EventTimeout(
            f"event not complete {limits.event_timeout:g} s after its first byte"
        ) from None


async def _read_rest(
    first: bytes, reader: asyncio.StreamReader, limits: EventLimits
) -> Event | None:
    """The event whose first byte is `first`."""
    try:
        line = first if first == b"\n" else first + await reader.readline()
    except ValueError as exc:  # asyncio: line longer than the reader's limit
        raise EventTooLarge(f"event header longer than {limits.max_line} bytes") from exc
    except (ConnectionError, asyncio.IncompleteReadError):
        return None
    if not line.endswith(b"\n"):
        return None  # EOF in the middle of a header
    if len(line) > limits.max_line:
        raise EventTooLarge(f"event header longer than {limits.max_line} bytes")
    header = _json(line, "event header")
    if not isinstance(header, dict):
        raise BadEvent(f"event header must be a JSON object, got {type(header).__name__}")
    event_type = header.get("type")
    if not isinstance(event_type, str) or not event_type:
        raise BadEvent("event header has no 'type' string")
    data = header.get("data")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise BadEvent(f"'data' of {event_type!r} must be a JSON object")
    data_length = _length(header, "data_length", limits.max_data)
    payload_length = _length(header, "payload_length", limits.max_payload)
    try:
        if data_length:
            block = await reader.readexactly(data_length)
            extra = _json(block, f"data block of {event_type!r}")
            if not isinstance(extra, dict):
                raise BadEvent(f"data block of {event_type!r} must be a JSON object")
            data = {**data, **extra}
        payload = await reader.readexactly(payload_length) if payload_length else None
    except (ConnectionError, asyncio.IncompleteReadError):
        return None
    return Event(type=event_type, data=data, payload=payload)
