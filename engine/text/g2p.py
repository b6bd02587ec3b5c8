"""Grapheme-to-phoneme conversion identical to Style-Bert-VITS2 2.5.0's JP-Extra ``g2p``.

Input is normalised text (:func:`engine.text.normalizer.normalize_text`). OpenJTalk's
``run_frontend`` is called once and used two ways, as the reference does:

- **word path** — each word's reading (katakana, punctuation kept) becomes phones; the long
  mark ``ー`` repeats the previous phone (a leading ``ー`` after a vowel/``N`` in the previous
  word repeats that, otherwise it is the dash phone ``-``); unreadable characters become one
  ``'`` per character. This path keeps punctuation and gives the word boundaries used for
  ``word2ph``.
- **label path** — the full-context labels give the accent (tone 0/1 per phone) but lose
  punctuation. The tones are copied onto the word-path phones in order; punctuation gets 0.

``word2ph``: each word's phones are spread over its characters (character-tokenizer
tokens), left to right, one at a time; ``_`` is added at both ends with ``word2ph`` 1.

Where the reference raises (the label path has a phone the word path lacks, as for
``まっーたく``: ``ー`` after ``っ`` is ``-`` in the word path but a second ``q`` in the label
path), this module does not: surplus label phones are skipped, a phone with no label
partner takes the tone of the label phone in front of it, and ``Analysis.exact`` says the
result left the reference's behaviour. See :func:`g2p`.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .mora import MORA_TO_PHONES, VOWELS
from .normalizer import replace_punctuation
from .symbols import PAD, PUNCTUATIONS

__all__ = ["G2PResult", "g2p", "distribute_phones"]

_LOGGER = logging.getLogger(__name__)

_PUNCT_SET = frozenset(PUNCTUATIONS)
_LONG = "ー"
_UNREADABLE = "、"  # OpenJTalk's reading of punctuation and of characters it cannot read
_VOICELESS_MARK = "’"  # OpenJTalk marks devoiced morae in `pron` with this
_SPLIT_CONSONANTS = {"kw": ("k", "w"), "gw": ("g", "w")}  # table entries with no model symbol
_KATAKANA_RE = re.compile(r"[\u30a0-\u30ff]+")


@dataclass(frozen=True)
class G2PResult:
    """Phones/tones/word2ph (with the ``_`` edges) plus the word strings BERT reads
    (``"".join(words)`` has one character per ``word2ph`` entry between the edges)."""

    phones: list[str]
    tones: list[int]
    word2ph: list[int]
    words: list[str]
    exact: bool
    """False when the reference would have raised and a fallback reading was produced."""


class _OpenJTalk(Protocol):
    """What g2p uses of pyopenjtalk (which ships no types)."""

    def run_frontend(self, text: str) -> list[dict[str, Any]]: ...

    def make_label(self, njd_features: list[dict[str, Any]]) -> list[str]: ...


def _jtalk() -> _OpenJTalk:
    import pyopenjtalk  # imported on first use: loading the dictionary takes a while

    jtalk: _OpenJTalk = pyopenjtalk
    return jtalk


# ---------------------------------------------------------------------------------------
# word path


def _reading_phones(reading: str) -> tuple[list[str], bool]:
    """Phones of one word's reading (katakana or punctuation). ``ー`` stays where leading.

    Returns the phones and whether the reading was well formed (the reference raises on a
    reading that is neither punctuation nor katakana; such characters become ``'`` here).
    """
    if set(reading) <= _PUNCT_SET:
        return list(reading), True
    ok = _KATAKANA_RE.fullmatch(reading) is not None
    phones: list[str] = []
    i = 0
    n = len(reading)
    while i < n:
        two = reading[i : i + 2]
        if len(two) == 2 and two in MORA_TO_PHONES:
            mora = MORA_TO_PHONES[two]
            i += 2
        elif reading[i] in MORA_TO_PHONES:
            mora = MORA_TO_PHONES[reading[i]]
            i += 1
        else:
            ch = reading[i]
            i += 1
            if ch == _LONG:
                # Repeat the last character of the previous phone; a leading ー stays ー.
                phones.append(phones[-1][-1] if phones else _LONG)
            else:
                ok = False
                phones.append("'")
            continue
        for ph in mora:
            if ph in _SPLIT_CONSONANTS:
                ok = False
                phones.extend(_SPLIT_CONSONANTS[ph])
            else:
                phones.append(ph)
    return phones, ok


def _resolve_leading_long(words: list[list[str]]) -> None:
    """Turn the leading ``ー`` of a word into the previous word's vowel, or into ``-``."""
    for i, phones in enumerate(words):
        if not phones:
            continue
        if phones[0] == _LONG:
            prev = next((w for w in reversed(words[:i]) if w), None) if i else None
            phones[0] = prev[-1] if prev is not None and prev[-1] in VOWELS else "-"
        for j in range(1, len(phones)):
            if phones[j] == _LONG:
                phones[j] = phones[j - 1][-1]


def _word_path(frontend: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]], bool]:
    words: list[str] = []
    phones: list[list[str]] = []
    exact = True
    for node in frontend:
        word = replace_punctuation(node["string"])
        reading = node["pron"].replace(_VOICELESS_MARK, "")
        if reading == _UNREADABLE:
            if set(word) <= _PUNCT_SET:
                reading = word
            else:
                _LOGGER.debug("cannot read %r; using one ' per character", word)
                reading = "'" * len(word)
        elif reading == "？":
            reading = "?"
        if not reading:
            exact = False
        ph, ok = _reading_phones(reading)
        exact = exact and ok
        if ph and word not in _PUNCT_SET and char_token_count(word) == 0:
            _LOGGER.debug("dropping %r: no character the BERT tokenizer reads", word)
            exact = False
            continue
        words.append(word)
        phones.append(ph)
    _resolve_leading_long(phones)
    return words, phones, exact


