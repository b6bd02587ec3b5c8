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
- A sentence that reaches ``max_chars`` (default
  :data:`engine.text.limits.MAX_SENTENCE_CHARS`, 150) characters without ending is cut after
  its last comma or space (in its last two thirds), else before a trailing Latin/digit run,
  else at the limit — the decision needs only the characters so far, so it streams too.
  The limit holds for every sentence: one whose terminator run, or whatever follows its end
  up to the next speech character, would take it past ``max_chars`` ends at the limit (at an
  opening bracket or quote before it, if any), and a run of ``max_chars`` characters with no
  speech character (marks, emoji, combining marks, spaces) is a sentence of its own. So
  ``あ`` + 3,000 ``!`` is 21 sentences, never one that OpenJTalk cannot take (it crashes the
  process at 2,733 characters); this is the one case where a sentence holds no speech.
- Each sentence is stripped of surrounding whitespace; no other character is lost, so the
  non-whitespace characters of the output, joined, equal those of the input.

Incremental decisions that need a look-ahead (a ``.`` at the end of the buffer, a terminator
run that reaches the end of the buffer, a finished sentence waiting for the next speech
character) wait for the next delta, :meth:`SentenceSplitter.flush`, or
:meth:`SentenceSplitter.settle`. Feeding a text in deltas cut anywhere gives exactly the
sentences that :func:`split_sentences` gives, as long as `settle` is not called.

A stream that goes quiet (`settle`: its producer stopped sending for a while, e.g. an LLM
calling a tool) ends every sentence whose end is seen: the look-ahead is decided as if the
text ended there, except a ``.`` right after a digit (``23.`` may still become ``23.5``).
The unfinished rest stays. What a later delta would have added to a settled sentence is
dropped, up to the next speech character or opening bracket: closing brackets and quotes,
more terminators, emoji, symbols, whitespace (``「はい。`` quiet ``」と言った。`` →
``「はい。`` then ``と言った。``; ``はい。`` quiet ``😊次`` → ``はい。`` then ``次``). The
sentence was already spoken, and none of these is read aloud; a late quotative ``と``
begins the next sentence instead of continuing the quotation's.
"""

from __future__ import annotations

import logging
import unicodedata

from .limits import MAX_SENTENCE_CHARS

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


_SOFT_BREAKS = frozenset("、，,;；:：\u3000 \t")

MAX_CHARS = MAX_SENTENCE_CHARS
"""Default longest sentence: a longer one is cut (`engine.text.limits.MAX_SENTENCE_CHARS`)."""


def _is_ascii_alnum(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def _is_speech(ch: str) -> bool:
    """True for characters that are read aloud: letters (any script) and digits."""
    cat = unicodedata.category(ch)
    return cat[0] == "L" or cat == "Nd" or cat == "No" or cat == "Nl"


def _dot_continues(ch: str) -> bool:
    """True when ``ch`` right after a ``.`` means the dot is inside a token (23.5, v1.2, a.com)."""
    return ch.isdigit() or ("a" <= ch <= "z") or ("A" <= ch <= "Z")


def _long_cut(seg: str) -> int:
    """Where to cut an over-long sentence ``seg``: after its last comma or space in the last
    two thirds, else before a trailing Latin/digit run (so 1,200 or a word stays whole), else
    at its end; at its end too if the part before the cut has no speech character."""
    floor = len(seg) // 3
    at = None
    for k in range(len(seg) - 1, floor - 1, -1):
        if seg[k] in _SOFT_BREAKS:
            at = k + 1
            break
    if at is None:
        at = len(seg)
        while at > floor and _is_ascii_alnum(seg[at - 1]):
            at -= 1
        if at == floor:
            at = len(seg)
    if not any(_is_speech(c) for c in seg[:at]):
        return len(seg)
    return at


def _scan(
    buf: str, final: bool, max_chars: int | None = None, settle: bool = False
) -> tuple[list[str], int]:
    """Split ``buf`` (text not yet emitted).

    Returns the complete sentences and how many characters of ``buf`` they consumed. With
    ``final`` the whole buffer is consumed; with ``settle`` every sentence whose end is seen
    (the look-ahead decided as if the text ended here, but for a ``.`` after a digit) and
    the unfinished rest is left.
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
        if max_chars and i - start >= max_chars:
            # The sentence reached the limit in its terminator run or in what followed its
            # end (no speech character since): it ends here, or at an opener before.
            end = i if cut is None or cut <= start else cut
            _emit(out, buf[start:end])
            start = end
            pending = False
            cut = None
            has_speech = False
            quote_end = -1
            continue
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
        if ch not in _TERMINATORS:
            if _is_speech(ch):
                has_speech = True
            i += 1
            if max_chars and i - start >= max_chars:
                at = _long_cut(buf[start:i])
                _emit(out, buf[start : start + at])
                start += at
                has_speech = any(_is_speech(c) for c in buf[start:i])
            continue
        if ch in _DOTS:
            if i + 1 >= n:
                if not final and not (settle and not (i and buf[i - 1].isdigit())):
                    break  # undecidable: "23." may become "23.5"
            elif _dot_continues(buf[i + 1]):
                i += 1
                continue
        # A terminator: take the run of terminators and closers that follows it.
        j = i + 1
        limit = start + max_chars if max_chars else n
        while j < min(n, limit) and (
            buf[j] in _TERMINATORS or buf[j] in _CLOSERS or buf[j] in _AMBIGUOUS_QUOTES
        ):
            j += 1
        if j >= n and j < limit and not final and not settle:
            break  # more closers may follow in the next delta
        if has_speech:
            pending = True
            cut = None
            quote_end = j if buf[j - 1] in _CLOSERS else -1
        i = j

    if settle and pending:
        end = n if cut is None else cut
        _emit(out, buf[start:end])
        start = end
    if not final:
        return out, start
    rest = buf[start:].strip()
    if rest:
        out.append(rest)
    return out, n


