"""One `HayakoeHandler` per connection: describe, one-shot and streaming synthesis.

- One-shot ``synthesize`` → exactly one ``audio-start``, the chunks, one ``audio-stop``.
- Streaming ``synthesize-start`` / ``synthesize-chunk``* / ``synthesize-stop`` → audio for
  each sentence as soon as it is complete in the incoming text (a sentence whose end closes
  a chunk is spoken once no chunk came for ``stream_quiet`` seconds, not held for the
  next); one ``audio-start`` (sent with the first audio), one ``audio-stop`` and
  ``synthesize-stopped`` after the stop. A compatibility ``synthesize`` sent during a
  stream is ignored.
- Synthesis runs in the engine's worker threads (`Speaker.astream`), never on the event
  loop, and runs at most a couple of chunks ahead of what the client has read.
- A request that cannot be served gets an ``error`` event; the connection stays usable.
  So does one refused by `admission` (its voice's queue is full: ``busy``; the server is
  draining: ``shutting-down``).
  Something that is not a Wyoming event gets an ``error`` and the connection is closed.
- A client that goes away mid-synthesis stops its synthesis (the speaker's lock is
  released) and is logged in one line at DEBUG level, without a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_write_event
from wyoming.info import Describe
from wyoming.server import AsyncEventHandler
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

from engine import AudioResult
from engine.speaker import DEFAULT_STREAM_QUIET

from .admission import Admission, AdmissionRefused, Ticket
from .events import BadEvent, EventLimits, read_event
from .info import InfoAnswer, Resolved, VoiceCatalog

__all__ = ["ClientGone", "HayakoeHandler", "ServerContext"]

_LOGGER = logging.getLogger(__name__)

SAMPLE_WIDTH = 2
_CUT_WRITE_S = 1.0  # the most a stopping server waits to tell a cut request why
CHANNELS = 1


class ClientGone(Exception):
    """The client closed the connection (or it broke) while we were writing."""


class RequestError(ValueError):
    """A request that cannot be served; answered with an ``error`` event."""

    def __init__(self, text: str, code: str = "bad-request") -> None:
        super().__init__(text)
        self.code = code


class SpeedMeasurer(Protocol):
    """What takes a voice's speed measurement again (`engine.TTS.measure_again`: KeyError
    for an unknown voice, ValueError when there is nothing to measure)."""

    def measure_again(self, name: str) -> object: ...


@dataclass
class ServerContext:
    """What every connection shares: the voices, the `info` answer, limits and defaults."""

    catalog: VoiceCatalog
    info: InfoAnswer
    """The `describe` answer (`info.event()`: says which precision each voice runs now)."""
    samples_per_chunk: int = 1024
    max_text_length: int = 100_000
    stream_quiet: float = DEFAULT_STREAM_QUIET
    """Seconds without a chunk after which a stream's finished sentences are spoken
    (`Speaker.astream`'s `quiet`; 0: they wait for the next chunk)."""
    limits: EventLimits = field(default_factory=EventLimits)
    admission: Admission = field(default_factory=lambda: Admission(max_queue=10))
    """Bounds the requests queued per voice; refuses new ones while draining."""
    measurer: SpeedMeasurer | None = None
    """Takes a voice's speed measurement again when asked (the page's status), the server's
    `TTS`; None where nothing can."""


class _AudioOut:
    """One audio stream to the client: ``audio-start`` once, chunks, ``audio-stop`` once."""

    def __init__(self, handler: HayakoeHandler, rate: int, samples_per_chunk: int) -> None:
        self._handler = handler
        self.rate = rate
        self._step = samples_per_chunk * SAMPLE_WIDTH
        self.started = False
        self.sent_audio = False
        self.stopped = False
        self.created = time.monotonic()
        self.first_audio_s: float | None = None
        self.samples = 0

    def _chunk(self, pcm: bytes) -> Event:
        return AudioChunk(rate=self.rate, width=SAMPLE_WIDTH, channels=CHANNELS, audio=pcm).event()

    async def start(self) -> None:
        if not self.started:
            self.started = True
            await self._handler.write_event(
                AudioStart(rate=self.rate, width=SAMPLE_WIDTH, channels=CHANNELS).event()
            )

    async def send(self, audio: AudioResult) -> None:
        if audio.sr != self.rate:  # one format per stream
            raise RuntimeError(f"voice changed sample rate mid-stream ({self.rate} → {audio.sr})")
        pcm = audio.pcm_bytes()
        if not pcm:
            return
        if self.first_audio_s is None:
            self.first_audio_s = time.monotonic() - self.created
        self.samples += len(pcm) // SAMPLE_WIDTH
        await self.start()
        for offset in range(0, len(pcm), self._step):
            await self._handler.write_event(self._chunk(pcm[offset : offset + self._step]))
        self.sent_audio = True

    async def finish(self) -> None:
        """Close the audio; a request with no sound gets ``audio-start`` and ``audio-stop``
        (no empty chunk)."""
        if self.stopped:
            return
        await self.start()
        self.stopped = True
        await self._handler.write_event(AudioStop().event())

    def summary(self) -> str:
        """One line for the log: how much audio, how fast."""
        took = time.monotonic() - self.created
        first = f"{self.first_audio_s * 1000:.0f} ms" if self.first_audio_s is not None else "-"
        return (
            f"{self.samples / self.rate:.2f} s of audio in {took:.2f} s (first audio after {first})"
        )


@dataclass
class _InFlight:
    """The request this connection is answering: what a cut at shutdown reports."""

    resolved: Resolved
    out: _AudioOut
    chars: int = 0


@dataclass
class _Stream:
    """A streaming request in progress."""

    resolved: Resolved
    out: _AudioOut
    deltas: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    length: int = 0
    failed: bool = False
    ticket: Ticket | None = None
    """Its place in the voice's queue: held until ``synthesize-stopped`` is sent (or the
    connection ends), so a draining server waits for the whole answer."""
    in_flight: _InFlight | None = None


def _nothing_said(length: int, resolved: Resolved, peer: str) -> None:
    _LOGGER.warning(
        "Nothing to say in %d characters for %s (%s/%s): no letters or digits; answered "
        "with empty audio",
        length,
        peer,
        resolved.speaker.name,
        resolved.style,
    )


def _text_of(event: Event) -> str:
    text = event.data.get("text")
    if not isinstance(text, str):
        raise RequestError(f"{event.type} needs a 'text' string")
    return text


def _voice_of(event: Event) -> SynthesizeVoice | None:
    raw = event.data.get("voice")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise RequestError(f"{event.type}: 'voice' must be an object with 'name' and/or 'speaker'")
    name, speaker = raw.get("name"), raw.get("speaker")
    for key, value in (("name", name), ("speaker", speaker)):
        if value is not None and not isinstance(value, str):
            raise RequestError(f"{event.type}: voice '{key}' must be a string")
    if name is None and speaker is None:
        return None  # e.g. only a language: the default voice speaks Japanese anyway
    return SynthesizeVoice(name=name, speaker=speaker)


class HayakoeHandler(AsyncEventHandler):
    """Wyoming events of one connection."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        context: ServerContext,
    ) -> None:
        super().__init__(reader, writer)
        self.context = context
        self._write_lock = asyncio.Lock()
        self._stream: _Stream | None = None
        self._tickets: list[Ticket] = []  # released when the connection ends, at the latest
        self._in_flight: _InFlight | None = None
        peer = writer.get_extra_info("peername")
        self.peer = (
            f"{peer[0]}:{peer[1]}"
            if isinstance(peer, tuple) and len(peer) >= 2
            else str(peer or "client")
        )

    # -- connection ------------------------------------------------------------------------
    async def run(self) -> None:
        """Read events until the client leaves, sends garbage, or the server stops."""
        try:
            while True:
                try:
                    event = await read_event(self.reader, self.context.limits)
                except BadEvent as exc:
                    _LOGGER.warning("Closing connection from %s: %s", self.peer, exc)
                    with contextlib.suppress(ClientGone):
                        await self.write_event(Error(text=str(exc), code=exc.code).event())
                    break
                if event is None:
                    break
                try:
                    if not await self.handle_event(event):
                        break
                except ClientGone:
                    _LOGGER.debug("Client %s went away mid-response", self.peer)
                    break
        except asyncio.CancelledError:  # the server stops (after its drain timeout)
            await self._cut_off()
            raise
        finally:
            await self._abort_stream()
            for ticket in self._tickets:
                ticket.release()
            await self.disconnect()
            self.writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.writer.wait_closed(), timeout=1.0)

    async def write_event(self, event: Event) -> None:
        """Send one event whole; `ClientGone` if the client has left."""
        if self.writer.is_closing():
            raise ClientGone()
        async with self._write_lock:
            try:
                await async_write_event(event, self.writer)
            except (ConnectionError, OSError) as exc:
                raise ClientGone() from exc

    async def _cut_off(self) -> None:
        """The server stops with a request in flight: stop its synthesis, say so in the log
        and to the client (an ``error`` before the connection closes)."""
        cut, self._in_flight = self._in_flight, None
        if cut is None:
            return
        await self._abort_stream()
        spoken = cut.out.samples / cut.out.rate
        _LOGGER.warning(
            "Server stopping: request from %s with %s/%s cut off after %.2f s of audio "
            "(%d characters of text received)",
            self.peer,
            cut.resolved.speaker.name,
            cut.resolved.style,
            spoken,
            cut.chars,
        )
        text = f"the server is shutting down: request cut off after {spoken:.2f} s of audio"
        with contextlib.suppress(ClientGone, asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(
                self.write_event(Error(text=text, code="shutting-down").event()),
                _CUT_WRITE_S,
            )

    async def _error(self, text: str, code: str) -> None:
        _LOGGER.warning("Request from %s not served: %s", self.peer, text)
        await self.write_event(Error(text=text, code=code).event())

    # -- events ----------------------------------------------------------------------------
    async def handle_event(self, event: Event) -> bool:
        try:
            if Describe.is_type(event.type):
                await self.write_event(self.context.info.event())
            elif Synthesize.is_type(event.type):
                if self._stream is not None:
                    _LOGGER.debug("Ignoring compatibility synthesize during a stream")
                else:
                    await self._synthesize(event)
            elif SynthesizeStart.is_type(event.type):
                await self._stream_start(event)
            elif SynthesizeChunk.is_type(event.type):
                await self._stream_chunk(event)
            elif SynthesizeStop.is_type(event.type):
                await self._stream_stop()
            else:
                _LOGGER.debug("Ignoring event %s from %s", event.type, self.peer)
        except (RequestError, AdmissionRefused) as exc:
            await self._error(str(exc), exc.code)
        return True

    # -- one-shot --------------------------------------------------------------------------
    async def _synthesize(self, event: Event) -> None:
        text = _text_of(event)
        voice = _voice_of(event)
        self._check_length(len(text))
        resolved = self.context.catalog.resolve(voice)
        _LOGGER.debug(
            "synthesize %d chars with %s/%s for %s",
            len(text),
            resolved.speaker.name,
            resolved.style,
            self.peer,
        )
        ticket = self.context.admission.enter(resolved.speaker.name)
        try:
            await self._speak(resolved, text)
        finally:
            ticket.release()

    async def _speak(self, resolved: Resolved, text: str) -> None:
        out = _AudioOut(self, resolved.rate, self.context.samples_per_chunk)
        self._in_flight = _InFlight(resolved, out, len(text))
        try:
            await self._speak_to(resolved, text, out)
        except ClientGone:
            self._in_flight = None
            raise
        self._in_flight = None  # (left set when cancelled: `_cut_off` reports it)

    async def _speak_to(self, resolved: Resolved, text: str, out: _AudioOut) -> None:
        try:
            async with contextlib.aclosing(
                self._audio(resolved, text, measure_whole=True)
            ) as chunks:
                async for chunk in chunks:
                    await out.send(chunk)
        except (ClientGone, asyncio.CancelledError):
            raise
        except Exception as exc:  # a synthesis failure: tell the client, keep the connection
            _LOGGER.error(
                "Synthesis failed for %s: %s",
                self.peer,
                exc,
                exc_info=_LOGGER.isEnabledFor(logging.DEBUG),
            )
            await self.write_event(
                Error(text=f"synthesis failed: {exc}", code="synthesis-failed").event()
            )
            if out.started:
                await out.finish()
            return
        await out.finish()
        if not out.sent_audio:
            _nothing_said(len(text), resolved, self.peer)
            return
        _LOGGER.info(
            "Spoke %d characters with %s/%s for %s: %s",
            len(text),
            resolved.speaker.name,
            resolved.style,
            self.peer,
            out.summary(),
        )

    def _audio(
        self, resolved: Resolved, text: Any, *, measure_whole: bool = False
    ) -> AsyncGenerator[AudioResult, None]:
        """The request's audio: its style, its options (the server-wide ones under a preset's,
        merged by the catalog), its output shaping (a one-shot request's loudness is measured
        over the whole text)."""
        return resolved.speaker.astream(
            text,
            style=resolved.style,
            output=resolved.output,
            measure_whole=measure_whole,
            quiet=self.context.stream_quiet,
            **resolved.options,
        )

    def _check_length(self, length: int) -> None:
        if length > self.context.max_text_length:
            raise RequestError(
                f"text too long: {length} characters (limit {self.context.max_text_length})",
                code="text-too-long",
            )

    # -- streaming -------------------------------------------------------------------------
    async def _stream_start(self, event: Event) -> None:
        if self._stream is not None:
            raise RequestError(
                "synthesize-start while a stream is in progress; send synthesize-stop first"
            )
        try:
            voice = _voice_of(event)
        except RequestError as exc:
            _LOGGER.warning("%s; using the default voice", exc)
            voice = None
        resolved = self.context.catalog.resolve(voice)
        _LOGGER.debug(
            "stream start with %s/%s for %s", resolved.speaker.name, resolved.style, self.peer
        )
        stream = _Stream(
            resolved=resolved,
            out=_AudioOut(self, resolved.rate, self.context.samples_per_chunk),
        )
        self._stream = stream
        stream.in_flight = self._in_flight = _InFlight(resolved, stream.out)
        try:
            stream.ticket = self.context.admission.enter(resolved.speaker.name)
        except AdmissionRefused:
            stream.failed = True  # its chunks are ignored; synthesize-stop is answered
            self._in_flight = None  # refused: nothing to cut
            raise
        self._tickets.append(stream.ticket)
        stream.task = asyncio.create_task(self._stream_audio(stream), name=f"stream {self.peer}")

    async def _stream_audio(self, stream: _Stream) -> None:
        async def deltas() -> AsyncIterator[str]:
            while True:
                delta = await stream.deltas.get()
                if delta is None:
                    return
                yield delta

        try:
            async with contextlib.aclosing(self._audio(stream.resolved, deltas())) as chunks:
                async for chunk in chunks:
                    await stream.out.send(chunk)
        except (ClientGone, asyncio.CancelledError):
            raise
        except Exception as exc:
            stream.failed = True
            _LOGGER.error(
                "Streaming synthesis failed for %s: %s",
                self.peer,
                exc,
                exc_info=_LOGGER.isEnabledFor(logging.DEBUG),
            )
            await self.write_event(
                Error(text=f"synthesis failed: {exc}", code="synthesis-failed").event()
            )

    async def _stream_chunk(self, event: Event) -> None:
        stream = self._stream
        if stream is None:
            raise RequestError(
                "synthesize-chunk without synthesize-start: send synthesize-start first",
                code="no-stream",
            )
        text = _text_of(event)
        if stream.failed:
            return
        stream.length += len(text)
        if stream.in_flight is not None:
            stream.in_flight.chars = stream.length
        if stream.length > self.context.max_text_length:
            stream.failed = True
            if stream.task is not None:
                stream.task.cancel()
            raise RequestError(
                f"streamed text too long: over {self.context.max_text_length} characters; "
                "the rest of this stream is ignored",
                code="text-too-long",
            )
        stream.deltas.put_nowait(text)

    async def _stream_stop(self) -> None:
        stream, self._stream = self._stream, None
        if stream is None:  # answered, so a client waiting for synthesize-stopped goes on
            await self._error("synthesize-stop without synthesize-start", "no-stream")
            await self.write_event(SynthesizeStopped().event())
            return
        stream.deltas.put_nowait(None)
        if stream.task is not None:
            try:
                await stream.task
            except asyncio.CancelledError:
                if not stream.failed:  # we were cancelled ourselves
                    raise
        if not stream.failed or stream.out.started:
            await stream.out.finish()
        await self.write_event(SynthesizeStopped().event())
        if stream.ticket is not None:
            stream.ticket.release()
            self._tickets.remove(stream.ticket)
        if self._in_flight is stream.in_flight:
            self._in_flight = None
        if not stream.failed and not stream.out.sent_audio:
            _nothing_said(stream.length, stream.resolved, self.peer)
            return
        _LOGGER.info(
            "Streamed %d characters with %s/%s for %s: %s",
            stream.length,
            stream.resolved.speaker.name,
            stream.resolved.style,
            self.peer,
            stream.out.summary(),
        )

    async def _abort_stream(self) -> None:
        """Stop a stream whose client left (releases the speaker's lock)."""
        stream, self._stream = self._stream, None
        if stream is None or stream.task is None:
            return
        stream.task.cancel()
        with contextlib.suppress(BaseException):
            await stream.task
        if stream.ticket is not None:
            stream.ticket.release()