# ---------------------------------------------------------------------------------------
# label path (accent)


@dataclass(frozen=True)
class _Label:
    phone: str
    a1: int | None
    a2: int | None
    a3: int | None
    e3: int | None
    f1: int | None


def _num(s: str) -> int | None:
    """An integer label field; None for ``xx`` (or anything else that is not a number)."""
    if s.isdigit() or (s[:1] == "-" and s[1:].isdigit()):
        return int(s)
    return None


def _parse_label(label: str) -> _Label:
    """Fields of an OpenJTalk full-context label
    ``p1^p2-p3+p4=p5/A:a1+a2+a3/B:…/C:…/D:…/E:e1_e2!e3_e4-e5/F:f1_f2#…/…``."""
    parts = label.split("/")
    head = parts[0]
    phone = head[head.find("-") + 1 : head.find("+")]
    if len(parts) < 7 or not parts[1].startswith("A:"):
        return _Label(phone, None, None, None, None, None)
    a = parts[1][2:].split("+")
    e = parts[5][2:]
    bang = e.find("!")
    e3 = _num(e[bang + 1 :].split("_", 1)[0]) if bang >= 0 else None
    f1 = _num(parts[6][2:].split("_", 1)[0])
    if len(a) < 3:
        return _Label(phone, None, None, None, e3, f1)
    return _Label(phone, _num(a[0]), _num(a[1]), _num(a[2]), e3, f1)


_PHRASE_VOWEL_LIKE = frozenset("aeiouAEIOUN") | {"cl"}


def _label_tones(labels: Sequence[str]) -> list[tuple[str, int]]:
    """Phones (no pauses) with tone 0/1 from OpenJTalk full-context labels.

    Within each accent phrase the pitch starts at 0, rises by one after the first mora when
    the second is high, falls by one after the accent nucleus; each phrase is then shifted
    into {0, 1}. Unvoiced vowels count as vowels, ``cl`` is ``q``.
    """
    parsed = [_parse_label(lab) for lab in labels]
    result: list[tuple[str, int]] = []
    phrase: list[tuple[str, int]] = []
    tone = 0
    last = len(parsed) - 1
    for n, lab in enumerate(parsed):
        p = lab.phone
        if p in ("A", "E", "I", "O", "U"):
            p = p.lower()
        if p == "sil":
            if n == last and lab.e3 in (0, 1):
                result.extend(_fix_phrase(phrase))
                phrase, tone = [], 0
            continue
        if p == "pau":
            result.extend(_fix_phrase(phrase))
            phrase, tone = [], 0
            continue
        phrase.append(("q" if p == "cl" else p, tone))
        a2_next = parsed[n + 1].a2 if n + 1 < len(parsed) else None
        if lab.a3 == 1 and a2_next == 1 and p in _PHRASE_VOWEL_LIKE:
            result.extend(_fix_phrase(phrase))
            phrase, tone = [], 0
        elif lab.a1 == 0 and lab.a2 is not None and a2_next == lab.a2 + 1 and lab.a2 != lab.f1:
            tone -= 1
        elif lab.a2 == 1 and a2_next == 2:
            tone += 1
    return result


