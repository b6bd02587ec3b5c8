"""Readings by accent phrase, as VOICEVOX shows them: morae in katakana with the accent.

:func:`accent_phrases` runs OpenJTalk's frontend (normaliser, MeCab with the user
dictionary, NJD accent rules) on a text and reads its full-context labels:

- an accent phrase is a run of morae whose ``/A:`` mora position starts again at 1;
- its accent is the label's ``/F:`` ``f2`` (1-based: the pitch falls after that mora; a flat
  phrase has its accent on its last mora, as in VOICEVOX);
- a pause (``pau``) after a phrase sets ``pause_after``; ``f3`` marks a question.

Morae are written back in katakana from their phones (``k``+``o`` → ``コ``; unvoiced vowels
as voiced ones, ``cl`` → ``ッ``, ``N`` → ``ン``), so a long vowel reads ``トオキョオ`` as
VOICEVOX writes it. Pure function of the text and the active user dictionary; never raises for
text (an empty list when there is nothing to read).
"""

from __future__ import annotations

from dataclasses import dataclass

from .mora import MORA_TO_PHONES

__all__ = ["AccentPhrase", "accent_phrases", "pitch_pattern"]

_VOWEL_LIKE = frozenset({"a", "i", "u", "e", "o", "N", "cl"})

# phones → kana: the first spelling of each in the table (オ before ヲ, ズ before ヅ, …)
_PHONES_TO_KANA: dict[tuple[str, ...], str] = {}
for _spelling, _phones in MORA_TO_PHONES.items():
    _PHONES_TO_KANA.setdefault(_phones, _spelling)
_PHONES_TO_KANA[("cl",)] = "ッ"


@dataclass(frozen=True)
class AccentPhrase:
    """One accent phrase: its morae, where the pitch falls, and whether a pause follows."""

    morae: tuple[str, ...]
    """Katakana, one entry per mora (``キョ`` is one mora)."""
    accent: int
    """1-based mora after which the pitch falls; ``len(morae)`` for a flat phrase."""
    pause_after: bool = False
    question: bool = False

    @property
    def reading(self) -> str:
        return "".join(self.morae)

    @property
    def pitches(self) -> tuple[bool, ...]:
        """High (True) or low per mora (:func:`pitch_pattern`)."""
        return pitch_pattern(len(self.morae), self.accent)


def pitch_pattern(morae: int, accent: int) -> tuple[bool, ...]:
    """Tokyo-dialect pitch per mora: accent 1 → high, then low; otherwise low, high up to the
    accent (to the end for 0 or ``morae``), low after it."""
    if morae <= 0:
        return ()
    if accent == 1:
        return (True,) + (False,) * (morae - 1)
    end = morae if accent <= 0 or accent > morae else accent
    return tuple(0 < i < end for i in range(morae))


def _field(label: str, key: str) -> list[str]:
    """The ``/key:`` section of a label split on its separators (``+ _ # @ |``; a ``-`` is
    a minus sign in ``/A:``)."""
    start = label.find(f"/{key}:")
    if start < 0:
        return []
    rest = label[start + len(key) + 2 :]
    end = rest.find("/")
    section = rest if end < 0 else rest[:end]
    for sep in "+#@|":
        section = section.replace(sep, "_")
    return section.split("_")


def _int(values: list[str], index: int) -> int | None:
    try:
        return int(values[index])
    except (IndexError, ValueError):
        return None


def _kana(phones: list[str]) -> str:
    key = tuple(p if p in ("N", "cl") else p.lower() for p in phones)
    found = _PHONES_TO_KANA.get(key)
    if found is not None:
        return found
    if len(key) == 2:  # a consonant with a vowel the table lacks: spell the two apart
        return _PHONES_TO_KANA.get((key[1],), "".join(key))
    return "".join(key)


def _phrases_from_labels(labels: list[str]) -> list[AccentPhrase]:
    phrases: list[AccentPhrase] = []
    morae: list[str] = []
    accent = 0
    question = False
    phones: list[str] = []

    def close(pause: bool) -> None:
        nonlocal morae, phones
        if morae:
            phrases.append(AccentPhrase(tuple(morae), accent or len(morae), pause, question))
        elif pause and phrases and not phrases[-1].pause_after:
            last = phrases[-1]
            phrases[-1] = AccentPhrase(last.morae, last.accent, True, last.question)
        morae, phones = [], []

    for label in labels:
        head = label.split("/", 1)[0]
        phone = head[head.find("-") + 1 : head.find("+")]
        if phone in ("sil", "pau"):
            close(pause=phone == "pau")
            continue
        a = _field(label, "A")
        position = _int(a, 1)
        if position == 1 and morae and not phones:
            close(pause=False)  # the next phrase starts without a pause
        if not morae and not phones:
            f = _field(label, "F")
            accent = _int(f, 1) or 0
            question = _int(f, 2) == 1
        phones.append(phone)
        if phone in _VOWEL_LIKE or phone.lower() in _VOWEL_LIKE:
            morae.append(_kana(phones))
            phones = []
    close(pause=False)
    return phrases


def accent_phrases(text: str) -> list[AccentPhrase]:
    """The accent phrases OpenJTalk reads in `text` (normalised as the voices normalise it)."""
    import pyopenjtalk

    from .normalizer import normalize_text

    norm = normalize_text(text)
    if not norm.strip():
        return []
    labels = pyopenjtalk.make_label(pyopenjtalk.run_frontend(norm))
    return _phrases_from_labels(list(labels))
