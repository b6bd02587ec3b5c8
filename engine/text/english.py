"""Latin-script words and phrases read as a Japanese speaker says them, in katakana.

:func:`read_latin` turns one *run* of Latin words (words joined by spaces, hyphens or
underscores, e.g. ``Living Room``, ``Garage-Door``, ``SwitchBot``) into katakana with no
pause inside. The rewrite pass (:mod:`engine.text.rewriter`) finds the runs and calls it.

For each run, left to right:

1. the longest phrase of up to five words found in the curated table
   (:data:`engine.text.readings.LATIN_READINGS`; exact spelling first, then ignoring case);
2. otherwise the word alone, by its shape:

   - possessive ``Kid's`` → キッズ, ``Matt's`` → マッツ, ``Mike's`` → マイクス, else + ズ;
     other apostrophes (``couldn't`` when not in the table) are dropped;
   - an acronym with one digit glued on says the digit in English (``PS5`` ピーエスファイブ);
     other digits stay digits for the normaliser (``Model 3`` → モデル3);
   - CamelCase is split and each part read (``HomePod`` → Home + Pod);
   - ALL-CAPS words of up to four letters, or without two vowels, are spelled with letter
     names (``USB`` ユーエスビー); longer capitalised words are read as words (``WARNING``);
   - a word without a vowel is spelled (``km`` when no number precedes it);
   - a plural whose singular is in the table reads as the singular (``Sensors`` センサー,
     the way Japanese borrows English plurals);
   - any other word goes to ``kanalizer`` (cached per process; ヴ is folded to the
     バ-row the way most Japanese speakers say it). If kanalizer cannot read it, it is
     spelled. So is a word longer than :data:`engine.text.limits.MAX_LATIN_WORD` letters
     (no English word is that long): kanalizer's time grows with the square of a word's
     length, and it holds the interpreter meanwhile.

A lone capital letter (``会議室B``) is left to OpenJTalk, which reads letter names itself.
"""

from __future__ import annotations

import functools
import logging
import re

from .limits import MAX_LATIN_WORD
from .readings import ENGLISH_DIGITS, LATIN_READINGS, LETTER_READINGS

__all__ = ["kanalizer_reading", "lookup", "read_latin", "spell"]

_LOGGER = logging.getLogger(__name__)

_SEPARATORS_RE = re.compile(r"[\s\-_]+")
_MAX_PHRASE_WORDS = 5


def _key(text: str) -> str:
    return _SEPARATORS_RE.sub("", text).replace("’", "'")


_EXACT: dict[str, str] = {_key(k): v for k, v in LATIN_READINGS.items()}
_FOLDED: dict[str, str] = {}
for _k, _v in LATIN_READINGS.items():  # an all-lower-case key decides the case-folded reading
    _folded = _key(_k).lower()
    if _folded not in _FOLDED or _k == _k.lower():
        _FOLDED[_folded] = _v

_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_VOWELS_RE = re.compile(r"[aeiouyAEIOUY]")
_ACRONYM_DIGIT_RE = re.compile(r"([A-Z]{1,4})([0-9])")
_V_ROW = str.maketrans({"ヴ": "ブ"})
_V_PAIRS = (("ブァ", "バ"), ("ブィ", "ビ"), ("ブェ", "ベ"), ("ブォ", "ボ"), ("ブュ", "ビュ"))


def lookup(text: str) -> str | None:
    """The table's reading of a word or phrase (exact spelling first, then any case)."""
    key = _key(text)
    found = _EXACT.get(key)
    if found is None:
        found = _FOLDED.get(key.lower())
    return found


def spell(word: str) -> str:
    """Letter names (``USB`` → ユーエスビー); digits in English; other characters dropped."""
    out = []
    for c in word.upper():
        if c in LETTER_READINGS:
            out.append(LETTER_READINGS[c])
        elif c in ENGLISH_DIGITS:
            out.append(ENGLISH_DIGITS[c])
    return "".join(out)