def _fix_phrase(phrase: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Shift a phrase's relative pitches into {0, 1}."""
    values = {t for _, t in phrase}
    if not values or values <= {0, 1}:
        return phrase
    low = min(values)
    if max(values) - low > 1:
        _LOGGER.debug("unexpected tone values %s; clamping", sorted(values))
    return [(p, 1 if t > low else 0) for p, t in phrase]


def _align(phones: list[str], toned: list[tuple[str, int]]) -> tuple[list[int], bool]:
    """Copy label tones onto the word-path phones (punctuation gets 0)."""
    tones: list[int] = []
    k = 0
    exact = True
    for ph in phones:
        if k >= len(toned):
            tones.append(0)
        elif ph == toned[k][0]:
            tones.append(toned[k][1])
            k += 1
        elif ph in _PUNCT_SET:
            tones.append(0)
        else:
            # The reference raises here. Skip surplus label phones if the phone follows
            # shortly; otherwise borrow the tone at the current position.
            exact = False
            ahead = next(
                (j for j in range(k + 1, min(k + 4, len(toned))) if toned[j][0] == ph), None
            )
            if ahead is not None:
                k = ahead
                tones.append(toned[k][1])
                k += 1
            else:
                tones.append(toned[k][1])
    return tones, exact


# ---------------------------------------------------------------------------------------
# word2ph


def _is_bert_whitespace(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_bert_control(ch: str) -> bool:
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


def bert_chars(word: str) -> str:
    """The characters of ``word`` the BERT tokenizer keeps (it drops NUL, U+FFFD, control
    and unassigned code points, and whitespace)."""
    return "".join(
        ch
        for ch in word
        if ch not in ("\x00", "\ufffd") and not _is_bert_control(ch) and not _is_bert_whitespace(ch)
    )


def char_token_count(word: str) -> int:
    """How many tokens the BERT character tokenizer makes of ``word``.

    That tokenizer drops NUL/U+FFFD/control characters and whitespace, then splits each
    NFKC-normalised word into characters; unknown characters still count (as ``[UNK]``).
    Splitting on punctuation does not change the count.
    """
    kept = unicodedata.normalize("NFC", bert_chars(word))
    return len(unicodedata.normalize("NFKC", kept))


def distribute_phones(n_phones: int, n_chars: int) -> list[int]:
    """Spread ``n_phones`` over ``n_chars`` one at a time, left to right (earlier get more)."""
    if n_chars <= 0:
        return []
    q, r = divmod(n_phones, n_chars)
    return [q + 1] * r + [q] * (n_chars - r)


# ---------------------------------------------------------------------------------------


def g2p(norm_text: str) -> G2PResult:
    """Phones, tones and word2ph of normalised text (JP-Extra: ``ん`` is ``N``).

    Never raises on normalised text. Where the reference (``raise_yomi_error=False``)
    would raise, a fallback reading is produced and ``exact`` is False:

    - a word-path phone with no label partner (``まっーたく``): surplus label phones up to
      three ahead are skipped, else the current label tone is borrowed;
    - ``クヮ``/``グヮ`` readings give ``k w a``/``g w a`` (``kw``/``gw`` are no symbols);
    - non-katakana characters in a reading become ``'``;
    - a word with phones but no character BERT reads (only unassigned code points) is
      dropped (the reference fails dividing its phones over zero tokens).

    ``words`` are the word strings BERT reads: OpenJTalk's strings after punctuation
    mapping, less any character the BERT tokenizer drops (so one token per character).
    """
    jtalk = _jtalk()
    frontend = jtalk.run_frontend(norm_text) if norm_text else []
    words, word_phones, exact = _word_path(frontend)

    # OpenJTalk prints "No phoneme" when nothing is pronounceable; skip it then.
    if any(node["pron"] not in (_UNREADABLE, "？") for node in frontend):
        toned = _label_tones(jtalk.make_label(frontend))
    else:
        toned = []

    flat = [ph for phones in word_phones for ph in phones]
    tones, aligned = _align(flat, toned)
    exact = exact and aligned

    word2ph: list[int] = []
    bert_words: list[str] = []
    for word, phones in zip(words, word_phones):
        if word in _PUNCT_SET:
            piece, n_tok = word, 1
        else:
            piece, n_tok = bert_chars(word), char_token_count(word)
            if n_tok != len(piece):  # NFKC changed the length: not after normalize_text
                exact = False
                piece = unicodedata.normalize("NFKC", unicodedata.normalize("NFC", piece))
                n_tok = len(piece)
        word2ph += distribute_phones(len(phones), n_tok)
        bert_words.append(piece)

    if not exact:
        _LOGGER.info(
            "g2p: %r is outside the reference's behaviour; using a fallback reading", norm_text
        )
    return G2PResult(
        phones=[PAD, *flat, PAD],
        tones=[0, *tones, 0],
        word2ph=[1, *word2ph, 1],
        words=bert_words,
        exact=exact,
    )
