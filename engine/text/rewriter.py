"""The "beyond the reference" rewrite pass: make numbers, symbols and Latin words read well.

The reference frontend deletes ``%``, ``:``, ``+``, ``=`` and ``/``, reads ``-3`` with a dash
phone, ``7:45`` as 七四十五 and spells ``Home Assistant`` letter by letter. :func:`rewrite`
runs *before* :func:`engine.text.analyze` (which stays reference-exact) and turns such text
into Japanese that the reference frontend reads naturally. Digits are left as digits: the
normaliser reads them (``num2words``).

Rules, in order (input is NFKC-normalised first; examples show the rewritten text):

1. ranges: ``7:00〜9:00``, ``10~20%`` → ``…から…``
2. times: ``7:45`` → ``7時45分``, ``7:00`` → ``7時``, ``7:05:30`` → ``7時5分30秒``,
   ``7:45 PM`` / ``pm`` → ``午後7時45分``
3. dates: ``2026/11/29``, ``2026-11-29`` → ``2026年11月29日``; ``11/29`` → ``11月29日``
   (month 1–12, day 1–31); a weekday in brackets after a date, ``(日)`` → ``日曜日``
4. temperatures: ``26℃``/``26°C`` → ``26度``, ``80°F`` → ``華氏80度``, ``30°`` → ``30度``
5. percent: ``50%`` → ``50パーセント``; ``‰`` → ``パーミル``
6. currency: ``$5.99`` → ``5ドル99セント``, ``100 USD`` → ``100ドル`` (also JPY, EUR, GBP);
   ``¥1,200``, ``€3`` are left to the normaliser (which reads them)
7. units after a number: ``5km`` → ``5キロメートル``, ``60km/h`` → ``時速60キロ`` (``時速60km`` → ``時速60キロメートル``), ``kg``,
   ``W``, ``kWh``, ``V``, ``Hz``, ``GB``, ``Mbps``, ``hPa``, ``m2`` (``㎡``), ``μg/m3``, ``min`` …
8. phone numbers digit by digit, groups joined by の: ``03-1234-5678`` →
   ``ゼロサンのイチニーサンヨンの…``
   signs and operators: ``-3`` → ``マイナス3`` (not after a digit or letter, so phone numbers
   stay), ``+3`` → ``プラス3``, ``±`` → ``プラスマイナス``, ``1+1=2`` → ``1プラス1イコール2``,
   ``×``/``÷`` → ``かける``/``わる``
9. versions: ``2.0.1`` → ``2点0点1``
10. Latin words and acronyms: :data:`engine.text.readings.LATIN_READINGS` (``Wi-Fi`` →
    ``ワイファイ``, ``Home Assistant`` → ``ホームアシスタント``, ``OK`` → ``オーケー`` …); other
    all-capital words of 2–6 letters are spelled with letter names (``ABC`` → ``エービーシー``)

Words of the active user dictionary (:mod:`engine.text.userdict`) are protected: no rule
touches them, so the dictionary's reading and accent apply.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from typing import Callable, Iterable

from .readings import LATIN_READINGS, LETTER_READINGS

__all__ = ["rewrite"]

_LOGGER = logging.getLogger(__name__)

_NUM = r"\d+(?:\.\d+)?"
_NUM_SEP = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_NOT_ALNUM_BEFORE = r"(?<![0-9A-Za-z])"
_NOT_ALNUM_AFTER = r"(?![0-9A-Za-z])"

# 1. ranges
_RANGE_RE = re.compile(r"(?<=[0-9A-Za-z%°])\s*[~〜～]\s*(?=[0-9+\-−])")

# 2. times
_TIME_RE = re.compile(
    r"(?<![\d:.])(\d{1,2}):(\d{2})(?::(\d{2}))?(?![\d:])"
    r"(?:\s*([AaPp])\.?[Mm]\.?" + _NOT_ALNUM_AFTER + ")?"
)

# 3. dates
_YMD_RE = re.compile(r"(?<![\d/.\-])(\d{4})([/\-.])(\d{1,2})\2(\d{1,2})(?![\d/.\-])")
_MD_RE = re.compile(r"(?<![\d/.])(\d{1,2})/(\d{1,2})(?![\d/.])")
_WEEKDAY_RE = re.compile(r"(?<=[\d日])\s*\(([月火水木金土日])(?:曜日?)?\)")

# 4. temperatures
_FAHRENHEIT_RE = re.compile(r"([-−]?)(" + _NUM + r")\s*°\s*F" + _NOT_ALNUM_AFTER)
_CELSIUS_RE = re.compile(r"(" + _NUM + r")\s*(?:°\s*C" + _NOT_ALNUM_AFTER + r"|°|度C" + _NOT_ALNUM_AFTER + ")")

# 5. percent
_PERCENT_RE = re.compile(r"(" + _NUM_SEP + r")\s*%")
_PERMILLE_RE = re.compile(r"(" + _NUM_SEP + r")\s*‰")

# 6. currency
_DOLLAR_CENTS_RE = re.compile(r"\$\s*(" + r"(?:\d{1,3}(?:,\d{3})+|\d+)" + r")\.(\d{2})(?!\d)")
_CURRENCY_CODES = {"USD": "ドル", "JPY": "円", "EUR": "ユーロ", "GBP": "ポンド", "CNY": "元", "KRW": "ウォン"}
_CODE_RE = re.compile(r"(" + _NUM_SEP + r")\s*(" + "|".join(_CURRENCY_CODES) + r")" + _NOT_ALNUM_AFTER)
_CODE_BEFORE_RE = re.compile(_NOT_ALNUM_BEFORE + r"(" + "|".join(_CURRENCY_CODES) + r")\s*(" + _NUM_SEP + ")")

# 7. units (after a number; case-sensitive)
_UNITS: dict[str, str] = {
    "km": "キロメートル", "m": "メートル", "cm": "センチメートル", "mm": "ミリメートル",
    "kg": "キログラム", "g": "グラム", "mg": "ミリグラム",
    "L": "リットル", "l": "リットル", "mL": "ミリリットル", "ml": "ミリリットル",
    "W": "ワット", "kW": "キロワット", "Wh": "ワットアワー", "kWh": "キロワットアワー",
    "V": "ボルト", "mV": "ミリボルト", "A": "アンペア", "mA": "ミリアンペア", "mAh": "ミリアンペアアワー",
    "Hz": "ヘルツ", "kHz": "キロヘルツ", "MHz": "メガヘルツ", "GHz": "ギガヘルツ",
    "dB": "デシベル", "lx": "ルクス", "lm": "ルーメン", "ppm": "ピーピーエム",
    "Pa": "パスカル", "hPa": "ヘクトパスカル", "kPa": "キロパスカル",
    "KB": "キロバイト", "kB": "キロバイト", "MB": "メガバイト", "GB": "ギガバイト",
    "TB": "テラバイト", "bps": "ビーピーエス", "kbps": "キロビーピーエス", "Mbps": "メガビーピーエス",
    "Gbps": "ギガビーピーエス",
    "m2": "平方メートル", "m3": "立方メートル", "km2": "平方キロメートル",
    "μg/m3": "マイクログラム毎立方メートル", "mg/L": "ミリグラム毎リットル",
    "ms": "ミリ秒", "sec": "秒", "min": "分", "h": "時間", "hr": "時間", "hrs": "時間",
    "kcal": "キロカロリー", "cal": "カロリー",
}  # fmt: skip
_UNIT_RE = re.compile(
    r"(" + _NUM_SEP + r")\s*("
    + "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
    + r")(?![0-9A-Za-z])"
)
_SPEED_RE = re.compile(r"(" + _NUM_SEP + r")\s*(km/h|km/時|m/s)" + _NOT_ALNUM_AFTER)

# 8. signs and operators
_PLUSMINUS_RE = re.compile(r"±")
_MINUS_RE = re.compile(r"(?<![0-9A-Za-z.\-−])[-−](?=\d)")
_PLUS_RE = re.compile(r"(?<![0-9A-Za-z.+])\+(?=\d)")
_BINARY_RE = re.compile(r"(?<=\d)\s*([+×÷=])\s*(?=[\d\-−])")
_BINARY_READINGS = {"+": "プラス", "×": "かける", "÷": "わる", "=": "イコール"}

# phone numbers (before signs, so their hyphens are not read as minus)
_PHONE_RE = re.compile(r"(?<![\d\-])(?:0\d{1,4}-\d{1,4}-\d{3,4}|0120-\d{2,3}-\d{3})(?![\d\-])")

# 9. versions
_VERSION_RE = re.compile(r"(?<![\d.])\d+(?:\.\d+){2,}(?![\d.])")

# 10. Latin words
def _latin_key_pattern(key: str) -> str:
    parts = re.split(r"[ \-]", key)
    return r"[\s\-_]?".join(re.escape(p) for p in parts)


_LATIN_RE = re.compile(
    _NOT_ALNUM_BEFORE
    + "("
    + "|".join(_latin_key_pattern(k) for k in sorted(LATIN_READINGS, key=len, reverse=True))
    + ")"
    + _NOT_ALNUM_AFTER,
    re.IGNORECASE,
)
_LATIN_LOOKUP = {re.sub(r"[\s\-_]", "", k).lower(): v for k, v in LATIN_READINGS.items()}
_ACRONYM_RE = re.compile(_NOT_ALNUM_BEFORE + r"([A-Z]{2,6})" + _NOT_ALNUM_AFTER)

_PLACEHOLDER_BASE = 0xF0000  # supplementary private use area: never in real text


def _time(m: re.Match[str]) -> str:
    h, mi, s, ampm = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
    if h > 48 or mi > 59 or (s is not None and int(s) > 59):
        return m.group(0)
    out = f"{h}時"
    if mi:
        out += f"{mi}分"
    if s is not None and int(s):
        out += f"{int(s)}秒"
    if ampm:
        out = ("午前" if ampm in "Aa" else "午後") + out
    return out


def _ymd(m: re.Match[str]) -> str:
    y, mo, d = m.group(1), int(m.group(3)), int(m.group(4))
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return m.group(0)
    return f"{y}年{mo}月{d}日"


def _md(m: re.Match[str]) -> str:
    mo, d = int(m.group(1)), int(m.group(2))
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return m.group(0)
    return f"{mo}月{d}日"


def _speed(m: re.Match[str]) -> str:
    before = m.string[max(0, m.start() - 4) : m.start()]
    if m.group(2) == "m/s":
        return f"{m.group(1)}メートル" if "秒速" in before else f"秒速{m.group(1)}メートル"
    return f"{m.group(1)}キロ" if "時速" in before else f"時速{m.group(1)}キロ"


_DIGIT_NAMES = dict(zip("0123456789", ["ゼロ", "イチ", "ニー", "サン", "ヨン", "ゴー", "ロク", "ナナ", "ハチ", "キュー"]))


def _phone_number(m: re.Match[str]) -> str:
    return "の".join("".join(_DIGIT_NAMES[d] for d in part) for part in m.group(0).split("-"))


def _latin(m: re.Match[str]) -> str:
    key = re.sub(r"[\s\-_]", "", m.group(1)).lower()
    return _LATIN_LOOKUP.get(key, m.group(1))


def _acronym(m: re.Match[str]) -> str:
    return "".join(LETTER_READINGS[c] for c in m.group(1))


_RULES: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (_RANGE_RE, "から"),
    (_TIME_RE, _time),
    (_YMD_RE, _ymd),
    (_MD_RE, _md),
    (_WEEKDAY_RE, lambda m: f"{m.group(1)}曜日"),
    (_FAHRENHEIT_RE, lambda m: f"華氏{'マイナス' if m.group(1) else ''}{m.group(2)}度"),
    (_CELSIUS_RE, lambda m: f"{m.group(1)}度"),
    (_PERCENT_RE, lambda m: f"{m.group(1)}パーセント"),
    (_PERMILLE_RE, lambda m: f"{m.group(1)}パーミル"),
    (_DOLLAR_CENTS_RE, lambda m: f"{m.group(1)}ドル" + (f"{int(m.group(2))}セント" if int(m.group(2)) else "")),
    (_CODE_RE, lambda m: f"{m.group(1)}{_CURRENCY_CODES[m.group(2)]}"),
    (_CODE_BEFORE_RE, lambda m: f"{m.group(2)}{_CURRENCY_CODES[m.group(1)]}"),
    (_SPEED_RE, _speed),
    (_UNIT_RE, lambda m: f"{m.group(1)}{_UNITS[m.group(2)]}"),
    (_PHONE_RE, _phone_number),
    (_PLUSMINUS_RE, "プラスマイナス"),
    (_BINARY_RE, lambda m: _BINARY_READINGS[m.group(1)]),
    (_MINUS_RE, "マイナス"),
    (_PLUS_RE, "プラス"),
    (_VERSION_RE, lambda m: "点".join(m.group(0).split("."))),
    (_LATIN_RE, _latin),
    (_ACRONYM_RE, _acronym),
]


def _protect(text: str, words: Iterable[str]) -> tuple[str, list[str]]:
    """Replace each occurrence of ``words`` (longest first) by a private-use placeholder."""
    kept: list[str] = []
    ordered = sorted({w for w in words if w}, key=len, reverse=True)
    if not ordered:
        return text, kept
    pattern = re.compile("|".join(re.escape(w) for w in ordered))

    def repl(m: re.Match[str]) -> str:
        kept.append(m.group(0))
        return chr(_PLACEHOLDER_BASE + len(kept) - 1)

    return pattern.sub(repl, text), kept


def _restore(text: str, kept: list[str]) -> str:
    if not kept:
        return text
    return re.sub(
        "[" + chr(_PLACEHOLDER_BASE) + "-" + chr(_PLACEHOLDER_BASE + len(kept) - 1) + "]",
        lambda m: kept[ord(m.group(0)) - _PLACEHOLDER_BASE],
        text,
    )


def rewrite(text: str, *, protect: Iterable[str] | None = None) -> str:
    """Rewrite ``text`` so that the reference frontend reads it naturally (see module doc).

    ``protect``: surfaces left untouched; by default the words of the active user
    dictionary (:func:`engine.text.userdict.active_surfaces`), so their dictionary
    reading applies.
    """
    if not isinstance(text, str):
        raise TypeError(f"rewrite() needs a str, got {type(text).__name__}")
    text = unicodedata.normalize("NFKC", text)
    if protect is None:
        from .userdict import active_surfaces

        protect = active_surfaces()
    text, kept = _protect(text, (unicodedata.normalize("NFKC", w) for w in protect))
    for pattern, repl in _RULES:
        text = pattern.sub(repl, text)
    return _restore(text, kept)
