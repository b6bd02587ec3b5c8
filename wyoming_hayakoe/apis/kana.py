"""AquesTalk-style kana (VOICEVOX's ``is_kana`` text): ``コンニチワ'、ゲ'ンキデスカ？``.

Accent phrases are separated by ``/`` (no pause) or ``、`` (a pause); each has one ``'``
right after its accent mora; ``_`` before a mora marks it unvoiced (read voiced here); a
phrase ending in ``？`` is a question. `KanaError` says where the text breaks a rule.

`phrases_kana` writes phrases so (an AudioQuery's ``kana``, as VOICEVOX's ``create_kana``
writes it): ``'`` after the accent mora, ``？`` after a question's last mora, ``、`` after a
phrase followed by a pause or ending a sentence, ``/`` between the others, nothing after the
last. No ``_``: our phrases' morae do not mark unvoiced vowels (the voice devoices on its own,
and an AudioQuery's moras carry lower-case vowels), so `parse_kana` reads the kana back into
the same phrases.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from engine.text.accents import AccentPhrase
from engine.text.from_phrases import mora_phones

from ..errors import HayakoeError

__all__ = ["KanaError", "parse_kana", "phrases_kana"]


class KanaError(HayakoeError, ValueError):
    pass


def _morae(text: str, at: int) -> list[str]:
    morae: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "_":
            i += 1
            continue
        for size in (2, 1):
            piece = text[i : i + size]
            if len(piece) == size:
                try:
                    mora_phones(piece)
                except ValueError:
                    continue
                morae.append(piece)
                i += size
                break
        else:
            raise KanaError(f"{text[i]!r} at {at + i} is not a katakana mora")
    return morae


def parse_kana(text: str) -> list[AccentPhrase]:
    if not text:
        raise KanaError("the text is empty")
    phrases: list[AccentPhrase] = []
    start = 0
    buf = ""
    for pos, ch in enumerate(text + "/"):
        if ch not in "/、":
            buf += ch
            continue
        question = buf.endswith("？")
        body = buf[:-1] if question else buf
        if body.count("'") != 1:
            raise KanaError(f"the phrase at {start} needs exactly one ' after its accent mora")
        head, tail = body.split("'")
        before, after = _morae(head, start), _morae(tail, start + len(head) + 1)
        if not before:
            raise KanaError(f"the ' at {start + len(head)} follows no mora")
        last = pos == len(text)
        pause = ch == "、" and not last
        phrases.append(AccentPhrase(tuple(before + after), len(before), pause, question))
        buf, start = "", pos + 1
        if last:
            break
    return phrases


def phrases_kana(phrases: Sequence[AccentPhrase], ends: Collection[int] = ()) -> str:
    """`phrases` in AquesTalk-style kana (the module text); `ends`: the indexes of phrases
    that end a sentence (a pause follows them)."""
    out: list[str] = []
    for i, phrase in enumerate(phrases):
        morae = list(phrase.morae)
        accent = min(max(phrase.accent, 1), len(morae))
        out.append("".join(morae[:accent]) + "'" + "".join(morae[accent:]))
        if phrase.question:
            out.append("？")
        if i < len(phrases) - 1:
            out.append("、" if phrase.pause_after or i in ends else "/")
    return "".join(out)
