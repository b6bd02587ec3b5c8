"""`wyoming_hayakoe.client` against the real server (its handler on loopback, tcp and unix)
and against stand-in peers that misbehave (silent, hanging up, not Wyoming)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from engine import EMBEDDED_VOICE_NAME, Speaker
from tests.helpers.net import free_port
from wyoming_hayakoe.client import (
    AddressError,
    ConnectError,
    ConnectionClosed,
    NoAnswer,
    ProtocolError,
    ServerAddress,
    ServerError,
    WyomingClient,
    deltas_of,
    installed_voices,
)

TEXT = "こんにちは。今日は一日中いい天気になるそうですので、洗濯物を外に干しておきますね。"


def _client(server, timeout: float = 60.0) -> WyomingClient:
    return WyomingClient(f"tcp://127.0.0.1:{server.port}", timeout=timeout)


class Recorder:
    """An `AudioListener` that keeps what it was handed."""

    def __init__(self) -> None:
        self.formats: list[tuple[int, int, int]] = []
        self.pcm: list[bytes] = []

    def start(self, rate: int, width: int, channels: int) -> None:
        self.formats.append((rate, width, channels))

    def write(self, pcm: bytes) -> None:
        assert self.formats, "write before start"
        self.pcm.append(pcm)


# -- against the real server ---------------------------------------------------------------
async def test_describe_lists_the_served_voices_and_their_styles(
    start_server, embedded: Speaker
) -> None:
    server = await start_server()
    info = await _client(server).describe()
    voices = {voice.name: voice for voice in installed_voices(info)}
    assert EMBEDDED_VOICE_NAME in voices
    styles = [s.name for s in voices[EMBEDDED_VOICE_NAME].speakers or []]
    assert styles == embedded.styles and len(styles) > 1


async def test_speak_returns_the_servers_one_shot_audio(start_server, embedded: Speaker) -> None:
    server = await start_server()
    recorder = Recorder()
    spoken = await _client(server).speak(TEXT, listener=recorder)
    expected = embedded.generate(TEXT)
    assert (spoken.rate, spoken.width, spoken.channels) == (expected.sr, 2, 1)
    assert spoken.pcm == expected.pcm_bytes()
    assert spoken.seconds == pytest.approx(expected.duration, abs=1e-3)
    assert 2.0 < spoken.seconds < 10.0 and spoken.rms > 300
    # when it arrived: every chunk counted, in order, first audio before the end
    assert sum(chunk.frames for chunk in spoken.chunks) == spoken.frames
    assert len(spoken.chunks) > 1
    assert list(spoken.chunk_times) == sorted(spoken.chunk_times)
    assert spoken.first_audio_s is not None
    assert 0 < spoken.first_audio_s <= spoken.chunk_times[-1] <= spoken.total_s
    assert spoken.text_sent_s <= spoken.first_audio_s
    # the listener got the same audio as it arrived, the format once
    assert recorder.formats == [(spoken.rate, 2, 1)]
    assert b"".join(recorder.pcm) == spoken.pcm


async def test_speak_names_the_voice_and_style(start_server, embedded: Speaker) -> None:
    server = await start_server()
    client = _client(server)
    high = await client.speak("はい。", voice=EMBEDDED_VOICE_NAME, style="High")
    named = await client.speak("はい。", voice=f"{EMBEDDED_VOICE_NAME}:High")
    assert high.pcm == named.pcm == embedded.generate("はい。", style="High").pcm_bytes()
    assert high.pcm != embedded.generate("はい。").pcm_bytes()


async def test_speak_streamed_sends_deltas_at_a_pace_while_reading(start_server) -> None:
    server = await start_server()
    client = _client(server)
    whole = await client.speak(TEXT)
    deltas = deltas_of(TEXT, 3)
    interval = 0.15
    spoken = await client.speak_streamed(deltas, interval_s=interval)
    assert "".join(deltas) == TEXT and len(deltas) > 10
    # the text took as long to send as the schedule says ...
    assert spoken.text_sent_s >= (len(deltas) - 1) * interval
    # ... and audio was read meanwhile: the first sentence is heard before the text is done
    assert spoken.first_audio_s is not None and spoken.first_audio_s < spoken.text_sent_s
    assert spoken.total_s >= spoken.text_sent_s
    assert spoken.rate == whole.rate
    assert spoken.seconds == pytest.approx(whole.seconds, rel=0.1)


async def test_speak_streamed_takes_async_deltas_and_a_voice(start_server, embedded) -> None:
    server = await start_server()

    async def deltas() -> AsyncIterator[str]:
        for delta in ("はい。", "そうです。"):
            yield delta

    spoken = await _client(server).speak_streamed(deltas(), voice=EMBEDDED_VOICE_NAME, style="High")
    alone = embedded.generate("はい。そうです。", style="High")
    assert spoken.rate == alone.sr
    assert spoken.seconds == pytest.approx(alone.duration, rel=0.1)
    assert spoken.rms > 300


async def test_an_error_event_is_raised_with_the_servers_text(start_server) -> None:
    server = await start_server(max_text_length=5)
    client = _client(server)
    with pytest.raises(ServerError) as raised:
        await client.speak(TEXT)
    assert raised.value.code == "text-too-long"
    assert "text too long" in raised.value.text and "limit 5" in raised.value.text
    assert f"127.0.0.1:{server.port}" in str(raised.value)
    with pytest.raises(ServerError) as streamed:
        await client.speak_streamed(deltas_of(TEXT, 4))
    assert streamed.value.code == "text-too-long"
    assert "streamed text too long" in streamed.value.text


async def test_a_unix_socket(start_server, tmp_path: Path, embedded: Speaker) -> None:
    path = tmp_path / "hayakoe.sock"
    await start_server(uri=f"unix://{path}")
    client = WyomingClient(f"unix://{path}", timeout=60)
    assert client.label == str(path)
    assert EMBEDDED_VOICE_NAME in {v.name for v in installed_voices(await client.describe())}
    assert (await client.speak("はい。")).pcm == embedded.generate("はい。").pcm_bytes()


# -- against peers that misbehave ----------------------------------------------------------
Behaviour = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _peer(behave: Behaviour) -> tuple[asyncio.Server, WyomingClient, asyncio.Event]:
    """A TCP peer on loopback; the event is set once it has read the client's request."""
    asked = asyncio.Event()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        asked.set()
        await behave(reader, writer)

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, WyomingClient(f"tcp://127.0.0.1:{port}", timeout=0.5), asked


