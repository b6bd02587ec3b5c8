"""`SpeechService`: the one way in for every speech request.

Every door (Wyoming, the page, the VOICEVOX / AivisSpeech engine API, OpenAI's speech API,
``say``) builds a `SpeechRequest` and calls `SpeechService.open`; the service

1. resolves the voice by the rule (`wyoming_hayakoe.resolve`: exact, or Wyoming's fallback),
2. applies the request's options over the voice's (the flags, or the preset's), one meaning
   each (`SpeechRequest`'s docs),
3. holds the request to its bounds (`RequestBounds`: characters, seconds of audio; the engine
   holds each sentence and word to its own),
4. admits it to the voice's queue (`Admission`: ``busy`` when full, ``shutting_down`` while
   draining),

and hands back a `Speech`: its voice and rate, and its audio (`stream`, `generate`), made by
the engine's worker threads, never on the event loop, and stopped at the audio bound.
Nothing else in the server calls a speaker's synthesis (a structure test says so).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import AsyncGenerator, AsyncIterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from engine import AudioResult, OutputOptions
from engine.text.from_phrases import PhrasedText
from engine.voice_backend import SynthesisOverrides

from ..admission import Admission, AdmissionRefused, Ticket
from ..resolve import UnknownNameError
from .bounds import MIN_MORA_SECONDS, OutputBudget, RequestBounds
from .errors import BadOption, Busy, OutputTooLong, Problem, TooLarge, UnknownVoice
from .request import SpeechOptions, SpeechRequest

if TYPE_CHECKING:
    from ..info import Resolved, VoiceCatalog

__all__ = ["Speech", "SpeechService"]

_LOGGER = logging.getLogger(__name__)


def _keywords(resolved: Resolved, opts: SpeechOptions) -> SynthesisOverrides:
    """The engine's keywords: the voice's options (flags, or the preset's) with the request's
    factors applied over them; a factor of 1 leaves the voice's value as it is."""
    base = dict(resolved.options)
    kw: dict[str, object] = dict(base)
    kw["style"] = resolved.style
    if opts.speed != 1.0:
        kw["speed"] = float(base.get("speed", 1.0)) * opts.speed
    if opts.pitch != 1.0:
        kw["pitch_scale"] = float(base.get("pitch_scale", 1.0)) * opts.pitch
    if opts.intonation != 1.0:
        kw["intonation_scale"] = float(base.get("intonation_scale", 1.0)) * opts.intonation
    if opts.style_strength != 1.0:
        kw["style_weight"] = float(base.get("style_weight", 1.0)) * opts.style_strength
    if opts.tempo_dynamics != 1.0:
        kw["sdp_ratio"] = min(1.0, float(base.get("sdp_ratio", 0.2)) * opts.tempo_dynamics)
    if opts.sentence_pause is not None:
        kw["sentence_silence"] = opts.sentence_pause / opts.speed
    if opts.seed is not None:
        kw["seed"] = opts.seed
    return kw  # type: ignore[return-value]  # the keys are SynthesisOverrides' own


def _output(base: OutputOptions, opts: SpeechOptions) -> OutputOptions:
    changes: dict[str, object] = {}
    if opts.volume != 1.0:
        changes["volume"] = base.volume * opts.volume
    if opts.sample_rate is not None:
        changes["sample_rate"] = opts.sample_rate
    if opts.lead_silence is not None:
        changes["lead_silence"] = opts.lead_silence / opts.speed
    if opts.tail_silence is not None:
        changes["tail_silence"] = opts.tail_silence / opts.speed
    return dataclasses.replace(base, **changes) if changes else base  # type: ignore[arg-type]


def _chars(text: object) -> int | None:
    return len(text) if isinstance(text, str) else None


class Speech:
    """One admitted request: its voice (`resolved`), the rate it is answered at (`rate`), and
    its audio. `close` (or leaving ``with``) gives its place in the voice's queue back; the
    audio must not be asked for after it."""

    def __init__(
        self,
        request: SpeechRequest,
        resolved: Resolved,
        keywords: SynthesisOverrides,
        output: OutputOptions,
        ticket: Ticket,
        budget: OutputBudget,
        quiet: float | None,
    ) -> None:
        self.request = request
        self.resolved = resolved
        self.output = output
        self.rate = output.rate_for(resolved.speaker.sample_rate)
        self.keywords = keywords
        """What the engine is asked for: the voice's options with the request's applied."""
        self._ticket: Ticket | None = ticket
        self._budget = budget
        self._quiet = quiet

    @property
    def voice(self) -> str:
        return self.resolved.speaker.name

    @property
    def style(self) -> str:
        return self.resolved.style

    def close(self) -> None:
        """Leave the voice's queue (at once; again is a no-op)."""
        ticket, self._ticket = self._ticket, None
        if ticket is not None:
            ticket.release()

    def __enter__(self) -> Speech:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def stream(self) -> AsyncGenerator[AudioResult, None]:
        """The audio as it is made (sentence by sentence, or windows of one), at `rate`.
        Closing the generator stops the synthesis and frees the voice. `OutputTooLong` after
        the last chunk the bound allows (that chunk cut at the bound)."""
        request = self.request
        speaker = self.resolved.speaker
        text = request.text
        if isinstance(text, PhrasedText) and not text.phrases:
            silence = round((self.output.lead_silence + self.output.tail_silence) * self.rate)
            if silence:
                yield AudioResult(self.rate, np.zeros(silence, np.int16))
            return
        chunks = speaker.astream(
            text,
            output=self.output,
            measure_whole=request.measure_whole and not isinstance(text, AsyncIterable),
            guard=request.guard,
            quiet=self._quiet,
            **self.keywords,
        )
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                left = self._budget.left
                if self._budget.spend(chunk.duration):
                    yield chunk
                    continue
                keep = max(0, int(left * chunk.sr))
                if keep:
                    yield AudioResult(chunk.sr, chunk.data[:keep])
                limit = self._budget.limit
                raise OutputTooLong(
                    f"audio too long: the request passed {limit:g} s of audio "
                    "(--max-audio-seconds); the rest was not spoken",
                    limit,
                    limit,
                )

    async def generate(self) -> AudioResult:
        """All the audio as one result (empty for a text with nothing to say)."""
        pieces = [chunk async for chunk in self.stream()]
        return AudioResult.concat(pieces, sr=self.rate)


class SpeechService:
    """Resolves, shapes, bounds and admits speech requests (`open`)."""

    def __init__(
        self,
        catalog: VoiceCatalog,
        admission: Admission,
        bounds: RequestBounds | None = None,
        *,
        stream_quiet: float | None = None,
    ) -> None:
        self.catalog = catalog
        self.admission = admission
        self.bounds = (bounds or RequestBounds()).validate()
        self.stream_quiet = stream_quiet

    # -- the parts of `open`, also for doors that check before they read the whole body ---
    def check_length(self, length: int, field: str = "text") -> None:
        """`TooLarge` when `length` characters pass the request bound (a Wyoming stream
        checks its running total with each chunk)."""
        limit = self.bounds.max_text_length
        if length > limit:
            raise TooLarge(
                Problem.TEXT_TOO_LONG,
                f"{field} too long: {length} characters (limit {limit}, --max-text-length)",
                field,
                limit,
            )

    def check_queries(self, count: int, field: str = "body") -> None:
        """`TooLarge` when a batch (``/multi_synthesis``) has more requests than the bound."""
        limit = self.bounds.max_queries
        if count > limit:
            raise TooLarge(
                Problem.TOO_MANY_QUERIES,
                f"{field}: {count} queries (limit {limit}, --max-queries)",
                field,
                limit,
            )

    def budget(self) -> OutputBudget:
        """The seconds of audio one request (or one batch) may make."""
        return OutputBudget(self.bounds.max_audio_seconds)

    def estimate_s(self, request: SpeechRequest) -> float:
        """The least audio `request` makes (its silences; a reading's morae at the fastest):
        what is refused before any work when it alone passes the budget."""
        opts = request.options
        least = opts.silence_s
        if isinstance(request.text, PhrasedText):
            morae = sum(len(p.morae) for p in request.text.phrases)
            least += morae * MIN_MORA_SECONDS / opts.speed
        return least

    def reserve(self, requests: Sequence[SpeechRequest], budget: OutputBudget) -> None:
        """Refuse a batch whose least audio already passes `budget` (nothing spent)."""
        least = sum(self.estimate_s(r) for r in requests)
        if least > budget.left:
            raise TooLarge(
                Problem.AUDIO_TOO_LONG,
                f"audio too long: at least {least:.0f} s of audio asked for "
                f"(limit {budget.limit:g} s, --max-audio-seconds)",
                "body",
                budget.limit,
            )

    def resolve(self, request: SpeechRequest) -> Resolved:
        """The voice and style `request` gets (`UnknownVoice` unless it falls back)."""
        if request.fallback:
            from wyoming.tts import SynthesizeVoice

            asked = (
                SynthesizeVoice(name=request.voice, speaker=request.style)
                if request.voice is not None or request.style is not None
                else None
            )
            return self.catalog.resolve(asked)
        try:
            return self.catalog.resolve_exact(request.voice, request.style)
        except UnknownNameError as exc:
            unknown = exc.unknown
            raise UnknownVoice(str(exc), unknown.kind, tuple(unknown.available)) from None

    # -- the way in ------------------------------------------------------------------------
    def open(self, request: SpeechRequest, budget: OutputBudget | None = None) -> Speech:
        """The request resolved, shaped, bounded and admitted: a `Speech` to take the audio
        from and to `close`. Raises `UnknownVoice`, `TooLarge`, `BadOption`, `Busy`."""
        chars = _chars(request.text)
        if chars is not None:
            self.check_length(chars)
        budget = budget if budget is not None else self.budget()
        self.reserve([request], budget)
        resolved = self.resolve(request)
        keywords = _keywords(resolved, request.options)
        try:
            resolved.speaker.options(**keywords)  # an option the voice cannot take: now
        except ValueError as exc:
            raise BadOption(str(exc), _option_field(str(exc))) from None
        output = _output(resolved.output, request.options)
        try:
            ticket = self.admission.enter(resolved.speaker.name)
        except AdmissionRefused as exc:
            raise Busy(str(exc), shutting_down=exc.code == "shutting-down") from None
        quiet = request.quiet if request.quiet is not None else self.stream_quiet
        return Speech(request, resolved, keywords, output, ticket, budget, quiet)


def _option_field(message: str) -> str:
    for name in ("pitch", "intonation", "speed", "style", "volume"):
        if name in message:
            return name
    return "options"
