"""Bad input and faults: garbage events, huge texts, clients that vanish mid-synthesis."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from wyoming.event import async_read_event, async_write_event
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop

from engine import Speaker
from engine.openjtalk import OpenJTalkVoice
from engine.voice_backend import AudioPiece, ListenerView, SynthesisOptions
from tests.helpers.speakers import until_unlocked

pytestmark = pytest.mark.timeout(180)

THREE = "こんにちは。今日はいい天気ですね。散歩に行きましょう！"
LONG = (THREE * 800)[:20_000]  # 20,000 characters, ~1,200 sentences


class CountingVoice:
    """The embedded voice, counting the pieces it has rendered (to watch synthesis progress)."""

    def __init__(self) -> None:
        self.inner = OpenJTalkVoice()
        self.rendered = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def render(
        self,
        sentences: Sequence[str],
        options: SynthesisOptions,
        listener: ListenerView | None = None,
    ) -> Iterator[AudioPiece]:
        for piece in self.inner.render(sentences, options, listener):
            self.rendered += 1
            yield piece


async def _raw(server: Any, rcvbuf: int | None = None):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", server.port))
    return await asyncio.open_connection(sock=sock)


async def _reply_then_eof(reader: asyncio.StreamReader) -> list[str]:
    types = []
    try:
        while (event := await asyncio.wait_for(async_read_event(reader), 10)) is not None:
            types.append(event.type)
    except ConnectionError:
        pass
    return types


@pytest.mark.parametrize(
    "garbage",
    [
        b"this is not json\n",
        b"[1, 2, 3]\n",
        b'{"data": {"text": "no type"}}\n',
        b'{"type": "synthesize", "data": "not an object"}\n',
        b'{"type": "synthesize", "data_length": 99999999999}\n',
        b'{"type": "synthesize", "data_length": 5}\nnotjs',
        b'{"type": "audio-chunk", "payload_length": -3}\n',
    ],
)
async def test_garbage_gets_an_error_and_a_closed_connection(
    start_server, wy, embedded, garbage
) -> None:
    server = await start_server()
    reader, writer = await _raw(server)
    writer.write(garbage)
    await writer.drain()
    types = await _reply_then_eof(reader)
    writer.close()
    assert types == ["error"]
    events = await _synth(wy, server, "はい。")  # the server goes on
    assert wy.pcm(events) == embedded.generate("はい。").pcm_bytes()


@pytest.mark.parametrize(
    "garbage",
    [
        b'\xff\xfe{"type": "synthesize"}\n',  # json.loads(bytes) would call this UTF-16
        b'{"type": "synthesize", "data_length": 4}\n"\xc3("',
    ],
)
async def test_bytes_that_are_not_utf8_are_named_as_such(start_server, wy, garbage) -> None:
    server = await start_server()
    reader, writer = await _raw(server)
    writer.write(garbage)
    await writer.drain()
    event = await asyncio.wait_for(async_read_event(reader), 10)
    writer.close()
    assert event is not None and event.type == "error"
    assert "not valid UTF-8" in event.data["text"] and "UTF-16" not in event.data["text"]
    assert event.data["code"] == "bad-event"
    assert wy.pcm(await _synth(wy, server, "はい。"))  # the server goes on


async def test_an_oversized_event_is_refused_while_others_are_served(
    start_server, wy, embedded
) -> None:
    server = await start_server()
    normal = asyncio.create_task(_synth(wy, server, THREE * 3))
    reader, writer = await _raw(server)
    header = {"type": "synthesize", "data": {"text": "あ" * (3 << 20)}}
    writer.write(json.dumps(header).encode() + b"\n")  # ~18 MB on one line
    try:
        await asyncio.wait_for(writer.drain(), 10)
    except ConnectionError:  # the server may cut us off before we finish writing
        pass
    types = await _reply_then_eof(reader)
    writer.close()
    assert types in (["error"], [])  # error sent; the client may see the reset first
    assert wy.pcm(await normal) == embedded.generate(THREE * 3).pcm_bytes()


async def _synth(wy, server, text: str):
    async with wy.client(server) as client:
        await client.write_event(Synthesize(text=text).event())
        return await wy.read_until(client, "audio-stop")


@pytest.mark.slow
async def test_fifty_mid_stream_disconnects_then_a_normal_request(
    start_server, wy, embedded, caplog
) -> None:
    server = await start_server()
    caplog.set_level(logging.DEBUG)

    async def vanish(kind: int) -> None:
        reader, writer = await _raw(server)
        if kind == 0:  # streaming, gone after the first audio
            await async_write_event(SynthesizeStart().event(), writer)
            await async_write_event(SynthesizeChunk(text=THREE * 5).event(), writer)
            while (await async_read_event(reader)).type != "audio-chunk":
                pass
        elif kind == 1:  # one-shot, gone after the first audio
            await async_write_event(Synthesize(text=THREE * 5).event(), writer)
            while (await async_read_event(reader)).type != "audio-chunk":
                pass
        else:  # gone right after asking
            await async_write_event(SynthesizeStart().event(), writer)
            await async_write_event(SynthesizeChunk(text=THREE * 5).event(), writer)
        writer.transport.abort()  # a reset, not a polite close

    for batch in range(10):
        await asyncio.gather(*(vanish((batch * 5 + i) % 3) for i in range(5)))
    started = time.monotonic()
    events = await _synth(wy, server, "はい、元気です。")
    assert wy.pcm(events) == embedded.generate("はい、元気です。").pcm_bytes()
    assert time.monotonic() - started < 10
    await until_unlocked(embedded)
    noisy = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert noisy == [], [r.getMessage() for r in noisy]
    assert not any("Traceback" in r.getMessage() for r in caplog.records)
    assert not any(r.name == "asyncio" and r.levelno >= logging.WARNING for r in caplog.records)


@pytest.mark.slow
@pytest.mark.parametrize("streaming", [False, True])
async def test_twenty_thousand_characters_stream_with_bounded_work(start_server, streaming) -> None:
    voice = CountingVoice()
    speaker = Speaker(voice)
    # a bound far above the text: this is about backpressure, not the length bound
    server = await start_server(speakers={voice.name: speaker}, max_text_length=len(LONG))
    reader, writer = await _raw(server, rcvbuf=16384)
    started = time.monotonic()
    if streaming:
        await async_write_event(SynthesizeStart().event(), writer)
        for i in range(0, len(LONG), 100):
            await async_write_event(SynthesizeChunk(text=LONG[i : i + 100]).event(), writer)
        await async_write_event(SynthesizeStop().event(), writer)
    else:
        await async_write_event(Synthesize(text=LONG).event(), writer)
    while (await asyncio.wait_for(async_read_event(reader), 10)).type != "audio-chunk":
        pass
    first_audio = time.monotonic() - started
    assert first_audio < 3.0
    # Stop reading: synthesis must stall (backpressure), far from the ~1,200 sentences.
    counts = []
    for _ in range(60):  # on a busy machine the socket buffers take longer to fill
        await asyncio.sleep(0.5)
        counts.append(voice.rendered)
        if len(counts) >= 3 and counts[-1] == counts[-3]:
            break
    assert counts[-1] == counts[-3], f"synthesis did not stall: {counts}"
    assert counts[-1] < 200, counts
    writer.transport.abort()
    await until_unlocked(speaker)


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_request_cut_at_shutdown_gets_an_error_before_the_close(
    start_server, wy, caplog, streamed: bool
) -> None:
    """A request still speaking when the drain timeout ends: the client reads an ``error``
    (``shutting-down``) and then the end of the connection, not a bare close; the log says
    which voice was cut and how much it had said."""
    server = await start_server()
    async with wy.client(server) as client:
        if streamed:
            await client.write_event(SynthesizeStart().event())
            await client.write_event(SynthesizeChunk(text=THREE * 100).event())
        else:
            await client.write_event(Synthesize(text=THREE * 100).event())  # minutes of audio
        await wy.read_until(client, "audio-chunk")
        types: list[str] = []
        errors = []

        async def read_to_the_end() -> None:  # keeps reading, so nothing blocks the server
            while (event := await client.read_event()) is not None:
                types.append(event.type)
                if event.type == "error":
                    errors.append(event.data)

        reading = asyncio.create_task(read_to_the_end())
        with caplog.at_level(logging.WARNING, logger="wyoming_hayakoe"):
            assert await server.drain(timeout=0.1) is False
            await server.stop()
            await asyncio.wait_for(reading, 20)
    assert types[-1] == "error" and "audio-stop" not in types
    assert errors == [errors[-1]] and errors[-1]["code"] == "shutting-down"
    assert "cut off after" in errors[-1]["text"]
    cut = [r for r in caplog.records if "cut off after" in r.getMessage()]
    assert len(cut) == 1 and cut[0].levelno == logging.WARNING
    assert "openjtalk-mei" in cut[0].getMessage() and f"{len(THREE) * 100} characters" in (
        cut[0].getMessage()
    )
