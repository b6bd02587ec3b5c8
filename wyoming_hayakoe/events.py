"""Reading Wyoming events defensively.

The wyoming library's reader trusts its peer: a header that is JSON but not an object, a
missing ``type``, a huge ``data_length`` or JSON nested 100,000 deep (`RecursionError`)
raise or allocate without limit. A server facing
the network reads with limits instead and reports what was wrong, so that one bad client
gets an ``error`` and a closed connection while the others go on.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from wyoming.event import Event

from .json_depth import MAX_JSON_DEPTH, JsonDepthError, loads_bounded

__all__ = ["BadEvent", "EventLimits", "EventTooLarge", "read_event"]


class BadEvent(Exception):
    """The peer sent something that is not a Wyoming event; the connection cannot go on."""

    code = "bad-event"


class EventTooLarge(BadEvent):
    """An event larger than the server accepts."""

    code = "event-too-large"


@dataclass(frozen=True)
class EventLimits:
    """Byte limits for one event's header line, data block and payload."""

    max_data: int = 1 << 20
    max_payload: int = 1 << 20

    @property
    def max_line(self) -> int:
        """Header line limit: data may be inlined in the header."""
        return self.max_data + (64 << 10)


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

    Raises `BadEvent` (or `EventTooLarge`) for anything that is not a valid event.
    The reader's own limit must be at least `limits.max_line`.
    """
    try:
        line = await reader.readline()
    except ValueError as exc:  # asyncio: line longer than the reader's limit
        raise EventTooLarge(f"event header longer than {limits.max_line} bytes") from exc
    except (ConnectionError, asyncio.IncompleteReadError):
        return None
    if not line:
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
