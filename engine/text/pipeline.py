"""One request's text, whole or in deltas, to what a voice speaks next: `TextPipeline`.

Everything the text of a request goes through before synthesis happens here, in one walk:
the user dictionary is refreshed from disk, SSML is recognised (from the first characters of
a stream) and parsed (`engine.text.ssml`), text is split into sentences as they complete
(`engine.text.splitter`), each sentence is rewritten (`engine.text.rewriter`: times, units,
Latin words) and split again where rewriting made more than one. Out comes a `Part` at a
time: sentences to speak in one render call (at an SSML prosody rate), or an exact silence
(an SSML break). `engine.speaker.Speaker` renders the parts; it never reaches back into
the text.

A stream that goes quiet (`settle`, called by `engine.speaker.Speaker` when no delta came for
`quiet` seconds) hands out the sentences whose end is seen at once, instead of waiting for the
next delta to decide whether closing quotes or a quotative と belong to them.

Text in deltas (a language model's tokens) can end its first part early, at a pause mark
(`is_pause_mark`: 、, or a comma no digit follows) once it holds `first_clause` characters:
the first audio then waits for a clause, not for a whole sentence (docs/frontend.md, "The
first clause of a stream"; `python -m benchmarks.server llm-pace` measures what it gains,
`python -m benchmarks.engine first_clause` what it costs in prosody).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .splitter import SentenceSplitter, split_sentences

if TYPE_CHECKING:
    from .accents import AccentPhrase
    from .ssml import Segment, SsmlParser

CLAUSE_MARKS = "、，,"
"""Where a stream's first part may end early (Japanese and full-width/ASCII commas)."""

DIGIT_GROUP_MARKS = "，,"
"""Clause marks that also group digits (1,200): a pause only where no digit follows."""


def is_pause_mark(text: str, i: int) -> bool:
    """Whether `text[i]` is a clause mark a speaker pauses at: 、 always; a comma after a
    digit only once the character after it is seen and is not a digit (`1,200` is one
    number; a comma that ends the text so far may yet be part of one)."""
    mark = text[i]
    if mark not in CLAUSE_MARKS:
        return False
    if mark not in DIGIT_GROUP_MARKS or not text[i - 1 : i].isdigit():
        return True
    after = text[i + 1 : i + 2]
    return bool(after) and not after.isdigit()


@dataclass(frozen=True)
class Part:
    """What to say next: `sentences` in one render call at `rate`, or `silence` seconds."""

    sentences: tuple[str, ...] = ()
    """Rewritten, split, non-empty sentences (empty for a silence)."""
    rate: float = 1.0
    """Speed factor (SSML `<prosody rate>`), multiplies the request's speed."""
    silence: float = 0.0
    """Seconds of exact silence (SSML `<break>`); then there are no sentences."""
    clause: bool = False
    """The part ends mid-sentence, at a clause mark (a stream's early first part)."""
    chars: int = field(default=0, compare=False)
    """Characters of the request's text in this part, as they arrived (before rewriting);
    a count for the playback guard, not part of what is said."""


@dataclass(frozen=True)
class Readings:
    """How a text will be read: the sentences as the voice gets them (rewritten, split) and
    their accent phrases (`engine.text.accents`), for a page that shows why a word sounds
    wrong."""

    sentences: tuple[str, ...]
    phrases: tuple[AccentPhrase, ...]

    @property
    def text(self) -> str:
        """The rewritten text (the sentences joined)."""
        return "".join(self.sentences)


def sentences_of(text: str, *, rewrite: bool = True) -> list[str]:
    """A complete plain text as the sentences a voice renders: rewritten (when `rewrite`),
    split, blank ones left out."""
    if rewrite:
        from .rewriter import rewrite as rewrite_text

        text = rewrite_text(text)
    return [s for s in split_sentences(text) if s.strip()]


