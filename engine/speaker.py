"""`Speaker`: the public face of one loaded voice.

What is the same for every kind of voice lives here, so a voice backend only turns sentences
into float audio (`engine.voice_backend.Voice.render`):

- the request's text through one `engine.text.TextPipeline` (user dictionary refresh, SSML,
  sentence splitting as text arrives, rewriting: times, units, Latin words), which hands
  back parts ready to render (sentences at a rate, or a break's exact silence),
- one lock per speaker (`engine.fair_lock.FairLock`, first come first served): the same
  speaker synthesizes one request at a time, in the order they reach it, different speakers
  run in parallel; a stream that is closed early releases it,
- float → int16 with one fixed scale (`engine.audio.to_int16`): a stream has one loudness,
- per-request output shaping (`engine.output`: volume with a limiter, loudness, lead/tail
  silence, output rate, chime), one `OutputStage` per request; default: none,
- async wrappers that never run synthesis on the event loop,
- hayakoe 1.3's surface: `sampling_rate`, `with_timing=True` (phoneme timings placed on the
  request's output timeline, `_Timeline`), `stream_wav` / `astream_wav` (a WAV header of
  unknown length, then PCM), `lang=` and `batch_bert=` accepted,
- pacing (`engine.pacing`): one `RequestPacing` per request owns its listener model (the
  voice's decoder windows are sized from it) and its playback guard: on a machine slower
  than speech a stream's first audio is held back just long enough that a real-time
  listener never waits; the voice's speed is measured here, on every request, per
  precision, on the speaker's `clock`.

Locking: for a whole text the lock is held while the voice renders it (from the first
chunk until the stream ends or is closed). For text that arrives in deltas it is taken per
batch of completed sentences and released while waiting for more text, so a slow producer
(an LLM) does not block other requests for the same speaker. `at_request_boundary` runs
something between requests (a voice switching precision): under the lock, when no request
is part-way through its text.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import queue
import threading
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Sequence,
)
from typing import TYPE_CHECKING, Any

import numpy as np

from .audio import AudioResult, PhonemeTiming, streaming_wav_header
from .errors import EngineError
from .fair_lock import FairLock
from .output import OutputOptions, OutputStage
from .pacing import SYSTEM_CLOCK, Clock, PacingReport, RequestPacing, SpeedMeter
from .text.from_phrases import PhrasedText
from .text.pipeline import Part, TextPipeline
from .threaded import Failure, iterate_in_thread
from .voice_backend import RunInfo, SynthesisOptions, SynthesisOverrides, Voice, VoiceIdentity

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

__all__ = ["DEFAULT_STREAM_PAUSE", "DEFAULT_STREAM_QUIET", "Speaker", "StreamCancelled"]

_LOGGER = logging.getLogger(__name__)

DEFAULT_STREAM_PAUSE = 0.3
"""Seconds of silence between batches of sentences rendered separately (text in deltas),
when neither `sentence_silence` nor the voice's `sentence_pause` says otherwise."""

DEFAULT_STREAM_QUIET = 0.25
"""Seconds without a text delta after which a stream's sentences whose end is seen are
spoken without waiting for the next delta (`TextPipeline.settle`). Longer than the gaps
between an LLM's tokens (25-100 ms at 10-40 characters/s), so an unpaused stream is split
exactly as the whole text; short enough that a sentence spoken before a tool call is heard
at once (the embedded voice: about 0.3 s after its 。)."""

CLAUSE_PAUSE = 0.25
"""Seconds of silence a listener hears after a stream's first part when it ended at a clause
mark (`first_clause`): the part's own pause at the mark is trimmed with its edges, so it is
put back, less what the listener already waited for the next part (a late part makes no
pause longer; docs/frontend.md, "The first clause of a stream")."""

_OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(SynthesisOptions))
_LOCK_POLL_S = 0.05
_ASYNC_BUFFER = 2  # chunks a worker may run ahead of an async consumer


class StreamCancelled(EngineError):
    """Raised inside a worker when its consumer went away; never reaches callers."""


