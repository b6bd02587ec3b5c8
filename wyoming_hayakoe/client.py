"""A Wyoming text-to-speech client: ask a running server to describe itself or to speak.

The project's one client, used by ``say --server``, the container health check
(`docker/healthcheck.py`), the tests and the benchmarks::

    client = WyomingClient("tcp://127.0.0.1:10200", timeout=30)
    info = await client.describe()                       # wyoming.info.Info
    spoken = await client.speak("こんにちは。", voice="openjtalk-mei")
    spoken.rate, spoken.width, spoken.channels, spoken.pcm, spoken.seconds
    spoken.first_audio_s, spoken.chunks                  # when the audio arrived
    spoken = await client.speak_streamed(["こんに", "ちは。"], interval_s=0.1)

One-shot: ``synthesize`` → ``audio-start``, ``audio-chunk``s, ``audio-stop``. Streamed (what
Home Assistant sends for an LLM's reply): ``synthesize-start``, one ``synthesize-chunk`` per
text delta (back to back, or one every `interval_s` on a fixed schedule), the compatibility
``synthesize`` with the whole text, ``synthesize-stop`` → the audio … ``synthesize-stopped``.
The text is written while the audio is read, as a real client does. Every request opens its
own connection (``tcp://HOST:PORT`` or ``unix://PATH``).

Times are seconds since the request's first event was written, on `time.monotonic`.
``timeout`` bounds the connection and the wait for each next event. Failures raise a
`ClientError` whose message names the server; an ``error`` event from the server raises
`ServerError` with the server's text and code.

Events are read with the server's defensive reader (`wyoming_hayakoe.events`): a peer that
is not a Wyoming server is reported as such, not taken for a closed connection. This module
imports only the standard library and ``wyoming`` (the health check runs it every 30 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import time
from array import array
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_write_event
from wyoming.info import Describe, Info, TtsVoice
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

from .errors import HayakoeError
from .events import BadEvent, EventLimits, read_event

__all__ = [
    "AddressError",
    "AudioListener",
    "Chunk",
    "ClientError",
    "ConnectError",
    "ConnectionClosed",
    "DEFAULT_TIMEOUT_S",
    "NoAnswer",
    "ProtocolError",
    "ServerAddress",
    "ServerError",
    "Spoken",
    "WyomingClient",
    "deltas_of",
    "installed_voices",
]

DEFAULT_TIMEOUT_S = 120.0
"""Longest wait for the connection and for each next event."""

RECEIVE_LIMITS = EventLimits(max_data=4 << 20, max_payload=16 << 20)
"""What the client accepts from a server: an `info` listing many voices, big audio chunks."""


# -- errors --------------------------------------------------------------------------------
class ClientError(HayakoeError):
    """A request that did not get its whole answer; the message names the server."""


class AddressError(ClientError, ValueError):
    """A URI that is neither ``tcp://HOST:PORT`` nor ``unix://PATH``."""


class ConnectError(ClientError):
    """The server could not be reached (refused, no such socket, no answer in time)."""


class NoAnswer(ClientError, TimeoutError):
    """The server sent no next event within the timeout."""


class ConnectionClosed(ClientError):
    """The server closed the connection (or it broke) before the answer was complete."""


class ProtocolError(ClientError):
    """The server sent something that is not a Wyoming event, or events out of order."""


class ServerError(ClientError):
    """The server answered with an ``error`` event."""

    def __init__(self, label: str, text: str, code: str | None) -> None:
        super().__init__(f"{label} answered: {text} ({code or 'error'})")
        self.text = text
        """The server's words (the event's ``text``)."""
        self.code = code
        """The event's ``code``, e.g. ``text-too-long`` or ``busy`` (None when it gave none)."""


