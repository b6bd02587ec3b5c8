"""Both HTTP ports (the page, the engine APIs) against slow, stuck and greedy clients
(issue 54, findings 5, 8 and 11), through `wyoming_hayakoe.net.http_guard`: a request whose
headers or body are dribbled is closed after its timeout; connections past the cap get 503
while the others are served; a streamed answer its client does not read frees the voice
after the write timeout; ``/audio_query?text=`` has room for 4,096 Japanese characters."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time

import aiohttp
import pytest

from engine import EMBEDDED_VOICE_NAME
from wyoming_hayakoe.apis.options import EngineApiSettings
from wyoming_hayakoe.net.http_guard import write_bounded
from wyoming_hayakoe.net.options import ConnectionLimits
from wyoming_hayakoe.web.options import HttpSettings

pytestmark = pytest.mark.timeout(180)

PORTS = ["page", "engine-api"]
SENTENCE = "今日はとても良い天気なので、公園まで歩いて行きましょう。"


async def _server(start_server, **limits: float):
    return await start_server(
        http=HttpSettings(port=0),
        engine_api=EngineApiSettings(port=0),
        connections=ConnectionLimits(**limits),  # type: ignore[arg-type]
    )


def _port(server, which: str) -> int:
    port = server.web.port if which == "page" else server.engine_api.port
    assert port is not None
    return int(port)


async def _connect(port: int, rcvbuf: int | None = None):
    sock = socket.socket()
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    return await asyncio.open_connection(sock=sock)


async def _dribble(writer: asyncio.StreamWriter, data: bytes, every: float = 0.2) -> None:
    """The client's side of a slow request: one byte per `every` seconds, until closed."""
    with contextlib.suppress(ConnectionError):
        for i in range(len(data)):
            writer.write(data[i : i + 1])
            await writer.drain()
            await asyncio.sleep(every)


async def _closed_within(reader: asyncio.StreamReader, timeout: float) -> bytes:
    """All the server sends until it closes the connection; fails past `timeout` seconds."""
    received = b""
    deadline = time.monotonic() + timeout
    with contextlib.suppress(ConnectionError):
        while chunk := await asyncio.wait_for(reader.read(65536), deadline - time.monotonic()):
            received += chunk
    return received


