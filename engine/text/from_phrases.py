"""Speech from given accent phrases, not from text: what an editor of readings hands over.

A client of the VOICEVOX engine API gets the accent phrases of a text (`accent_phrases`),
may move an accent nucleus, change a mora or add a pause, and asks for that to be spoken.
`PhrasedText` carries the (edited) phrases through `Speaker.generate` / `stream` /
`agenerate` / `astream` as one sentence, never rewritten, split or re-read:

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
from .mora import MORA_TO_PHONES
from .symbols import JP_LANG_ID, JP_TONE_START, PAD, SYMBOL_TO_ID

__all__ = ["PhrasedText", "analysis_of_phrases", "mora_phones"]

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
        """One `PhrasedText` per sentence (split after each of `ends`)."""
        out: list[PhrasedText] = []
        start = 0
        for end in sorted(self.ends):
            out.append(PhrasedText(self.phrases[start : end + 1]))
            start = end + 1
        out.append(PhrasedText(self.phrases[start:]))
        return [s for s in out if s.phrases] or [self]


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
