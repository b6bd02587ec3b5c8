"""Sentence splitting for streaming synthesis, whole or incrementally (text deltas).

Why: the server receives text as deltas (an LLM's tokens) and wants to start speaking each
sentence as soon as it is complete, so the split must be decidable from a prefix and must not
depend on where the deltas were cut.

Rules (the same for :func:`split_sentences` and :class:`SentenceSplitter`):

- A sentence ends at a terminator: ``。！？!?…‥｡．.‼⁇⁈⁉`` or a line break.
- A run of terminators and closing brackets/quotes (``」』）)】〕］]｝}〉》”’"'``) that follows
  directly stays with the sentence: ``「はい。」`` is one sentence. If the run ends with a
  closing bracket/quote and the quotative particle ``と``/``って`` follows at once, the
  sentence goes on: ``「はい。」と言った。`` is one sentence.
- ``.``/``．`` directly followed by an ASCII letter or a digit is no terminator: ``23.5``,
  ``v1.2``, ``example.com``. Commas never split (``1,200``).
- A sentence ends only if it holds a *speech character* (a letter — kana, kanji, Latin — or a
  digit). Anything between its end and the next speech character that is not an opening
  bracket or quote (emoji, symbols, stray punctuation, whitespace) is merged into it, so no
  sentence without speech characters is produced; an opening bracket starts the next
  sentence. Text with no speech character at all comes back as one piece (stripped).
- Each sentence is stripped of surrounding whitespace; no other character is lost, so the
  non-whitespace characters of the output, joined, equal those of the input.

Incremental decisions that need a look-ahead (a ``.`` at the end of the buffer, a terminator
run that reaches the end of the buffer, a finished sentence waiting for the next speech
character) wait for the next delta or :meth:`SentenceSplitter.flush`. Feeding a text in
deltas cut anywhere gives exactly the sentences that :func:`split_sentences` gives.
"""

from __future__ import annotations

import logging
import unicodedata

__all__ = ["split_sentences", "SentenceSplitter"]

_LOGGER = logging.getLogger(__name__)

_NEWLINES = frozenset("\n\r\u2028\u2029\x0b\x0c\x85")
_TERMINATORS = frozenset("。！？!?…‥｡．.‼⁇⁈⁉") | _NEWLINES
_DOTS = frozenset(".．")
_CLOSERS = frozenset("」』）)】〕］]｝}〉》〙〗〛”’»›｣")
_AMBIGUOUS_QUOTES = frozenset("\"'＂＇")
# Particles that, right after a closing quote, make the quotation part of the sentence.
_QUOTATIVE = frozenset("とっ")
_OPENERS = frozenset("「『（(【〔［[｛{〈《〘〖〚“‘«‹｢") | _AMBIGUOUS_QUOTES


def _is_speech(ch: str) -> bool:
    """True for characters that are read aloud: letters (any script) and digits."""
    cat = unicodedata.category(ch)
    return cat[0] == "L" or cat == "Nd" or cat == "No" or cat == "Nl"


def _dot_continues(ch: str) -> bool:
    """True when ``ch`` right after a ``.`` means the dot is inside a token (23.5, v1.2, a.com)."""
    return ch.isdigit() or ("a" <= ch <= "z") or ("A" <= ch <= "Z")


def _scan(buf: str, final: bool) -> tuple[list[str], int]:
    """Split ``buf`` (text not yet emitted).

    Returns the complete sentences and how many characters of ``buf`` they consumed. With
    ``final`` the whole buffer is consumed.
    """
    out: list[str] = []
    n = len(buf)
    start = 0
    i = 0
    has_speech = False
    pending = False  # the current sentence has ended; waiting for the next speech char
    cut: int | None = None  # where the next sentence starts (first opener while pending)
    quote_end = -1  # index right after a terminator run that ended with a closing quote

    while i < n:
        ch = buf[i]
        if pending:
            if _is_speech(ch):
                if i == quote_end and ch in _QUOTATIVE:
                    # 「そうか。」と言った: a quotation inside the sentence, not its end.
                    pending = False
                    i += 1
                    continue
                end = i if cut is None else cut
                out.append(buf[start:end].strip())
                start = end
                pending = False
                cut = None
                has_speech = True
                i += 1
                continue
            if cut is None and ch in _OPENERS:
                cut = i
            i += 1
            continue
        if _is_speech(ch):
            has_speech = True
            i += 1
            continue
        if ch not in _TERMINATORS:
            i += 1
            continue
        if ch in _DOTS:
            if i + 1 >= n:
                if not final:
                    break  # undecidable: "23." may become "23.5"
            elif _dot_continues(buf[i + 1]):
                i += 1
                continue
        # A terminator: take the run of terminators and closers that follows it.
        j = i + 1
        while j < n and (buf[j] in _TERMINATORS or buf[j] in _CLOSERS or buf[j] in _AMBIGUOUS_QUOTES):
            j += 1
        if j >= n and not final:
            break  # more closers may follow in the next delta
        if has_speech:
            pending = True
            cut = None
            quote_end = j if buf[j - 1] in _CLOSERS else -1
        i = j

    if not final:
        return out, start
    rest = buf[start:].strip()
    if rest:
        out.append(rest)
    return out, n


def split_sentences(text: str) -> list[str]:
    """Split a whole text into sentences (see the module docstring for the rules)."""
    sentences, _ = _scan(text, final=True)
    return sentences


class SentenceSplitter:
    """Incremental sentence splitter: :meth:`feed` text deltas, get complete sentences.

    >>> s = SentenceSplitter()
    >>> s.feed("気温は23.")
    []
    >>> s.feed("5度です。明日")
    ['気温は23.5度です。']
    >>> s.flush()
    ['明日']
    """

    def __init__(self) -> None:
        self._buf = ""

    def feed(self, delta: str) -> list[str]:
        """Add ``delta`` and return the sentences completed so far (possibly none)."""
        if not delta:
            return []
        self._buf += delta
        sentences, used = _scan(self._buf, final=False)
        if used:
            self._buf = self._buf[used:]
        return sentences

    def flush(self) -> list[str]:
        """Return what is left as sentences (end of the stream) and reset the splitter."""
        sentences, _ = _scan(self._buf, final=True)
        self._buf = ""
        return sentences

    @property
    def pending(self) -> str:
        """Text received but not yet returned as a sentence."""
        return self._buf