# -- where the server is -------------------------------------------------------------------
@dataclass(frozen=True)
class ServerAddress:
    """Where a server listens: a TCP host and port, or a Unix socket's path."""

    host: str = ""
    port: int = 0
    path: str | None = None

    @property
    def label(self) -> str:
        """How messages name it: ``HOST:PORT`` or the socket's path."""
        return self.path if self.path is not None else f"{self.host}:{self.port}"

    @staticmethod
    def parse(uri: str) -> ServerAddress:
        """``tcp://HOST:PORT`` (IPv6 in brackets) or ``unix://PATH``; `AddressError` otherwise."""
        parts = urlsplit(uri)
        if parts.scheme == "tcp":
            try:
                port = parts.port
            except ValueError:
                port = None
            if not parts.hostname or port is None:
                raise AddressError(f"{uri!r}: expected tcp://HOST:PORT")
            return ServerAddress(host=parts.hostname, port=port)
        if parts.scheme == "unix" and (parts.netloc or parts.path):
            return ServerAddress(path=parts.netloc + parts.path)
        raise AddressError(f"{uri!r}: expected tcp://HOST:PORT or unix://PATH")

    async def open(self, timeout: float) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection, within `timeout` seconds; `ConnectError` naming why not."""
        limit = RECEIVE_LIMITS.max_line
        if self.path is None:
            opening = asyncio.open_connection(self.host, self.port, limit=limit)
        else:
            opening = asyncio.open_unix_connection(self.path, limit=limit)
        try:
            return await asyncio.wait_for(opening, timeout)
        except asyncio.TimeoutError:
            raise ConnectError(
                f"cannot connect to {self.label}: no answer in {timeout:g} s"
            ) from None
        except ConnectionRefusedError:
            raise ConnectError(f"cannot connect to {self.label}: connection refused") from None
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
            raise ConnectError(f"cannot connect to {self.label}: {reason}") from None


# -- what comes back -----------------------------------------------------------------------
@dataclass(frozen=True)
class Chunk:
    """One ``audio-chunk`` as it arrived."""

    at_s: float
    """Arrival, seconds since the request's first event was written."""
    frames: int
    """Samples per channel in it."""


