"""Text normalisation identical to Style-Bert-VITS2 2.5.0's ``normalize_text``.

What it does, in order (see ``docs/frontend.md``):

1. NFKC (full-width letters/digits and half-width katakana fold; ``℃`` → ``°C``).
2. Numbers become kanji: thousands separators ``[0-9]{1,3}(,[0-9]{3})+`` are dropped, a
   currency sign before a number moves behind it as a word (``$5`` → ``5ドル``), then each
   ``[0-9]+(\\.[0-9]+)?`` is read by ``num2words(lang="ja")`` (``23.5`` → 二十三点五); a
   number it refuses (more than 52 digits, where the reference raises) digit by digit.
3. ``~ ～ 〜`` become the long-vowel mark ``ー``.
4. Punctuation is mapped onto ``! ? , . ' -`` (``、``→``,``, ``。``→``.``, ``…``→``...``,
   brackets and quotes → ``'``, line break → ``.``, dash variants → ``-``).
5. Every character that is not kana, kanji, ``々``, Latin or Greek letters or one of
   ``!?…,.'-`` is deleted (so ``%``, ``:``, ``+``, ``=``, ``/``, emoji and spaces go).
6. Combining (semi-)voiced sound marks are removed.
"""

from __future__ import annotations

import logging
import re
import unicodedata

from .symbols import PUNCTUATIONS

__all__ = ["normalize_text", "replace_punctuation"]

_LOGGER = logging.getLogger(__name__)

# Punctuation mapping (data). Multi-character keys come before their one-character prefixes.
_PUNCT_MAP: dict[str, str] = {
    "：": ",", "；": ",", "，": ",", "。": ".", "！": "!", "？": "?", "\n": ".", "．": ".",
    "…": "...", "···": "...", "・・・": "...", "·": ",", "・": ",", "、": ",", "$": ".",
    "“": "'", "”": "'", '"': "'", "‘": "'", "’": "'",
    "（": "'", "）": "'", "(": "'", ")": "'", "《": "'", "》": "'", "【": "'", "】": "'",
    "[": "'", "]": "'",
    "\u02d7": "-", "\u2010": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2043": "-", "\u2212": "-", "\u23af": "-", "\u23e4": "-", "\u2500": "-", "\u2501": "-",
    "\u2e3a": "-", "\u2e3b": "-",
    "「": "'", "」": "'",
}  # fmt: skip
_PUNCT_RE = re.compile("|".join(re.escape(k) for k in sorted(_PUNCT_MAP, key=len, reverse=True)))

# Characters kept; everything else is deleted.
_KEEP = (
    "\u3040-\u309f"  # hiragana
    "\u30a0-\u30ff"  # katakana
    "\u4e00-\u9fff\u3400-\u4dbf\u3005"  # kanji, 々
    "A-Za-z\uff21-\uff3a\uff41-\uff5a"  # Latin (half and full width)
    "\u0370-\u03ff\u1f00-\u1fff"  # Greek
)
_DELETE_RE = re.compile("[^" + _KEEP + re.escape("".join(PUNCTUATIONS)) + "]+")

_CURRENCY_NAMES = {"$": "ドル", "¥": "円", "£": "ポンド", "€": "ユーロ"}
_CURRENCY_RE = re.compile(r"([$¥£€])([0-9.]*[0-9])")
_NUMBER_RE = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_SEPARATED_NUMBER_RE = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+")


_KANJI_DIGITS = dict(zip("0123456789.", "零一二三四五六七八九点", strict=True))


def _number_to_kanji(number: str) -> str:
    from num2words import num2words  # imported on first use (slow import)

    try:
        return str(num2words(number, lang="ja"))
    except OverflowError:  # more than 52 digits, where the reference raises: digit by digit
        return "".join(_KANJI_DIGITS[c] for c in number)


def _numbers_to_words(text: str) -> str:
    text = _SEPARATED_NUMBER_RE.sub(lambda m: m.group(0).replace(",", ""), text)
    text = _CURRENCY_RE.sub(lambda m: m.group(2) + _CURRENCY_NAMES[m.group(1)], text)
    return _NUMBER_RE.sub(lambda m: _number_to_kanji(m.group(0)), text)


def replace_punctuation(text: str) -> str:
    """Map punctuation onto ``!?,.'-`` and delete characters OpenJTalk cannot read."""
    text = _PUNCT_RE.sub(lambda m: _PUNCT_MAP[m.group(0)], text)
    return _DELETE_RE.sub("", text)


def normalize_text(text: str) -> str:
    """Normalise ``text`` exactly as the reference does (see the module docstring)."""
    res = unicodedata.normalize("NFKC", text)
    res = _numbers_to_words(res)
    res = res.replace("~", "ー").replace("～", "ー").replace("〜", "ー")
    res = replace_punctuation(res)
    return res.replace("\u3099", "").replace("\u309a", "")