async def _answer(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """One HTTP/1.1 answer with a Content-Length: status and body."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
    lines = head.decode("latin-1").split("\r\n")
    length = next(
        int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length")
    )
    return int(lines[0].split()[1]), await asyncio.wait_for(reader.readexactly(length), 20)


async def _get(port: int, path: str) -> int:
    async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{port}{path}") as r:
        await r.read()
        return r.status


def _head(port: int, method: str, path: str, length: int | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    if length is not None:
        lines += [
            "Content-Type: application/json",
            f"Origin: http://127.0.0.1:{port}",
            f"Content-Length: {length}",
        ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.mark.parametrize("which", PORTS)
async def test_headers_dribbled_are_closed_after_the_header_timeout(start_server, which) -> None:
    server = await _server(start_server, http_header_timeout=1.0)
    port = _port(server, which)
    reader, writer = await _connect(port)
    head = _head(port, "GET", "/version")[:-2]  # its last blank line never comes
    dribbler = asyncio.create_task(_dribble(writer, head + b"X-Slow: " + b"a" * 500))
    started = time.monotonic()
    received = await _closed_within(reader, timeout=12)
    assert time.monotonic() - started < 10
    assert received.startswith(b"HTTP/1.1 408"), received[:80]
    dribbler.cancel()
    writer.close()
    assert await _get(port, "/") in (200, 404)  # the port goes on


@pytest.mark.parametrize(
    ("which", "path"), [("page", "/api/reading"), ("engine-api", "/v1/audio/speech")]
)
async def test_a_body_dribbled_is_closed_after_the_body_timeout(start_server, which, path, caplog):
    server = await _server(start_server, http_body_timeout=1.0, http_body_min_rate=1024)
    port = _port(server, which)
    body = json.dumps({"text": "あ" * 100, "input": "あ", "voice": "x"}).encode()
    reader, writer = await _connect(port)
    writer.write(_head(port, "POST", path, len(body)))
    dribbler = asyncio.create_task(_dribble(writer, body))
    started = time.monotonic()
    await _closed_within(reader, timeout=12)
    assert time.monotonic() - started < 10
    dribbler.cancel()
    writer.close()
    status, _ = await _answer_of(port, path, body)
    assert status != 408  # a body sent at once is answered as ever
    assert _one_line_no_error(caplog, "request body did not arrive")


async def _answer_of(port: int, path: str, body: bytes) -> tuple[int, bytes]:
    reader, writer = await _connect(port)
    writer.write(_head(port, "POST", path, len(body)) + body)
    try:
        return await _answer(reader)
    finally:
        writer.close()


@pytest.mark.parametrize("which", PORTS)
async def test_connections_past_the_cap_get_503_the_others_served(start_server, which) -> None:
    server = await _server(start_server, http_max_connections=2)
    port = _port(server, which)
    held = [await _connect(port) for _ in range(2)]
    for reader, writer in held:  # each one served, and kept alive
        writer.write(_head(port, "GET", "/version"))
        assert (await _answer(reader))[0] in (200, 404)
    reader, writer = await _connect(port)
    received = await _closed_within(reader, timeout=10)
    assert received.startswith(b"HTTP/1.1 503"), received[:80]
    writer.close()
    reader, writer = held[0]  # the held ones still answer
    writer.write(_head(port, "GET", "/version"))
    assert (await _answer(reader))[0] in (200, 404)
    for _, w in held:
        w.close()
    deadline = time.monotonic() + 10
    while True:  # once they are gone, a new one is served
        try:
            status = await _get(port, "/version")
        except aiohttp.ClientError:
            status = 503
        if status != 503:
            break
        assert time.monotonic() < deadline, "still refused after the others closed"
        await asyncio.sleep(0.05)


async def test_a_stream_nobody_reads_frees_the_voice(start_server, caplog) -> None:
    server = await _server(start_server, write_timeout=1.0)
    port = _port(server, "engine-api")
    body = json.dumps(
        {
            "model": "tts-1",
            "voice": EMBEDDED_VOICE_NAME,
            "input": SENTENCE * 100,
            "response_format": "pcm",
        }
    ).encode()
    _, stuck = await _connect(port, rcvbuf=4096)
    stuck.write(_head(port, "POST", "/v1/audio/speech", len(body)) + body)  # never read
    await _voice_taken(server)
    started = time.monotonic()
    small = json.dumps(
        {
            "model": "tts-1",
            "voice": EMBEDDED_VOICE_NAME,
            "input": "はい。",
            "response_format": "wav",
        }
    )
    async with (
        aiohttp.ClientSession() as s,
        s.post(f"http://127.0.0.1:{port}/v1/audio/speech", data=small) as r,
    ):
        assert r.status == 200
        assert (await asyncio.wait_for(r.read(), 60))[:4] == b"RIFF"
    waited = time.monotonic() - started
    stuck.close()
    assert waited < 45, f"the second request waited {waited:.1f} s"
    assert _one_line_no_error(caplog, "read nothing for 1 s")


def _one_line_no_error(caplog, text: str) -> bool:
    """The guard said `text` in one line, and nothing was logged as an error."""
    lines = [r for r in caplog.records if text in r.getMessage()]
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors
    return len(lines) == 1


async def _voice_taken(server) -> None:
    """Once the stuck request speaks (it holds the voice before the next one asks)."""
    lock = server.context.catalog.speakers[EMBEDDED_VOICE_NAME].lock
    deadline = time.monotonic() + 30
    while not lock.locked():
        assert time.monotonic() < deadline, "the first request never started"
        await asyncio.sleep(0.02)


async def test_audio_query_takes_4096_japanese_characters_in_its_url(start_server) -> None:
    server = await _server(start_server)
    base = f"http://127.0.0.1:{_port(server, 'engine-api')}"
    text = (SENTENCE * 200)[:4096]
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{base}/speakers") as r:
            sid = (await r.json())[0]["styles"][0]["id"]
        async with s.post(f"{base}/audio_query", params={"speaker": sid, "text": text}) as r:
            assert len(str(r.url).encode()) > 4096 * 9  # as sent: 9 bytes a character
            assert r.status == 200, (await r.text())[:200]
            assert (await r.json())["accent_phrases"]
        async with s.post(f"{base}/audio_query", params={"speaker": sid, "text": text * 2}) as r:
            assert r.status == 400  # twice as long: still refused by the line limit


async def test_write_bounded_raises_when_the_client_reads_nothing() -> None:
    from aiohttp import web

    from tests.helpers.net import free_port

    outcome: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()

    async def stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        try:
            for _ in range(10_000):
                await write_bounded(response, b"\0" * 65536, 0.5)
        except ConnectionError as exc:
            outcome.set_result(exc)
            raise
        outcome.set_result(None)
        return response

    app = web.Application()
    app.router.add_get("/", stream)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        reader, writer = await _connect(port, rcvbuf=4096)
        writer.write(_head(port, "GET", "/"))
        exc = await asyncio.wait_for(outcome, 30)
        assert type(exc).__name__ == "ClientStalled"
        writer.close()
    finally:
        await runner.cleanup()
