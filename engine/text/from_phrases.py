"""Speech from given accent phrases, not from text: what an editor of readings hands over.

A client of the VOICEVOX engine API gets the accent phrases of a text (`accent_phrases`),
may move an accent nucleus, change a mora or add a pause, and asks for that to be spoken.
`PhrasedText` carries the (edited) phrases through `Speaker.generate` / `stream` /
`agenerate` / `astream`, never rewritten or re-read, split into sentences where the client
marked their ends (`ends`) and where a sentence would be longer than the text path's: more
than `engine.text.limits.MAX_SENTENCE_MORAE` morae or `MAX_SENTENCE_PHONES` phones is cut at
an accent phrase boundary (after a pause in its last two thirds, if there is one), and an
accent phrase longer than that at a mora boundary (`sentences`). The synthesizer's memory grows
with the square of a sentence's length: one of 2,000 morae took it past 11 GB. A sentence
within the bounds is spoken exactly as before.

- a neural voice builds its phones and tones from the phrases (`analysis_of_phrases`): each
  mora's phones from its katakana, each mora's tone high or low by the phrase's accent
  (`pitch_pattern`, the rule `accent_phrases` reads back), a ``,`` after a phrase with a
  pause, and a ``.`` (``?`` after a question) at the end; BERT reads the katakana;
- a voice that reads only text (the embedded HTS voice) reads the string itself: the
  katakana, with ``、`` at the pauses and ``？`` after a question (the reading is kept, the
  accents are its own).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .accents import AccentPhrase
from .analysis import Analysis
from .g2p import bert_chars, char_token_count, distribute_phones
from .limits import MAX_SENTENCE_MORAE, MAX_SENTENCE_PHONES
from .mora import MORA_TO_PHONES
from .symbols import JP_LANG_ID, JP_TONE_START, PAD, SYMBOL_TO_ID

__all__ = ["MORA_TO_PHONES", "PhrasedText", "analysis_of_phrases", "mora_phones"]

_SPECIAL = {"ッ": ("q",), "ン": ("N",), "ー": ("-",)}


def mora_phones(mora: str) -> tuple[str, ...]:
    """The phones of one mora written in katakana (``キョ`` → ``ky o``); ValueError for a
    string that is not one mora."""
    found = _SPECIAL.get(mora) or MORA_TO_PHONES.get(mora)
    if found is None:
        raise ValueError(f"{mora!r} is not a mora in katakana")
    return tuple(found)


class PhrasedText(str):
    """Speech given as accent phrases: the string is its reading (katakana, ``、`` at a
    pause, ``。`` at a sentence's end, ``？`` after a question); `phrases` is what a voice
    that can speaks. `ends`: the indexes of the phrases that end a sentence (besides the
    last); `sentences` splits there, and `Speaker` renders them as a text's sentences."""

    phrases: tuple[AccentPhrase, ...]
    ends: frozenset[int]

    def __new__(cls, phrases: Sequence[AccentPhrase], ends: Iterable[int] = ()) -> PhrasedText:
        for phrase in phrases:
            for mora in phrase.morae:
                mora_phones(mora)  # every mora known, or ValueError now
            if not 1 <= phrase.accent <= max(1, len(phrase.morae)):
                raise ValueError(
                    f"accent {phrase.accent} outside 1..{len(phrase.morae)} for {phrase.reading!r}"
                )
        stops = frozenset(i for i in ends if 0 <= i < len(phrases) - 1)
        reading = "".join(
            p.reading
            + ("？" if p.question else "。" if i in stops else "、" if p.pause_after else "")
            for i, p in enumerate(phrases)
        )
        made = super().__new__(cls, reading)
        made.phrases = tuple(phrases)
        made.ends = stops
        return made

    def sentences(self) -> list[PhrasedText]:
        """One `PhrasedText` per sentence: split after each of `ends`, and each within
        `MAX_SENTENCE_MORAE` and `MAX_SENTENCE_PHONES` (module doc)."""
        out: list[PhrasedText] = []
        start = 0
        for end in [*sorted(self.ends), len(self.phrases) - 1]:
            out.extend(PhrasedText(group) for group in _bounded(self.phrases[start : end + 1]))
            start = end + 1
        return [s for s in out if s.phrases] or [self]


def _phones(phrase: AccentPhrase) -> int:
    """The phones `phrase` puts in a sentence: its morae's, and a pause or question mark."""
    marks = 1 if phrase.question or phrase.pause_after else 0
    return sum(len(mora_phones(m)) for m in phrase.morae) + marks


def _cut_phrase(phrase: AccentPhrase) -> list[AccentPhrase]:
    """`phrase` in equal pieces cut at mora boundaries, each within the bounds (itself when
    it is). Each piece keeps the accent where it falls inside it (the fall after the piece:
    rising to its end; the fall before it: high on its first mora only); the pause or
    question mark stays on the last."""
    morae = phrase.morae
    count = max(
        -(-len(morae) // MAX_SENTENCE_MORAE),
        -(-_phones(phrase) // (MAX_SENTENCE_PHONES - 1)),  # the sentence's final mark
    )
    if count <= 1:
        return [phrase]
    size, extra = divmod(len(morae), count)
    out: list[AccentPhrase] = []
    start = 0
    for k in range(count):
        end = start + size + (1 if k < extra else 0)
        piece = morae[start:end]
        last = k == count - 1
        accent = max(1, min(phrase.accent - start, len(piece)))
        out.append(
            AccentPhrase(
                piece,
                accent,
                pause_after=phrase.pause_after and last,
                question=phrase.question and last,
            )
        )
        start = end
    return out


def _bounded(phrases: Sequence[AccentPhrase]) -> list[list[AccentPhrase]]:
    """One sentence's phrases as sentences within the bounds: filled in order, each closed
    before the phrase that would take it past a bound, after its last pause in its last two
    thirds if it has one (the rest goes on into the next)."""
    pieces = [piece for phrase in phrases for piece in _cut_phrase(phrase)]
    out: list[list[AccentPhrase]] = []
    group: list[AccentPhrase] = []
    morae = phones = 0
    for phrase in pieces:
        m, p = len(phrase.morae), _phones(phrase)
        if group and (morae + m > MAX_SENTENCE_MORAE or phones + p + 1 > MAX_SENTENCE_PHONES):
            floor = len(group) // 3
            at = next(
                (i + 1 for i in range(len(group) - 1, floor - 1, -1) if group[i].pause_after),
                len(group),
            )
            out.append(group[:at])
            group = group[at:]
            morae = sum(len(g.morae) for g in group)
            phones = sum(_phones(g) for g in group)
        group.append(phrase)
        morae += m
        phones += p
    if group:
        out.append(group)
    return out


def analysis_of_phrases(phrases: Sequence[AccentPhrase]) -> Analysis:
    """Phones, tones, word2ph and ids (without blanks; `Analysis.with_blanks` adds them)
    for `phrases`, one word per mora so that BERT's features follow the morae."""
    phones: list[str] = [PAD]
    tones: list[int] = [0]
    word2ph: list[int] = [1]
    words: list[str] = []

    def punct(mark: str) -> None:
        phones.append(mark)
        tones.append(0)
        word2ph.append(1)
        words.append(mark)

    for phrase in phrases:
        for mora, high in zip(phrase.morae, phrase.pitches):
            these = mora_phones(mora)
            phones.extend(these)
            tones.extend([1 if high else 0] * len(these))
            piece = bert_chars(mora)
            word2ph.extend(distribute_phones(len(these), char_token_count(mora)))
            words.append(piece)
        if phrase.question:
            punct("?")
        elif phrase.pause_after:
            punct(",")
    if not phrases or not phrases[-1].question:
        punct(".")
    phones.append(PAD)
    tones.append(0)
    word2ph.append(1)
    phone_ids = [SYMBOL_TO_ID.get(p, SYMBOL_TO_ID["UNK"]) for p in phones]
    text = str(PhrasedText(phrases))
    return Analysis(
        text=text,
        norm_text=text,
        phones=phones,
        tones=tones,
        word2ph=word2ph,
        phone_ids=phone_ids,
        tone_ids=[t + JP_TONE_START for t in tones],
        lang_ids=[JP_LANG_ID] * len(phone_ids),
        bert_text="".join(words),
    )
