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
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field

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

from .context import ServerContext, SpeedMeasurer
from .errors import ClientGone, HayakoeError
from .events import BadEvent, read_event
from .speech import Problem, Speech, SpeechError, SpeechRequest, TooLarge

__all__ = ["ClientGone", "HayakoeHandler", "RequestError", "ServerContext", "SpeedMeasurer"]

_LOGGER = logging.getLogger(__name__)

SAMPLE_WIDTH = 2
_CUT_WRITE_S = 1.0  # the most a stopping server waits to tell a cut request why
CHANNELS = 1


class RequestError(HayakoeError):
    """An event this door cannot read as a request (a field missing or of the wrong type);
    answered with an ``error`` event."""

    def __init__(self, text: str, code: str = "bad-request") -> None:
        super().__init__(text)
        self.code = code


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

    speech: Speech
    out: _AudioOut
    chars: int = 0


@dataclass
class _Stream:
    """A streaming request in progress."""

    deltas: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    speech: Speech | None = None
    """The admitted request: its place in the voice's queue is held until
    ``synthesize-stopped`` is sent (or the connection ends), so a draining server waits for
    the whole answer. None: refused."""
    out: _AudioOut | None = None
    task: asyncio.Task[None] | None = None
    length: int = 0
    failed: bool = False
    in_flight: _InFlight | None = None

    async def texts(self) -> AsyncIterator[str]:
        """The deltas as they arrive, to the stop."""
        while True:
            delta = await self.deltas.get()
            if delta is None:
                return
            yield delta

    def close(self) -> None:
        if self.speech is not None:
            self.speech.close()


