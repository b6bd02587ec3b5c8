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
7. units after a number: ``5km`` → ``5キロメートル``, ``60km/h`` → ``時速60キロ``
   (``時速60km`` → ``時速60キロメートル``), ``kg``,
   ``W``, ``kWh``, ``V``, ``Hz``, ``GB``, ``Mbps``, ``hPa``, ``m2`` (``㎡``), ``μg/m3``, ``min`` …
8. phone numbers (also ``09012345678``, ``+81 90-…``) and postal codes (``〒100-0001``)
   digit by digit, groups joined by の (:mod:`engine.text.numbers`); a hyphen between
   numbers followed by a unit is a range (``10-20℃`` → ``10から20度``); ratios ``16:9`` →
   ``16対9`` (after the time rule); fractions ``½``, ``1/100`` (no such date) → ``100分の1``;
   ordinals ``1st`` → ``ファースト``, ``21st`` → ``21番目``; ``No.5``/``#5`` → ``ナンバー5``;
   signs and operators: ``-3`` → ``マイナス3`` (not after a digit or letter, so phone numbers
   stay), ``+3`` → ``プラス3``, ``±``/``+/-`` → ``プラスマイナス``, ``1+1=2`` →
   ``1プラス1イコール2``, ``×``/``÷`` → ``かける``/``わる``
9. versions: ``2.0.1`` → ``2点ゼロ点1``, ``v1.2`` → ``バージョン1点2``; decimals with two or
   more digits after the point digit by digit: ``3.14`` → ``3点イチヨン``
10. a number inside an English sentence in English words (``open for 10 minutes`` → ``ten``);
    Latin words: table keys with digits or dots (``PM2.5``, ``5G``), then every run of Latin
    words through :func:`engine.text.english.read_latin` (curated table, then kanalizer;
    ``Living Room`` → ``リビングルーム``, ``USB`` → ``ユーエスビー``)

Before the rules, a run of more than :data:`engine.text.limits.MAX_NUMBER_DIGITS` digits
(thousands separators included) is read digit by digit as a dictated number (``イチニー…``;
after a decimal point, ``点`` and the short forms of rule 9): no one says such a number as a
quantity, and the rules' number patterns would cost the square of its length.

Words of the active user dictionary (:mod:`engine.text.userdict`) are protected: no rule
touches them, so the dictionary's reading and accent apply.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable, Iterable

from .english import english_number, read_latin
from .limits import MAX_NUMBER_DIGITS
from .numbers import DIALLED_DIGITS, dialled, fraction_digits, version
from .readings import ENGLISH_ORDINALS, LATIN_READINGS

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
_CELSIUS_RE = re.compile(
    r"(" + _NUM + r")\s*(?:°\s*C" + _NOT_ALNUM_AFTER + r"|°|度C" + _NOT_ALNUM_AFTER + ")"
)

# 5. percent
_PERCENT_RE = re.compile(r"(" + _NUM_SEP + r")\s*%")
_PERMILLE_RE = re.compile(r"(" + _NUM_SEP + r")\s*‰")

# 6. currency
_DOLLAR_CENTS_RE = re.compile(r"\$\s*(" + r"(?:\d{1,3}(?:,\d{3})+|\d+)" + r")\.(\d{2})(?!\d)")
_CURRENCY_CODES = {
    "USD": "ドル",
    "JPY": "円",
    "EUR": "ユーロ",
    "GBP": "ポンド",
    "CNY": "元",
    "KRW": "ウォン",
}
_CODE_RE = re.compile(
    r"(" + _NUM_SEP + r")\s*(" + "|".join(_CURRENCY_CODES) + r")" + _NOT_ALNUM_AFTER
)
_CODE_BEFORE_RE = re.compile(
    _NOT_ALNUM_BEFORE + r"(" + "|".join(_CURRENCY_CODES) + r")\s*(" + _NUM_SEP + ")"
)