async def test_silence_times_out_with_the_timeout_in_the_message() -> None:
    release = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await release.wait()
        writer.close()

    server, client, asked = await _peer(silent)
    try:
        started = time.monotonic()
        with pytest.raises(NoAnswer, match=r"no answer from 127\.0\.0\.1:\d+ within 0\.5 s"):
            await client.speak("はい。")
        assert asked.is_set()  # it did reach the peer: the wait was for the answer
        assert time.monotonic() - started < 30
        with pytest.raises(TimeoutError):  # NoAnswer is a TimeoutError too
            await client.describe()
    finally:
        release.set()
        server.close()


@pytest.mark.parametrize(
    ("answer", "error", "words"),
    [
        (b"", ConnectionClosed, "closed the connection before audio-stop"),
        (b"this is not json\n", ProtocolError, "not a Wyoming event"),
        (
            b'{"type": "audio-chunk", "data": {"rate": 16000, "width": 2, "channels": 1}}\n',
            ProtocolError,
            "audio before audio-start",
        ),
    ],
    ids=["hangs-up", "garbage", "no-audio-start"],
)
async def test_a_broken_answer_names_what_was_wrong(answer: bytes, error, words: str) -> None:
    async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(answer)
        await writer.drain()
        writer.close()

    server, client, _ = await _peer(reply)
    try:
        with pytest.raises(error, match=words):
            await client.speak("はい。")
    finally:
        server.close()


async def test_connection_refused_names_the_address() -> None:
    port = free_port()
    client = WyomingClient(f"tcp://127.0.0.1:{port}", timeout=5)
    with pytest.raises(
        ConnectError, match=rf"cannot connect to 127\.0\.0\.1:{port}: connection refused"
    ):
        await client.describe()
    with pytest.raises(ConnectError, match="is gone"):  # its process died: no retries
        await client.wait_until_answering(60, alive=lambda: False)
    started = time.monotonic()
    with pytest.raises(NoAnswer, match="connection refused"):  # the last failure is named
        await client.wait_until_answering(0.3, step=0.05)
    assert time.monotonic() - started < 30


async def test_wait_until_answering_returns_once_the_server_listens(start_server) -> None:
    server = await start_server()
    info = await _client(server).wait_until_answering(30)
    assert installed_voices(info)


@pytest.mark.parametrize(
    ("uri", "address"),
    [
        ("tcp://speaker.local:10200", ServerAddress("speaker.local", 10200)),
        ("tcp://[::1]:10200", ServerAddress("::1", 10200)),
        ("unix:///run/hayakoe.sock", ServerAddress(path="/run/hayakoe.sock")),
    ],
)
def test_uris(uri: str, address: ServerAddress) -> None:
    assert ServerAddress.parse(uri) == address


@pytest.mark.parametrize(
    "uri", ["http://host:80", "tcp://host", "tcp://:10200", "tcp://host:port", "unix://", "host"]
)
def test_bad_uris_are_refused(uri: str) -> None:
    with pytest.raises(AddressError, match="expected tcp://HOST:PORT"):
        WyomingClient(uri)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="timeout"):
        WyomingClient("tcp://host:1", timeout=0)
    with pytest.raises(ValueError, match="at least 1"):
        deltas_of("はい", 0)
    assert deltas_of("あいうえお", 2) == ["あい", "うえ", "お"]


def test_importing_the_client_loads_no_engine() -> None:
    """The health check imports it every 30 s: the engine (numpy, …) would cost seconds on a
    small board."""
    probe = (
        "import sys, wyoming_hayakoe.client; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'engine', 'numpy'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "[]"