def _emit(out: list[str], sentence: str) -> None:
    """Add `sentence` stripped, unless nothing is left of it (a run of spaces at the limit)."""
    sentence = sentence.strip()
    if sentence:
        out.append(sentence)


def split_sentences(text: str, max_chars: int | None = MAX_CHARS) -> list[str]:
    """Split a whole text into sentences (see the module docstring for the rules)."""
    sentences, _ = _scan(text, final=True, max_chars=max_chars)
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

    def __init__(self, max_chars: int | None = MAX_CHARS) -> None:
        self._buf = ""
        self.max_chars = max_chars
        self._settled = False  # a settled sentence's late additions are still dropped

    def feed(self, delta: str) -> list[str]:
        """Add ``delta`` and return the sentences completed so far (possibly none)."""
        if not delta:
            return []
        if self._settled:
            delta = self._drop_late(delta)
            if not delta:
                return []
        self._buf += delta
        sentences, used = _scan(self._buf, final=False, max_chars=self.max_chars)
        if used:
            self._buf = self._buf[used:]
        return sentences

    def flush(self) -> list[str]:
        """Return what is left as sentences (end of the stream) and reset the splitter."""
        sentences, _ = _scan(self._buf, final=True, max_chars=self.max_chars)
        self._buf = ""
        self._settled = False
        return sentences

    def settle(self) -> list[str]:
        """The stream went quiet: return every sentence whose end is seen, without waiting
        for the look-ahead (module docstring); the unfinished rest stays pending."""
        sentences, used = _scan(self._buf, final=False, max_chars=self.max_chars, settle=True)
        if not sentences:
            return []
        self._buf = self._buf[used:]
        self._settled = True
        if self._buf:  # already here: what the settled sentence would have taken
            self._buf = self._drop_late(self._buf)
        return sentences

    def _drop_late(self, text: str) -> str:
        """``text`` without what would have joined the settled sentence before it."""
        for k, ch in enumerate(text):
            if _is_speech(ch) or ch in _OPENERS:
                self._settled = False
                if k:
                    _LOGGER.debug("Dropped %r after a settled sentence", text[:k])
                return text[k:]
        return ""

    @property
    def pending(self) -> str:
        """Text received but not yet returned as a sentence."""
        return self._buf

    def take(self, n: int) -> str:
        """Hand out the first `n` characters of `pending` before their sentence ends (a
        clause of a stream's first sentence, `engine.text.pipeline`)."""
        head, self._buf = self._buf[:n], self._buf[n:]
        return head