class Speaker:
    """One voice, ready to speak: `generate`, `stream`, `agenerate`, `astream`.

    Options are `SynthesisOptions` fields passed as keywords (`style`, `speed`, ...);
    `defaults` are used for the ones not given.
    """

    def __init__(
        self,
        voice: Voice,
        *,
        rewrite: bool = True,
        defaults: SynthesisOptions | None = None,
        playback_guard: bool = True,
        first_clause: int = 0,
        clock: Clock | None = None,
    ) -> None:
        self.voice = voice
        self.rewrite = rewrite
        self.defaults = defaults or SynthesisOptions(style=self._default_style(voice))
        self.lock = FairLock()
        self._begun: set[int] = set()  # requests that rendered a part and have not ended
        self._ended = threading.Condition()
        self.playback_guard = playback_guard
        """Streams hold back first audio where it would outrun synthesis (`engine.pacing`)."""
        self.first_clause = first_clause
        """Characters a stream's first part holds before it may end at a clause mark
        (`engine.text.pipeline`; 0: sentences only)."""
        self.speed = SpeedMeter()
        """This voice's measured real-time factor on this machine, per precision."""
        self.clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        """The time pacing reads: the voice's work is timed on it, the listener plays on it
        (`engine.pacing`; a simulated one in tests)."""
        self.last_pacing: PacingReport | None = None
        """How the last request that ran to its end was paced (first audio, holds, gaps
        of the modelled listener)."""

    # -- description -------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.voice.name

    @property
    def description(self) -> str:
        return self.voice.description

    @property
    def styles(self) -> list[str]:
        return list(self.voice.styles)

    @property
    def sample_rate(self) -> int:
        return int(self.voice.sample_rate)

    @property
    def sampling_rate(self) -> int:
        """The voice's own rate in Hz (hayakoe's name for `sample_rate`)."""
        return self.sample_rate

    @property
    def attribution_name(self) -> str:
        return self.voice.attribution_name

    @property
    def attribution_url(self) -> str:
        return self.voice.attribution_url

    @property
    def version(self) -> str | None:
        return self.voice.version

    @property
    def run_info(self) -> RunInfo | None:
        """What the voice runs now (`RunInfo`: precision, runtime, in a few words, why); None
        for a voice with no such choice (the embedded HTS voice)."""
        return self.voice.run_info()

    @property
    def identity(self) -> VoiceIdentity | None:
        """Where the voice comes from and who it is (`VoiceIdentity`: source file, AivisHub
        speaker UUID and local style IDs, license); None for a voice with no file of its own."""
        return self.voice.identity()

    @property
    def precision(self) -> str | None:
        """The arithmetic the voice runs now: "int8" or "fp32"; None for a voice with no such
        choice (the embedded HTS voice). May change once, between requests, when int8 graphs
        made in the background pass their gate (`engine.int8.background`)."""
        info = self.voice.run_info()
        return None if info is None else info.precision

    @property
    def runtime(self) -> str | None:
        """What runs the voice's graphs ("onnxruntime", "openvino", "pytorch"); None for a
        voice without graphs (the embedded HTS voice)."""
        info = self.voice.run_info()
        return None if info is None else info.runtime

    @property
    def runs(self) -> str | None:
        """What the voice runs now, in a few words ("int8 on OpenVINO, 0.43× fp32's time
        here (measured)"); None for a voice with no such choice."""
        info = self.voice.run_info()
        return None if info is None else info.runs

    @property
    def precision_reason(self) -> str | None:
        """Why it runs that: the gate's figures and, when measured, every candidate's time."""
        info = self.voice.run_info()
        return None if info is None else info.reason

    @property
    def default_style(self) -> str:
        return self.defaults.style

    @property
    def busy(self) -> bool:
        """Whether a request is in flight: rendering, waiting for the lock, or part-way
        through text that arrives in deltas (background int8 work pauses meanwhile)."""
        return self.lock.locked() or bool(self._begun)

    @property
    def real_time_factor(self) -> float | None:
        """Seconds of synthesis per second of audio measured here for the precision the
        voice runs now (None before the first request or warm-up)."""
        return self.speed.rate(self._speed_key())

    def _speed_key(self) -> str:
        info = self.voice.run_info()
        if info is None:
            return ""
        runtime = info.runtime
        return f"{info.precision}/{runtime}" if runtime != "onnxruntime" else info.precision

    @staticmethod
    def _default_style(voice: Voice) -> str:
        styles = list(voice.styles)
        own = voice.default_style  # a voice that knows its own (AivisHub)
        if own is not None and own in styles:
            return own
        if not styles or "Neutral" in styles:
            return "Neutral"
        return styles[0]

    def __repr__(self) -> str:
        return f"Speaker({self.name!r}, styles={self.styles}, sr={self.sample_rate})"

    # -- options -----------------------------------------------------------------------
    def options(self, **overrides: Unpack[SynthesisOverrides]) -> SynthesisOptions:
        """The defaults with `overrides` applied; a clear error for unknown names/styles."""
        unknown = sorted(set(overrides) - _OPTION_NAMES)
        if unknown:
            raise TypeError(
                f"unknown synthesis option(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(_OPTION_NAMES))}"
            )
        opts = self.defaults.merged(**overrides)
        if self.styles and opts.style not in self.styles:
            raise ValueError(
                f"speaker {self.name!r} has no style {opts.style!r}; "
                f"available: {', '.join(self.styles)}"
            )
        return opts

    def output_rate(self, output: OutputOptions | None = None) -> int:
        """The sample rate of the audio this speaker returns with `output`."""
        return (output or OutputOptions()).rate_for(self.sample_rate)

    # -- sync API ----------------------------------------------------------------------
    def generate(
        self,
        text: str,
        *,
        output: OutputOptions | None = None,
        lang: object = "JP",
        batch_bert: bool = True,
        **options: Unpack[SynthesisOverrides],
    ) -> AudioResult:
        """The whole text as one `AudioResult` (empty for text with nothing to say).

        `output` shapes the audio (`engine.output.OutputOptions`: volume, loudness measured
        over the whole text, silence, rate, chime); default: as the voice made it.
        Sentences are decoded whole unless `whole_sentences=False` is given (then in
        windows, as `stream` decodes them). `with_timing=True` fills `timings` (each
        phoneme's start and duration, hayakoe 1.3's `PhonemeTiming`; an empty list for a
        voice that cannot tell). `lang` (Japanese only) and `batch_bert` (BERT runs
        batched here anyway) are hayakoe's, accepted so its scripts run unchanged.
        """
        _check_lang(lang)
        del batch_bert  # hayakoe's switch between batched and per-sentence BERT: see doc
        # Nobody hears the first piece early here: whole-sentence decoding is the default.
        options.setdefault("whole_sentences", True)
        opts = self.options(**options)
        chunks = list(self._speak(text, opts, None, output, measure_whole=True, guard=False))
        return _joined(chunks, self.output_rate(output), opts.with_timing)

    def stream(
        self,
        text: str | Iterable[str],
        *,
        output: OutputOptions | None = None,
        measure_whole: bool = False,
        guard: bool | None = None,
        lang: object = "JP",
        **options: Unpack[SynthesisOverrides],
    ) -> Generator[AudioResult, None, None]:
        """Yield audio sentence by sentence (at least one chunk per sentence).

        `text` is a whole text, or an iterable of text deltas (e.g. an LLM's tokens): each
        sentence is synthesized as soon as it is complete. Closing the generator early
        releases the speaker's lock. `output` as in `generate`; with loudness set the level
        is measured on the first sentence (held back until it is complete) and kept for the
        stream, or over the whole text when `measure_whole` (then nothing comes until the end).
        `guard` (default: `playback_guard`) paces the chunks for a listener that plays them
        in real time from the first one (`engine.pacing`). With `with_timing=True` each
        chunk carries the timings of the phonemes made for it, timed from the start of the
        stream.
        """
        _check_lang(lang)
        opts = self.options(**options)
        return self._speak(
            text, opts, None, output, measure_whole=measure_whole, guard=self._guarded(guard)
        )

    def stream_wav(
        self,
        text: str | Iterable[str],
        *,
        output: OutputOptions | None = None,
        **options: Unpack[SynthesisOverrides],
    ) -> Generator[bytes, None, None]:
        """One WAV stream in pieces of bytes, as hayakoe 1.3 gives it: first a header of
        unknown length (`engine.audio.streaming_wav_header`, at the output rate), then each
        chunk of `stream` as raw 16-bit PCM. Joined, they make a WAV that players read to
        its end. Keywords as `stream`; closing it early releases the speaker."""
        chunks = self.stream(text, output=output, **options)
        try:
            yield streaming_wav_header(self.output_rate(output))
            for chunk in chunks:
                yield chunk.pcm_bytes()
        finally:
            chunks.close()

    # -- async API ---------------------------------------------------------------------
    async def agenerate(
        self,
        text: str,
        *,
        output: OutputOptions | None = None,
        lang: object = "JP",
        batch_bert: bool = True,
        **options: Unpack[SynthesisOverrides],
    ) -> AudioResult:
        """`generate` off the event loop (cancelling it stops the synthesis)."""
        _check_lang(lang)
        del batch_bert  # see generate
        options.setdefault("whole_sentences", True)  # see generate
        timed = bool(options.get("with_timing", self.defaults.with_timing))
        chunks = self.astream(text, output=output, measure_whole=True, guard=False, **options)
        pieces = [chunk async for chunk in chunks]
        return _joined(pieces, self.output_rate(output), timed)

    async def astream(
        self,
        text: str | Iterable[str] | AsyncIterable[str],
        *,
        output: OutputOptions | None = None,
        measure_whole: bool = False,
        guard: bool | None = None,
        quiet: float | None = DEFAULT_STREAM_QUIET,
        lang: object = "JP",
        **options: Unpack[SynthesisOverrides],
    ) -> AsyncGenerator[AudioResult, None]:
        """`stream` driven by a worker thread; text may also be an async iterable of deltas.

        Deltas from an async iterable: when none came for `quiet` seconds, the sentences
        whose end is seen are spoken without waiting for the next one (`TextPipeline.settle`;
        None or 0: they wait for the next delta or the end).
        The worker runs at most a couple of chunks ahead of the consumer (bounded memory).
        Closing the async generator (or cancelling the task iterating it) stops the worker
        and waits until it has released the speaker's lock.
        """
        _check_lang(lang)
        opts = self.options(**options)
        guarded = self._guarded(guard)
        cancel = threading.Event()
        source: str | Iterable[str]
        pacing: RequestPacing | None
        stop_feeding: Callable[[], None] | None
        if isinstance(text, AsyncIterable):
            source, pacing, stop_feeding = self._deltas(text, guarded, cancel, quiet)
        else:
            source, pacing, stop_feeding = text, None, None

        def speak() -> Generator[AudioResult, None, None]:
            return self._speak(
                source,
                opts,
                cancel,
                output,
                measure_whole=measure_whole,
                guard=guarded,
                pacing=pacing,
            )

        chunks = iterate_in_thread(
            speak,
            cancel,
            buffer=_ASYNC_BUFFER,
            name=f"speaker-{self.name}",
            quiet=(StreamCancelled,),
            on_close=stop_feeding,
        )
        try:
            async for chunk in chunks:
                yield chunk
        finally:
            await chunks.aclose()

    async def astream_wav(
        self,
        text: str | Iterable[str] | AsyncIterable[str],
        *,
        output: OutputOptions | None = None,
        **options: Unpack[SynthesisOverrides],
    ) -> AsyncGenerator[bytes, None]:
        """`stream_wav` of `astream` (what a FastAPI `StreamingResponse` takes as it is)."""
        chunks = self.astream(text, output=output, **options)
        try:
            yield streaming_wav_header(self.output_rate(output))
            async for chunk in chunks:
                yield chunk.pcm_bytes()
        finally:
            await chunks.aclose()

    # -- internals ---------------------------------------------------------------------
    def _deltas(
        self,
        text: AsyncIterable[str],
        guarded: bool,
        cancel: threading.Event,
        quiet: float | None,
    ) -> tuple[Iterable[str], RequestPacing, Callable[[], None]]:
        """Text arriving as an async iterable of deltas, for `astream`'s worker thread: the
        blocking iterable it reads (settled after `quiet` seconds without a delta), the
        request's pacing (it counts deltas as they arrive, before the worker reads them),
        and what wakes a worker waiting for a delta when the stream is closed."""
        feed: queue.Queue[Any] = queue.Queue()
        pacing = self._pacing(guarded)
        arrivals = _Arrivals()
        source = _blocking_deltas(feed, cancel, quiet or None, arrivals)
        pump = asyncio.ensure_future(_pump(text, feed, pacing, arrivals))

        def stop() -> None:
            feed.put(_CANCEL)
            pump.cancel()

        return source, pacing, stop

    def _acquire(self, cancel: threading.Event | None) -> None:
        if not self.lock.acquire(cancel=cancel):  # waits its turn; False only if cancelled
            raise StreamCancelled()

    def _speak(
        self,
        text: str | Iterable[str],
        opts: SynthesisOptions,
        cancel: threading.Event | None,
        output: OutputOptions | None,
        *,
        measure_whole: bool,
        guard: bool,
        pacing: RequestPacing | None = None,
    ) -> Generator[AudioResult, None, None]:
        """`_stream` through one request's `OutputStage`, then what the stage held back,
        through the request's `pacing` (made here unless the caller made it to count text
        deltas as they arrive; then `guard` is the one it was made with): held back by its
        playback guard when `guard`."""
        stage = OutputStage(
            output or OutputOptions(), self.sample_rate, measure_whole=measure_whole
        )
        count = pacing is None and not isinstance(text, str)  # deltas counted as read
        if pacing is None:
            pacing = self._pacing(guard)
        paced = pacing
        timeline = _Timeline(self.sample_rate, _lead_s(output, stage))

        def chunks() -> Generator[AudioResult, None, None]:
            yield from self._stream(text, opts, cancel, stage, paced, timeline, count)
            rest = stage.finish()
            held = timeline.take()  # timings of audio the stage held back until now
            if rest.size or held:
                yield AudioResult(stage.rate, rest, held)

        try:
            yield from pacing.pace(chunks())
        finally:
            if id(stage) in self._begun:
                with self._ended:
                    self._begun.discard(id(stage))
                    self._ended.notify_all()
        report = self.last_pacing = pacing.report()
        if report.holds:
            _LOGGER.info(
                "%s speaks slower than real time here (%.2fx): audio held back %.1f s in all "
                "so that it plays without gaps (--playback-guard)",
                self.name,
                report.rate or 0.0,
                report.held_s,
            )

    def _pacing(self, guard: bool) -> RequestPacing:
        """A request's pacing, on this speaker's clock, from the speed measured so far."""
        return RequestPacing(
            self.clock, base_rate=self.real_time_factor, guard=guard, label=self.name
        )

    def _guarded(self, guard: bool | None) -> bool:
        return self.playback_guard if guard is None else guard

    def at_request_boundary(
        self, action: Callable[[], None], cancel: threading.Event | None = None
    ) -> bool:
        """Run `action` between requests: holding the lock (no request renders meanwhile,
        and those waiting come after it in their order), at a moment when no request has
        rendered part of its text and waits for more (text in deltas). False (and `action`
        not run) when `cancel` is set first."""
        while True:
            if not self.lock.acquire(cancel=cancel):
                return False
            try:
                if not self._begun:
                    action()
                    return True
            finally:
                self.lock.release()
            with self._ended:
                while self._begun and not (cancel is not None and cancel.is_set()):
                    self._ended.wait(_LOCK_POLL_S)
            if cancel is not None and cancel.is_set():
                return False

    def _stream(
        self,
        text: str | Iterable[str],
        opts: SynthesisOptions,
        cancel: threading.Event | None,
        stage: OutputStage,
        pacing: RequestPacing,
        timeline: _Timeline,
        count_arrivals: bool = False,
    ) -> Generator[AudioResult, None, None]:
        """The request's text through `engine.text.TextPipeline`, each `Part` rendered in
        turn: sentences in one `Voice.render` call (a pause before them unless they start
        the request or follow a break), a break as exactly its length of zero samples.
        Deltas read here are told to `pacing` as they arrive when `count_arrivals`."""
        pipeline = TextPipeline(rewrite=self.rewrite, first_clause=self.first_clause)
        if isinstance(text, PhrasedText):  # given as accent phrases: spoken as given
            parts: Iterable[Part] = [Part(sentences=tuple(text.sentences()), chars=len(text))]
        elif isinstance(text, str):
            parts = pipeline.whole(text)
        else:
            parts = _parts(text, pipeline, cancel, pacing if count_arrivals else None)
        spoken = False
        clause = False  # the part before ended mid-sentence, at a clause mark
        for part in parts:
            if part.silence > 0:
                n = round(part.silence * self.sample_rate)
                chunk = stage.push(np.zeros(n, np.float32), final=True)
                timeline.pushed(n)
                if chunk.size or stage.passthrough:
                    yield AudioResult(stage.rate, chunk, timeline.take())
                spoken = False  # the break is the pause before what follows
                continue
            at = dataclasses.replace(opts, speed=opts.speed * part.rate) if part.rate != 1 else opts
            pause = (CLAUSE_PAUSE if clause else self._pause_s(opts)) if spoken else None
            pacing.begin_part(part.chars)
            heard = yield from self._render(
                part.sentences,
                at,
                cancel,
                stage,
                pause_before=pause,
                pacing=pacing,
                timeline=timeline,
                less_waited=clause,
            )
            spoken, clause = spoken or heard, part.clause

    def _render(
        self,
        sentences: Sequence[str],
        opts: SynthesisOptions,
        cancel: threading.Event | None,
        stage: OutputStage,
        *,
        pause_before: float | None,
        pacing: RequestPacing,
        timeline: _Timeline,
        less_waited: bool = False,
    ) -> Generator[AudioResult, None, bool]:
        """Voice.render under the lock; int16 chunks (through `stage`). Returns whether any
        sound was made. The time spent inside the voice (on `clock`) teaches `speed`, and
        each piece is reported to `pacing`, which the voice sees as its listener.
        `pause_before` goes before the first sound, shortened by the silence the listener
        has already heard when `less_waited`."""
        sr = self.sample_rate
        heard = False
        compute = audio = 0.0
        self._acquire(cancel)
        self._begun.add(id(stage))  # part-way through: no switch until this request ends
        key = self._speed_key()  # under the lock: the precision cannot change while it runs
        try:
            pieces = self.voice.render(sentences, opts, listener=pacing)
            try:
                while True:
                    t0 = self.clock.now()
                    piece = next(pieces, None)
                    spent = self.clock.now() - t0
                    if piece is None:
                        break
                    samples = np.asarray(piece.samples, dtype=np.float32).reshape(-1)
                    compute += spent
                    audio += samples.size / sr
                    gap_n = 0
                    if pause_before is not None and not heard and samples.size:
                        waited = pacing.silence_heard() if less_waited else 0.0
                        gap_n = int(round(max(0.0, pause_before - waited) * sr))
                        samples = np.concatenate([np.zeros(gap_n, np.float32), samples])
                    heard = heard or samples.size > 0
                    pacing.produced(samples.size / sr, spent, piece.remaining, piece.tail)
                    chunk = stage.push(samples, final=piece.final)
                    timeline.pushed(samples.size, piece.timings, gap_n)
                    if chunk.size or stage.passthrough:  # a held-back piece yields nothing
                        yield AudioResult(stage.rate, chunk, timeline.take())
                self.speed.observe(key, compute, audio)
            finally:
                pieces.close()
        finally:
            self.lock.release()
        return heard

    def _pause_s(self, opts: SynthesisOptions) -> float:
        if opts.sentence_silence is not None:
            return max(0.0, float(opts.sentence_silence))
        pause = self.voice.sentence_pause
        return DEFAULT_STREAM_PAUSE if pause is None else float(pause)


