"""JSON nested 100,000 deep (issue 46, defect 11): `json_depth` refuses it without recursing;
on the Wyoming port it gets an ``error`` event and the server goes on serving."""

from __future__ import annotations

import asyncio
import json

import pytest
from wyoming.event import async_read_event

from wyoming_hayakoe.client import WyomingClient
from wyoming_hayakoe.json_depth import MAX_JSON_DEPTH, JsonDepthError, json_too_deep, loads_bounded
from wyoming_hayakoe.net.options import ConnectionLimits

pytestmark = pytest.mark.timeout(120)

DEEP = 100_000


def test_depth_is_counted_outside_strings_and_bounded() -> None:
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert loads_bounded(at_limit) is not None
    assert json_too_deep("[" + at_limit + "]")
    assert not json_too_deep(json.dumps({"text": "[" * 5000 + "{" * 5000}))
    escaped = '["\\"[[[[", '  # a string holding an escaped quote and brackets
    assert not json_too_deep(escaped * MAX_JSON_DEPTH + "1" + "]" * MAX_JSON_DEPTH)
    assert json_too_deep(escaped * (MAX_JSON_DEPTH + 1) + "1" + "]" * (MAX_JSON_DEPTH + 1))
    assert not json_too_deep(json.dumps([[i] for i in range(10_000)]))  # wide, not deep
    with pytest.raises(JsonDepthError):
        loads_bounded("[" * DEEP + "]" * DEEP)
    with pytest.raises(JsonDepthError):
        loads_bounded('{"a":' * DEEP + "1" + "}" * DEEP)
    with pytest.raises(ValueError):
        loads_bounded("{")


@pytest.mark.parametrize(
    "event",
    [
        b'{"type": "synthesize", "data": {"text": "x", "v": ' + b"[" * DEEP + b"]" * DEEP + b"}}\n",
        b"[" * DEEP + b"]" * DEEP + b"\n",
        b'{"type": "synthesize", "data_length": 200000}\n' + b"[" * DEEP + b"]" * DEEP,
    ],
    ids=["data", "header", "data-block"],
)
async def test_a_deep_event_gets_an_error_and_the_server_goes_on(start_server, event) -> None:
    # a header line this long is refused for its size by default: room for it, to reach depth
    server = await start_server(connections=ConnectionLimits(max_event_header_bytes=1 << 20))
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(event)
    await writer.drain()
    answer = await asyncio.wait_for(async_read_event(reader), 10)
    assert answer is not None and answer.type == "error", answer
    assert answer.data["code"] == "bad-event"
    assert f"deeper than {MAX_JSON_DEPTH} levels" in answer.data["text"], answer.data
    assert await asyncio.wait_for(reader.read(), 10) == b""  # then the connection closes
    writer.close()
    client = WyomingClient(f"tcp://127.0.0.1:{server.port}", timeout=30)
    spoken = await client.speak("はい。")  # the server goes on
    assert spoken.pcm