@functools.lru_cache(maxsize=8192)
def kanalizer_reading(word: str) -> str | None:
    """kanalizer's katakana for a lower-case ASCII word (None if it cannot read it)."""
    try:
        import kanalizer
    except ImportError:  # pragma: no cover - a dependency; spelled instead
        _LOGGER.warning("kanalizer is not installed: English words are spelled letter by letter")
        return None
    try:
        out = kanalizer.convert(word, on_invalid_input="error", on_incomplete="error")
    except Exception as exc:  # noqa: BLE001 - kanalizer raises its own error kinds
        _LOGGER.debug("kanalizer cannot read %r: %s", word, exc)
        return None
    out = out.translate(_V_ROW)
    for a, b in _V_PAIRS:
        out = out.replace(a, b)
    return out or None


def _possessive(reading: str) -> str:
    """``'s`` as Japanese says it: キッド → キッズ, マット → マッツ, マイク → マイクス, else ズ."""
    if reading.endswith("ド"):
        return reading[:-1] + "ズ"
    if reading.endswith("ト"):
        return reading[:-1] + "ツ"
    return reading + ("ス" if reading.endswith(("ク", "プ", "フ")) else "ズ")


def _plural_stem(word: str) -> str | None:
    lower = word.lower()
    if len(lower) < 4 or not lower.endswith("s") or lower.endswith(("ss", "us", "is")):
        return None
    for stem in (word[:-1], word[:-2] if lower.endswith("es") else None):
        if stem and lookup(stem) is not None:
            return stem
    return None


def _read_word(word: str) -> str:
    found = lookup(word)
    if found is not None:
        return found
    for mark in ("'s", "’s"):
        if word.endswith(mark) and len(word) > 2:
            return _possessive(_read_word(word[:-2]))
    if "'" in word or "’" in word:
        return _read_word(word.replace("'", "").replace("’", ""))
    if any(c.isdigit() for c in word):
        return _read_with_digits(word)
    parts = _CAMEL_RE.findall(word)
    if len(parts) > 1:
        return _read_words(parts)
    if len(word) == 1:
        return LETTER_READINGS.get(word.upper(), word)
    vowels = len(_VOWELS_RE.findall(word))
    if word.isupper() and (len(word) <= 4 or vowels < 2):
        return spell(word)
    if vowels == 0:
        return spell(word)
    stem = _plural_stem(word)
    if stem is not None:
        return _read_word(stem)
    if len(word) > MAX_LATIN_WORD:
        return spell(word)
    return kanalizer_reading(word.lower()) or spell(word)


def _read_with_digits(word: str) -> str:
    """``PS5`` ピーエスファイブ; ``Model3`` モデル3 (digits left to the normaliser)."""
    m = _ACRONYM_DIGIT_RE.fullmatch(word)
    if m:
        return spell(m.group(1)) + ENGLISH_DIGITS[m.group(2)]
    out = []
    for part in re.findall(r"[0-9]+|[^0-9]+", word):
        out.append(part if part.isdigit() else _read_word(part))
    return "".join(out)


def _read_words(words: list[str]) -> str:
    out: list[str] = []
    i = 0
    while i < len(words):
        for j in range(min(len(words), i + _MAX_PHRASE_WORDS), i + 1, -1):
            found = lookup("".join(words[i:j]))
            if found is not None:
                out.append(found)
                i = j
                break
        else:
            out.append(_read_word(words[i]))
            i += 1
    return "".join(out)


_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def english_number(n: int) -> str | None:
    """``n`` (0–9999) in English words (``21`` → ``twenty one``); None when larger."""
    if not 0 <= n <= 9999:
        return None
    words: list[str] = []
    if n >= 1000:
        words += [_ONES[n // 1000], "thousand"]
        n %= 1000
        if not n:
            return " ".join(words)
    if n >= 100:
        words += [_ONES[n // 100], "hundred"]
        n %= 100
        if not n:
            return " ".join(words)
    if n < 20:
        words.append(_ONES[n])
    else:
        words.append(_TENS[n // 10])
        if n % 10:
            words.append(_ONES[n % 10])
    return " ".join(words)


def read_latin(run: str) -> str:
    """Katakana for a run of Latin words (see the module doc); a lone capital is kept."""
    words = [w for w in _SEPARATORS_RE.split(run) if w]
    if len(words) == 1 and len(words[0]) == 1 and words[0].isupper() and lookup(words[0]) is None:
        return run
    return _read_words(words)