class TextPipeline:
    """One request's text → `Part`s. `whole(text)` for a complete text; `feed(delta)` …
    `close()` for text in deltas. Made per request (it refreshes the user dictionary)."""

    def __init__(self, *, rewrite: bool = True, first_clause: int = 0) -> None:
        from .userdict_watch import refresh_user_dictionary

        refresh_user_dictionary()  # between requests: files that changed on disk
        self.rewrite = rewrite
        self.first_clause = first_clause
        """Characters a stream's first part must hold before it may end at a clause mark
        (0: only at sentence ends)."""
        self._splitter = SentenceSplitter()
        self._mode: str | None = None  # None until the start of a stream decides: plain/ssml
        self._head = ""
        self._ssml: SsmlParser | None = None
        self._rate = 1.0
        self._parts = 0  # parts with sentences handed out

    # -- a whole text ----------------------------------------------------------------------
    def whole(self, text: str) -> list[Part]:
        """A complete text: SSML parsed as a document, plain text as one part."""
        from . import ssml

        if ssml.is_ssml(text):
            return list(self._segments(ssml.parse_ssml(text), final=True))
        sentences = sentences_of(text, rewrite=self.rewrite)
        return [Part(tuple(sentences))] if sentences else []

    def readings(self, text: str) -> Readings:
        """`text` as it will be read: the sentences of `whole(text)` (SSML breaks and rates
        left out) and the accent phrases OpenJTalk reads in each."""
        from .accents import accent_phrases

        sentences = tuple(s for part in self.whole(text) for s in part.sentences)
        return Readings(sentences, tuple(p for s in sentences for p in accent_phrases(s)))

    # -- text in deltas --------------------------------------------------------------------
    def feed(self, delta: str) -> list[Part]:
        """The parts completed by `delta` (possibly none)."""
        if not isinstance(delta, str):
            raise TypeError(f"text deltas must be str, got {type(delta).__name__}")
        if self._mode is None:
            self._head += delta
            mode = _sniff(self._head)
            if mode is None:
                return []
            self._mode, delta, self._head = mode, self._head, ""
        if self._mode == "ssml":
            return list(self._segments(self._parser().feed(delta), final=False))
        parts = self._plain(self._splitter.feed(delta))
        if not self._parts and not parts:
            parts = self._plain(self._early_clause(), clause=True)
        return parts

    def settle(self) -> list[Part]:
        """The stream went quiet (no delta for a while): the sentences whose end is seen,
        without waiting for the next delta to decide what follows them (`SentenceSplitter.settle`:
        what a late delta would have added to them is dropped). Nothing while the start of
        the stream is still being sniffed for SSML."""
        if self._mode is None:
            return []
        return self._plain(self._splitter.settle())

    def close(self) -> list[Part]:
        """The end of the stream: what is left."""
        from . import ssml

        if self._mode is None:
            self._mode = "ssml" if ssml.is_ssml(self._head) else "plain"
            parts = self.feed(self._head) if self._head else []
            self._head = ""
            return parts + self.close()
        if self._mode == "ssml":
            return list(self._segments(self._parser().close(), final=True))
        return self._plain(self._splitter.flush())

    # -- internals ---------------------------------------------------------------------------
    def _parser(self) -> SsmlParser:
        from .ssml import SsmlParser

        if self._ssml is None:
            self._ssml = SsmlParser("SSML stream")
        return self._ssml

    def _early_clause(self) -> list[str]:
        """The first part of a stream cut at its last clause mark, once long enough."""
        if self.first_clause <= 0:
            return []
        pending = self._splitter.pending
        if len(pending) < self.first_clause:
            return []
        cut = max((i for i in range(len(pending)) if is_pause_mark(pending, i)), default=-1)
        if cut + 1 < self.first_clause:
            return []
        return [self._splitter.take(cut + 1)]

    def _plain(self, sentences: Iterable[str], *, clause: bool = False) -> list[Part]:
        """Completed sentences as one part (each rewritten and split again)."""
        prepared: list[str] = []
        chars = 0
        for sentence in sentences:
            chars += len(sentence)
            if sentence and sentence.strip():
                prepared.extend(sentences_of(sentence, rewrite=self.rewrite))
        if not prepared:
            return []
        self._parts += 1
        return [Part(tuple(prepared), self._rate, clause=clause, chars=chars)]

    def _segments(self, segments: Iterable[Segment], *, final: bool) -> Iterator[Part]:
        """SSML segments: sentences split across segments; a rate change or a break ends
        the sentences before it; a break is its silence."""
        for seg in segments:
            if seg.silence > 0 or seg.rate != self._rate:
                yield from self._plain(self._splitter.flush())
                self._rate = seg.rate
            if seg.silence > 0:
                yield Part(silence=seg.silence)
            elif seg.text:
                yield from self._plain(self._splitter.feed(seg.text))
        if final:
            yield from self._plain(self._splitter.flush())


def _sniff(head: str) -> str | None:
    """ "ssml" or "plain" once the start of a stream decides it, else None."""
    from .ssml import stream_is_ssml

    found = stream_is_ssml(head)
    return None if found is None else ("ssml" if found else "plain")