def _nothing_said(length: int, speech: Speech, peer: str) -> None:
    _LOGGER.warning(
        "Nothing to say in %d characters for %s (%s/%s): no letters or digits; answered "
        "with empty audio",
        length,
        peer,
        speech.voice,
        speech.style,
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


class _BoundedDrain:
    """The connection's writer as `async_write_event` uses it, its drain bounded in time:
    `asyncio.TimeoutError` when the client has read too little for the buffered events to
    go within `timeout` seconds. While the buffer is below its high-water mark the drain
    returns at once, without the cost of a timer per event."""

    def __init__(self, writer: asyncio.StreamWriter, timeout: float) -> None:
        self._writer = writer
        self._timeout = timeout

    def write(self, data: bytes) -> None:
        self._writer.write(data)

    def writelines(self, data: Iterable[bytes]) -> None:
        self._writer.writelines(data)

    async def drain(self) -> None:
        transport = self._writer.transport
        if transport.get_write_buffer_size() <= transport.get_write_buffer_limits()[1]:
            await self._writer.drain()  # not paused: returns at once (raises if closed)
        else:
            await asyncio.wait_for(self._writer.drain(), self._timeout)


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
            await self.disconnect()
            self.writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.writer.wait_closed(), timeout=1.0)

    async def write_event(self, event: Event) -> None:
        """Send one event whole; `ClientGone` if the client has left, or has read nothing
        for ``limits.write_timeout`` seconds while the event waited (then the connection
        is dropped: the request's synthesis stops and its voice is free for the next)."""
        if self.writer.is_closing():
            raise ClientGone()
        timeout = self.context.limits.write_timeout
        async with self._write_lock:
            try:
                await async_write_event(event, _BoundedDrain(self.writer, timeout))  # type: ignore[arg-type]
            except asyncio.TimeoutError:
                _LOGGER.warning(
                    "Client %s read nothing for %g s: taken as gone, connection dropped",
                    self.peer,
                    timeout,
                )
                self.writer.transport.abort()
                raise ClientGone() from None
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
            cut.speech.voice,
            cut.speech.style,
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
        except RequestError as exc:
            await self._error(str(exc), exc.code)
        except SpeechError as exc:
            await self._error(str(exc), exc.problem.wyoming_code)
        return True

    def _open(self, request: SpeechRequest) -> Speech:
        """This door's one way in (`SpeechService.open`)."""
        return self.context.service.open(request)

    # -- one-shot --------------------------------------------------------------------------
    async def _synthesize(self, event: Event) -> None:
        text = _text_of(event)
        voice = _voice_of(event)
        request = SpeechRequest(
            text,
            voice.name if voice else None,
            voice.speaker if voice else None,
            fallback=True,
            door="wyoming",
        )
        with self._open(request) as speech:
            _LOGGER.debug(
                "synthesize %d chars with %s/%s for %s",
                len(text),
                speech.voice,
                speech.style,
                self.peer,
            )
            await self._speak(speech, text)

    async def _speak(self, speech: Speech, text: str) -> None:
        out = _AudioOut(self, speech.rate, self.context.samples_per_chunk)
        self._in_flight = _InFlight(speech, out, len(text))
        try:
            await self._speak_to(speech, text, out)
        except ClientGone:
            self._in_flight = None
            raise
        self._in_flight = None  # (left set when cancelled: `_cut_off` reports it)

    async def _speak_to(self, speech: Speech, text: str, out: _AudioOut) -> None:
        if not await self._send_audio(speech, out):
            return
        await out.finish()
        if not out.sent_audio:
            _nothing_said(len(text), speech, self.peer)
            return
        _LOGGER.info(
            "Spoke %d characters with %s/%s for %s: %s",
            len(text),
            speech.voice,
            speech.style,
            self.peer,
            out.summary(),
        )

    async def _send_audio(self, speech: Speech, out: _AudioOut) -> bool:
        """The request's audio to the client; False when it failed (the client was told
        with an ``error``, and the audio closed if it had started)."""
        try:
            async with contextlib.aclosing(speech.stream()) as chunks:
                async for chunk in chunks:
                    await out.send(chunk)
        except (ClientGone, asyncio.CancelledError):
            raise
        except SpeechError as exc:  # the audio bound: what was made is kept
            await self._error(str(exc), exc.problem.wyoming_code)
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
        else:
            return True
        if out.started:
            await out.finish()
        return False

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
        stream = self._stream = _Stream()
        request = SpeechRequest(
            stream.texts(),
            voice.name if voice else None,
            voice.speaker if voice else None,
            fallback=True,
            measure_whole=False,
            door="wyoming",
        )
        try:
            speech = self._open(request)
        except SpeechError:
            stream.failed = True  # its chunks are ignored; synthesize-stop is answered
            raise
        _LOGGER.debug("stream start with %s/%s for %s", speech.voice, speech.style, self.peer)
        stream.speech = speech
        stream.out = _AudioOut(self, speech.rate, self.context.samples_per_chunk)
        stream.in_flight = self._in_flight = _InFlight(speech, stream.out)
        stream.task = asyncio.create_task(
            self._stream_audio(speech, stream), name=f"stream {self.peer}"
        )

    async def _stream_audio(self, speech: Speech, stream: _Stream) -> None:
        assert stream.out is not None
        if not await self._send_audio(speech, stream.out):
            stream.failed = True

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
        try:
            self.context.service.check_length(stream.length)
        except TooLarge as exc:
            stream.failed = True
            if stream.task is not None:
                stream.task.cancel()
            raise TooLarge(
                Problem.TEXT_TOO_LONG,
                f"streamed text too long: over {exc.limit:g} characters; "
                "the rest of this stream is ignored",
                "text",
                exc.limit,
            ) from None
        stream.deltas.put_nowait(text)

    async def _stream_stop(self) -> None:
        stream, self._stream = self._stream, None
        if stream is None:  # answered, so a client waiting for synthesize-stopped goes on
            await self._error("synthesize-stop without synthesize-start", "no-stream")
            await self.write_event(SynthesizeStopped().event())
            return
        stream.deltas.put_nowait(None)
        try:
            if stream.task is not None:
                try:
                    await stream.task
                except asyncio.CancelledError:
                    if not stream.failed:  # we were cancelled ourselves
                        raise
            out = stream.out
            if out is not None and (not stream.failed or out.started):
                await out.finish()
            await self.write_event(SynthesizeStopped().event())
        finally:
            stream.close()
        if self._in_flight is stream.in_flight:
            self._in_flight = None
        if stream.speech is None or out is None:
            return
        if not stream.failed and not out.sent_audio:
            _nothing_said(stream.length, stream.speech, self.peer)
            return
        _LOGGER.info(
            "Streamed %d characters with %s/%s for %s: %s",
            stream.length,
            stream.speech.voice,
            stream.speech.style,
            self.peer,
            out.summary(),
        )

    async def _abort_stream(self) -> None:
        """Stop a stream whose client left (releases the speaker's lock and its place in
        the voice's queue)."""
        stream, self._stream = self._stream, None
        if stream is None:
            return
        if stream.task is not None:
            stream.task.cancel()
            with contextlib.suppress(BaseException):
                await stream.task
        stream.close()