class _Timeline:
    """One request's phoneme timings (`with_timing`) placed on its output's timeline: a
    piece's timings count from its own first sample, so each is shifted by the voice audio
    pushed into the request's `OutputStage` before it (and by the pause put in front of it
    here), plus what the stage puts before the first sound (chime, lead silence). They wait
    in `pending` until a chunk goes out (a stage that holds audio back holds them too)."""

    def __init__(self, voice_rate: int, lead_s: float) -> None:
        self.voice_rate = voice_rate
        self.lead_s = lead_s
        self.samples = 0
        """Voice-rate samples pushed into the stage so far."""
        self.pending: list[PhonemeTiming] | None = None

    def pushed(self, n: int, timings: Sequence[PhonemeTiming] | None = None, at: int = 0) -> None:
        """`n` samples pushed; `timings` of a piece whose audio starts `at` samples in."""
        if timings is not None:
            base = self.lead_s + (self.samples + at) / self.voice_rate
            moved = [PhonemeTiming(t.phoneme, base + t.start, t.duration) for t in timings]
            self.pending = (self.pending or []) + moved
        self.samples += n

    def take(self) -> list[PhonemeTiming] | None:
        """The timings waiting for a chunk (None: none were made)."""
        out, self.pending = self.pending, None
        return out


def _lead_s(output: OutputOptions | None, stage: OutputStage) -> float:
    """Seconds the stage puts before the request's first sound (chime, lead silence)."""
    if output is None or stage.passthrough:
        return 0.0
    chime = output.chime.duration if output.chime is not None else 0.0
    return chime + round(output.lead_silence * stage.rate) / stage.rate