@dataclass(frozen=True)
class Spoken:
    """One request's answer: the audio and when it arrived."""

    rate: int
    """Sample rate from ``audio-start``."""
    width: int
    """Bytes per sample."""
    channels: int
    """Channel count."""
    pcm: bytes
    """Every ``audio-chunk`` payload, in order, up to ``audio-stop``."""
    chunks: tuple[Chunk, ...]
    """The chunks that held audio, as they arrived."""
    total_s: float
    """Until the end event (``audio-stop``; streamed: ``synthesize-stopped``)."""
    text_sent_s: float
    """Until the request's last event was written (streamed: the text's arrival)."""

    @property
    def first_audio_s(self) -> float | None:
        """Arrival of the first audio (None: the answer held none)."""
        return self.chunks[0].at_s if self.chunks else None

    @property
    def chunk_times(self) -> tuple[float, ...]:
        """Each audio chunk's arrival."""
        return tuple(chunk.at_s for chunk in self.chunks)

    @property
    def frames(self) -> int:
        """Samples per channel."""
        return len(self.pcm) // (self.width * self.channels)

    @property
    def seconds(self) -> float:
        """Length of the audio."""
        return self.frames / self.rate

    @property
    def rms(self) -> float:
        """Root mean square of the samples of 16-bit audio (0 for silence)."""
        if self.width != 2:
            raise ValueError(f"rms is for 16-bit audio, this is {8 * self.width}-bit")
        samples = array("h")
        samples.frombytes(self.pcm[: len(self.pcm) // 2 * 2])
        if not samples:
            return 0.0
        return math.sqrt(math.fsum(float(s) * s for s in samples) / len(samples))


class AudioListener(Protocol):
    """Takes the audio as it arrives (e.g. a player): `start` once, then `write` per chunk."""

    def start(self, rate: int, width: int, channels: int) -> None: ...

    def write(self, pcm: bytes) -> None: ...


def installed_voices(info: Info) -> list[TtsVoice]:
    """The voices of `info`'s installed text-to-speech programs that are installed."""
    return [
        voice
        for program in info.tts
        if program.installed
        for voice in program.voices
        if voice.installed
    ]


def deltas_of(text: str, size: int) -> list[str]:
    """`text` cut into deltas of `size` characters (the last may be shorter)."""
    if size < 1:
        raise ValueError(f"delta size must be at least 1 character, got {size}")
    return [text[i : i + size] for i in range(0, len(text), size)]


# -- the client ----------------------------------------------------------------------------
class _Connection:
    """One open connection: events out, events in, failures as `ClientError`s."""

    def __init__(
        self,
        address: ServerAddress,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        timeout: float,
    ) -> None:
        self.address = address
        self.reader = reader
        self.writer = writer
        self.timeout = timeout

    async def send(self, event: Event) -> None:
        try:
            await async_write_event(event, self.writer)
        except (ConnectionError, OSError) as exc:
            raise ConnectionClosed(f"lost the connection to {self.address.label}: {exc}") from None

    async def next(self, waiting_for: str) -> Event:
        """The next event; `ServerError` for an ``error`` event, other `ClientError`s for
        silence, a closed connection or garbage."""
        label = self.address.label
        try:
            event = await asyncio.wait_for(read_event(self.reader, RECEIVE_LIMITS), self.timeout)
        except asyncio.TimeoutError:
            raise NoAnswer(f"no answer from {label} within {self.timeout:g} s") from None
        except BadEvent as exc:
            raise ProtocolError(
                f"{label} sent something that is not a Wyoming event: {exc}"
            ) from None
        except OSError as exc:
            raise ConnectionClosed(f"lost the connection to {label}: {exc}") from None
        if event is None:
            raise ConnectionClosed(f"{label} closed the connection before {waiting_for}")
        if Error.is_type(event.type):
            error = Error.from_event(event)
            raise ServerError(label, error.text, error.code)
        return event

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.writer.wait_closed(), 1.0)


class WyomingClient:
    """Requests to one Wyoming server, each on a connection of its own."""

    def __init__(self, uri: str | ServerAddress, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout:g}")
        self.address = uri if isinstance(uri, ServerAddress) else ServerAddress.parse(uri)
        self.timeout = timeout

    @property
    def label(self) -> str:
        """How messages name the server."""
        return self.address.label

    @contextlib.asynccontextmanager
    async def _connect(self) -> AsyncIterator[_Connection]:
        reader, writer = await self.address.open(self.timeout)
        connection = _Connection(self.address, reader, writer, self.timeout)
        try:
            yield connection
        finally:
            await connection.close()

    async def describe(self) -> Info:
        """Send ``describe``; the server's ``info``."""
        async with self._connect() as connection:
            await connection.send(Describe().event())
            while True:
                event = await connection.next("sending info")
                if Info.is_type(event.type):
                    return Info.from_event(event)

    async def wait_until_answering(
        self, timeout: float, alive: Callable[[], bool] | None = None, step: float = 0.5
    ) -> Info:
        """`describe` again every `step` seconds until the server answers (a server starting
        up); `alive()` turning False (its process died) or the deadline raises at once, with
        the last failure."""
        deadline = time.monotonic() + timeout
        last: ClientError | None = None
        while time.monotonic() < deadline:
            if alive is not None and not alive():
                raise ConnectError(f"the server at {self.label} is gone (last: {last})")
            try:
                return await self.describe()
            except ClientError as exc:
                last = exc
                await asyncio.sleep(step)
        raise NoAnswer(f"no info from {self.label} within {timeout:g} s (last: {last})")

    async def speak(
        self,
        text: str,
        voice: str | None = None,
        style: str | None = None,
        *,
        listener: AudioListener | None = None,
    ) -> Spoken:
        """One ``synthesize``; the audio up to ``audio-stop`` (also handed to `listener`
        as it arrives)."""
        request = Synthesize(text=text, voice=_voice(voice, style))

        async def write(connection: _Connection) -> None:
            await connection.send(request.event())

        return await self._request(write, AudioStop().event().type, listener)

    async def speak_streamed(
        self,
        deltas: Iterable[str] | AsyncIterable[str],
        voice: str | None = None,
        style: str | None = None,
        *,
        interval_s: float | None = None,
        listener: AudioListener | None = None,
    ) -> Spoken:
        """Text in deltas: ``synthesize-start``, a ``synthesize-chunk`` per delta (one every
        `interval_s` seconds from the start when given), the compatibility ``synthesize``
        with the whole text, ``synthesize-stop``; the audio up to ``synthesize-stopped``."""
        if interval_s is not None and interval_s < 0:
            raise ValueError(f"interval_s must be >= 0, got {interval_s:g}")
        v = _voice(voice, style)

        async def write(connection: _Connection) -> None:
            await connection.send(SynthesizeStart(voice=v).event())
            start = time.monotonic()
            sent: list[str] = []
            async for delta in _each(deltas):
                if interval_s is not None and sent:  # a fixed schedule: no drift
                    delay = start + len(sent) * interval_s - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
                await connection.send(SynthesizeChunk(text=delta).event())
                sent.append(delta)
            await connection.send(Synthesize(text="".join(sent), voice=v).event())
            await connection.send(SynthesizeStop().event())

        return await self._request(write, SynthesizeStopped().event().type, listener)

    async def _request(
        self,
        write: Callable[[_Connection], Awaitable[None]],
        end: str,
        listener: AudioListener | None,
    ) -> Spoken:
        """Write the request while reading the answer up to the `end` event; the first
        failure of either side is the request's."""
        async with self._connect() as connection:
            t0 = time.monotonic()
            sent_at = [0.0]

            async def writing() -> None:
                await write(connection)
                sent_at[0] = time.monotonic() - t0

            reading = asyncio.create_task(self._read_audio(connection, end, t0, listener))
            tasks = (reading, asyncio.create_task(writing()))
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            for task in tasks:  # the server's answer (an error event) before a broken pipe
                failure = None if task.cancelled() else task.exception()
                if failure is not None:
                    raise failure
        return dataclasses.replace(reading.result(), text_sent_s=sent_at[0])

    async def _read_audio(
        self,
        connection: _Connection,
        end: str,
        t0: float,
        listener: AudioListener | None,
    ) -> Spoken:
        label = self.label
        fmt: tuple[int, int, int] | None = None
        pcm: list[bytes] = []
        chunks: list[Chunk] = []
        stopped = False
        while True:
            event = await connection.next(end)
            now = time.monotonic() - t0
            if AudioStart.is_type(event.type):
                start = AudioStart.from_event(event)
                started = (start.rate, start.width, start.channels)
                if fmt is None:
                    fmt = started
                    if listener is not None:
                        listener.start(*fmt)
                elif started != fmt:  # audio per sentence is fine, a new format is not
                    raise ProtocolError(f"{label} changed the audio format mid-answer")
            elif AudioChunk.is_type(event.type):
                if fmt is None:
                    raise ProtocolError(f"{label} sent audio before audio-start")
                audio = AudioChunk.from_event(event).audio
                if audio:
                    pcm.append(audio)
                    chunks.append(Chunk(now, len(audio) // (fmt[1] * fmt[2])))
                    if listener is not None:
                        listener.write(audio)
            elif AudioStop.is_type(event.type):
                if fmt is None:
                    raise ProtocolError(f"{label} sent audio-stop without audio-start")
                stopped = True
            if event.type == end:
                if not stopped or fmt is None:
                    raise ProtocolError(f"{label} sent {end} without the audio")
                rate, width, channels = fmt
                return Spoken(rate, width, channels, b"".join(pcm), tuple(chunks), now, 0.0)


def _voice(voice: str | None, style: str | None) -> SynthesizeVoice | None:
    if voice is None and style is None:
        return None
    return SynthesizeVoice(name=voice, speaker=style)


async def _each(deltas: Iterable[str] | AsyncIterable[str]) -> AsyncIterator[str]:
    if isinstance(deltas, AsyncIterable):
        async for delta in deltas:
            yield delta
    else:
        for delta in deltas:
            yield delta