# 7. units (after a number; case-sensitive)
_UNITS: dict[str, str] = {
    "km": "キロメートル", "m": "メートル", "cm": "センチメートル", "mm": "ミリメートル",
    "kg": "キログラム", "g": "グラム", "mg": "ミリグラム",
    "L": "リットル", "l": "リットル", "mL": "ミリリットル", "ml": "ミリリットル",
    "W": "ワット", "kW": "キロワット", "Wh": "ワットアワー", "kWh": "キロワットアワー",
    "V": "ボルト", "mV": "ミリボルト", "A": "アンペア", "mA": "ミリアンペア",
    "mAh": "ミリアンペアアワー",
    "Hz": "ヘルツ", "kHz": "キロヘルツ", "MHz": "メガヘルツ", "GHz": "ギガヘルツ",
    "dB": "デシベル", "lx": "ルクス", "lm": "ルーメン", "ppm": "ピーピーエム",
    "Pa": "パスカル", "hPa": "ヘクトパスカル", "kPa": "キロパスカル",
    "KB": "キロバイト", "kB": "キロバイト", "MB": "メガバイト", "GB": "ギガバイト",
    "TB": "テラバイト", "bps": "ビーピーエス", "kbps": "キロビーピーエス",
    "Mbps": "メガビーピーエス",
    "Gbps": "ギガビーピーエス",
    "m2": "平方メートル", "m3": "立方メートル", "km2": "平方キロメートル",
    "μg/m3": "マイクログラム毎立方メートル", "mg/L": "ミリグラム毎リットル",
    "ms": "ミリ秒", "sec": "秒", "min": "分", "h": "時間", "hr": "時間", "hrs": "時間",
    "kcal": "キロカロリー", "cal": "カロリー",
}  # fmt: skip
_UNIT_RE = re.compile(
    r"("
    + _NUM_SEP
    + r")\s*("
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

# 10. Latin words: table keys with digits or dots first (PM2.5, 5G, CO2), then runs of words
_SPECIAL_KEYS = [k for k in LATIN_READINGS if re.search(r"[^A-Za-z' \-]", k)]


def _latin_key_pattern(key: str) -> str:
    parts = re.split(r"[ \-]", key)
    return r"[\s\-_]?".join(re.escape(p) for p in parts)


_SPECIAL_LATIN_RE = re.compile(
    _NOT_ALNUM_BEFORE
    + "("
    + "|".join(_latin_key_pattern(k) for k in sorted(_SPECIAL_KEYS, key=len, reverse=True))
    + ")"
    + _NOT_ALNUM_AFTER,
    re.IGNORECASE,
)
_SPECIAL_LOOKUP = {re.sub(r"[\s\-_]", "", k).lower(): LATIN_READINGS[k] for k in _SPECIAL_KEYS}
_WORD = r"[A-Za-z](?:[A-Za-z0-9]|['’](?=[A-Za-z]))*"
_LATIN_RUN_RE = re.compile(
    r"(?<![A-Za-z0-9'’])" + _WORD + r"(?:(?:[ \t]+|[\-_])" + _WORD + r")*(?![A-Za-z0-9])"
)

# numbers beyond the normaliser (engine.text.numbers)
_UNIT_WORDS = (
    r"\s*(?:度|パーセント|パーミル|円|人|個|回|時|分|秒|年|歳|才|階|件|台|枚|本|日|週|か月|ヶ月|カ月"
    r"|キロ|センチ|ミリ|メートル|グラム|リットル|ワット|ボルト|アンペア|ヘルツ|デシベル|ルクス|ドル|ユーロ"
    r"|倍|割|点|位|号|番|歩|杯|時間|分間|秒間|日間|ページ|km|cm|mm|kg)"
)
_POSTAL_RE = re.compile(
    r"(?:〒\s*|(?<=郵便番号)\s*|(?<![\d\-.,]))(\d{3})-(\d{4})(?![\d\-])(?!" + _UNIT_WORDS + ")"
)
_INTL_PHONE_RE = re.compile(r"\+(\d{1,3})[ \-](\d{1,4})-(\d{1,4})-(\d{3,4})(?![\d\-])")
_MOBILE_RE = re.compile(r"(?<![\d\-.,])(0[5789]0)(\d{4})(\d{4})(?![\d\-.,])")
_HYPHEN_RANGE_RE = re.compile(
    r"(?<![\d\-.])(\d+(?:\.\d+)?)\s*[-‐–—]\s*([-−]?\d+(?:\.\d+)?)(?![\d\-])(?=" + _UNIT_WORDS + ")"
)
_ORDINAL_RE = re.compile(r"(?<![0-9A-Za-z])(\d+)(st|nd|rd|th)(?![A-Za-z])", re.IGNORECASE)
_NUMBER_SIGN_RE = re.compile(r"(?<![A-Za-z])(?:No\.|No|#)\s*(?=\d)")
_PREFIXED_VERSION_RE = re.compile(
    r"(?<![A-Za-z])(?:[vV]|[Vv]er\.?|[Vv]ersion\s?)(\d+(?:\.\d+)+)(?![\d.])"
)
_RATIO_RE = re.compile(r"(?<![\d:.])(\d+):(\d+)(?![\d:])")
_FRACTION_SLASH_RE = re.compile(r"(\d+)⁄(\d+)")
_FRACTION_RE = re.compile(r"(?<![\d/.])(\d+)/(\d+)(?![\d/.])")
_PLUS_OR_MINUS_RE = re.compile(r"\+\s*/?\s*[-−](?=\s*\d)")
_IN_ENGLISH_RE = re.compile(r"(?<=[A-Za-z] )(\d{1,3})(?= [a-z])")
_ENGLISH_BEFORE_RE = re.compile(r"(?:[A-Za-z']+ ){2,}$")
_DECIMAL_RE = re.compile(r"(?<![\d.])((?:\d{1,3}(?:,\d{3})+|\d+))\.(\d{2,})(?![\d.])")

# a digit run (thousands separators included) longer than MAX_NUMBER_DIGITS; the dot of a
# decimal point before it (a digit before the dot) is taken with it
_LONG_GROUPS = -(-(MAX_NUMBER_DIGITS - 2) // 3)  # groups of 3 after the first: > MAX digits
_LONG_NUMBER_RE = re.compile(
    r"(\.(?<=\d\.))?(\d{1,3}(?:,\d{3}){" + str(_LONG_GROUPS) + r",}"
    r"|\d{" + str(MAX_NUMBER_DIGITS + 1) + r",})"
)

_PLACEHOLDER_BASE = 0xF0000  # supplementary private use area: never in real text


def _long_number(m: re.Match[str]) -> str:
    """A number too long to say as one: digit by digit (after a decimal point: 点 and the
    short digit names)."""
    digits = m.group(2).replace(",", "")
    if len(digits) <= MAX_NUMBER_DIGITS:
        return m.group(0)
    if m.group(1):
        return "点" + fraction_digits(digits)
    return "".join(DIALLED_DIGITS[d] for d in digits)


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


def _speed(m: re.Match[str]) -> str:
    before = m.string[max(0, m.start() - 4) : m.start()]
    if m.group(2) == "m/s":
        return f"{m.group(1)}メートル" if "秒速" in before else f"秒速{m.group(1)}メートル"
    return f"{m.group(1)}キロ" if "時速" in before else f"時速{m.group(1)}キロ"


def _phone_number(m: re.Match[str]) -> str:
    return dialled(m.group(0).split("-"))


def _special_latin(m: re.Match[str]) -> str:
    return _SPECIAL_LOOKUP.get(re.sub(r"[\s\-_]", "", m.group(1)).lower(), m.group(1))


def _md_or_fraction(m: re.Match[str]) -> str:
    """``11/29`` is a date; ``1/100`` (no such date) is a fraction, 100分の1."""
    mo, d = int(m.group(1)), int(m.group(2))
    if 1 <= mo <= 12 and 1 <= d <= 31:
        return f"{mo}月{d}日"
    return _fraction(m)


def _fraction(m: re.Match[str]) -> str:
    """A slash between numbers that is no date (see _md_or_fraction): a fraction."""
    if int(m.group(2)) == 0:
        return m.group(0)
    return f"{m.group(2)}分の{m.group(1)}"


def _ordinal(m: re.Match[str]) -> str:
    n = int(m.group(1))
    return ENGLISH_ORDINALS.get(n, f"{n}番目")


def _number_in_english(m: re.Match[str]) -> str:
    """A number inside an English sentence (two words before it, a lower-case word after
    it: ``open for 10 minutes``) is said in English; ``iPhone 15 Pro`` stays Japanese."""
    if _ENGLISH_BEFORE_RE.search(m.string, max(0, m.start() - 40), m.start()) is None:
        return m.group(0)
    return english_number(int(m.group(1))) or m.group(0)


def _postal(m: re.Match[str]) -> str:
    return dialled([m.group(1), m.group(2)])


_RULES: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (_RANGE_RE, "から"),
    (_TIME_RE, _time),
    (_RATIO_RE, lambda m: f"{m.group(1)}対{m.group(2)}"),
    (_YMD_RE, _ymd),
    (_MD_RE, _md_or_fraction),
    (_FRACTION_SLASH_RE, lambda m: f"{m.group(2)}分の{m.group(1)}"),
    (_FRACTION_RE, _fraction),
    (_WEEKDAY_RE, lambda m: f"{m.group(1)}曜日"),
    (_FAHRENHEIT_RE, lambda m: f"華氏{'マイナス' if m.group(1) else ''}{m.group(2)}度"),
    (_CELSIUS_RE, lambda m: f"{m.group(1)}度"),
    (_PERCENT_RE, lambda m: f"{m.group(1)}パーセント"),
    (_PERMILLE_RE, lambda m: f"{m.group(1)}パーミル"),
    (
        _DOLLAR_CENTS_RE,
        lambda m: f"{m.group(1)}ドル" + (f"{int(m.group(2))}セント" if int(m.group(2)) else ""),
    ),
    (_CODE_RE, lambda m: f"{m.group(1)}{_CURRENCY_CODES[m.group(2)]}"),
    (_CODE_BEFORE_RE, lambda m: f"{m.group(2)}{_CURRENCY_CODES[m.group(1)]}"),
    (_ORDINAL_RE, _ordinal),
    (_SPEED_RE, _speed),
    (_UNIT_RE, lambda m: f"{m.group(1)}{_UNITS[m.group(2)]}"),
    (_INTL_PHONE_RE, lambda m: "プラス" + dialled(list(m.groups()))),
    (_PHONE_RE, _phone_number),
    (_MOBILE_RE, lambda m: dialled(list(m.groups()))),
    (_POSTAL_RE, _postal),
    (_HYPHEN_RANGE_RE, lambda m: f"{m.group(1)}から{m.group(2)}"),
    (_PLUS_OR_MINUS_RE, "プラスマイナス"),
    (_PLUSMINUS_RE, "プラスマイナス"),
    (_BINARY_RE, lambda m: _BINARY_READINGS[m.group(1)]),
    (_MINUS_RE, "マイナス"),
    (_PLUS_RE, "プラス"),
    (_NUMBER_SIGN_RE, "ナンバー"),
    (_PREFIXED_VERSION_RE, lambda m: "バージョン" + version(m.group(1).split("."))),
    (_VERSION_RE, lambda m: version(m.group(0).split("."))),
    (_DECIMAL_RE, lambda m: f"{m.group(1)}点{fraction_digits(m.group(2))}"),
    (_IN_ENGLISH_RE, _number_in_english),
    (_SPECIAL_LATIN_RE, _special_latin),
    (_LATIN_RUN_RE, lambda m: read_latin(m.group(0))),
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
    text = _LONG_NUMBER_RE.sub(_long_number, text)
    for pattern, repl in _RULES:
        text = pattern.sub(repl, text)
    return _restore(text, kept)