def _joined(chunks: Sequence[AudioResult], sr: int, timed: bool) -> AudioResult:
    """A request's chunks as one result; with `timed`, their timings joined (each chunk's
    are already on the request's timeline)."""
    result = AudioResult.concat(chunks, sr=sr)
    if timed:
        result.timings = [t for c in chunks for t in (c.timings or ())]
    return result


def _check_lang(lang: object) -> None:
    """hayakoe's `lang=`: Japanese only (its `Lang.JP`, or "JP"), as hayakoe 1.3 checks."""
    value = str(getattr(lang, "value", lang))
    if value.upper() != "JP":
        raise NotImplementedError(f"only Japanese (lang='JP') is supported, got lang={value!r}")


_END = object()
_CANCEL = object()
_QUIET = object()  # no delta for a while: settle what has ended


def _parts(
    deltas: Iterable[Any],
    pipeline: TextPipeline,
    cancel: threading.Event | None,
    arrivals: RequestPacing | None = None,
) -> Iterator[Part]:
    """The parts of text arriving in deltas, as each completes (each delta told to
    `arrivals` as it is read)."""
    for delta in deltas:
        if cancel is not None and cancel.is_set():
            raise StreamCancelled()
        if delta is _QUIET:
            yield from pipeline.settle()
            continue
        if arrivals is not None and isinstance(delta, str):
            arrivals.arrived(len(delta))
        yield from pipeline.feed(delta)
    yield from pipeline.close()


class _Arrivals:
    """When the last delta arrived (`time.monotonic`), written by the pump, read by the worker."""

    def __init__(self) -> None:
        self.last = time.monotonic()


def _blocking_deltas(
    feed: queue.Queue[Any],
    cancel: threading.Event,
    quiet: float | None = None,
    arrivals: _Arrivals | None = None,
) -> Iterator[Any]:
    """Deltas put on `feed` by the event loop, read in the worker thread; `_QUIET` once
    when none arrived for `quiet` seconds after the last one (timed from its arrival, not
    from when the worker read it)."""
    waiting = True  # nothing to settle before the first delta, nor twice in one silence
    while True:
        if quiet is not None and arrivals is not None and not waiting:
            try:
                item = feed.get(timeout=max(0.0, arrivals.last + quiet - time.monotonic()))
            except queue.Empty:
                waiting = True
                yield _QUIET
                continue
        else:
            item = feed.get()
        waiting = False
        if item is _END:
            return
        if item is _CANCEL or cancel.is_set():
            raise StreamCancelled()
        if isinstance(item, Failure):
            raise item.exc
        yield item


async def _pump(
    source: AsyncIterable[str],
    feed: queue.Queue[Any],
    pacing: RequestPacing,
    arrivals: _Arrivals | None = None,
) -> None:
    """Move deltas from an async iterable to the worker's queue (telling `pacing` what
    arrived, and `arrivals` when)."""
    try:
        async for delta in source:
            if isinstance(delta, str):
                pacing.arrived(len(delta))
            if arrivals is not None:
                arrivals.last = time.monotonic()
            feed.put(delta)
    except asyncio.CancelledError:
        feed.put(_CANCEL)
        raise
    except BaseException as exc:  # noqa: BLE001 - handed to the worker
        feed.put(Failure(exc))
        return
    feed.put(_END)
