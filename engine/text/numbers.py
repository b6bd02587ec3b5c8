"""Readings of numbers that the normaliser (``num2words``) reads badly: digit strings.

The normaliser reads ``3.14`` as 三点十四 (さんてんじゅうよん), ``100-0001`` as 百ー一 and a
phone number as one big number. The rewrite pass (:mod:`engine.text.rewriter`) finds such
numbers and puts in katakana digit names from here:

- phone numbers and postal codes: digit by digit with the long forms (ニー, ゴー) Japanese
  use when dictating a number, groups joined by の (``03-1234-5678`` →
  ゼロサンのイチニーサンヨンのゴーロクナナハチ);
- decimals: the digits after the point one by one, short forms (``3.14`` → 3点イチヨン,
  ``0.25`` → 0点ニゴ); one digit after the point is left to the normaliser (点五);
- versions: each part as a number, a zero part as ゼロ (``2.0.1`` → 2点ゼロ点1).
"""

from __future__ import annotations

__all__ = ["DIALLED_DIGITS", "FRACTION_DIGITS", "dialled", "fraction_digits", "version"]

DIALLED_DIGITS: dict[str, str] = dict(
    zip(
        "0123456789",
        ["ゼロ", "イチ", "ニー", "サン", "ヨン", "ゴー", "ロク", "ナナ", "ハチ", "キュー"],
        strict=True,
    )
)
"""Digit names used when a number is dictated (phone numbers, postal codes)."""

FRACTION_DIGITS: dict[str, str] = dict(
    zip(
        "0123456789",
        ["ゼロ", "イチ", "ニ", "サン", "ヨン", "ゴ", "ロク", "ナナ", "ハチ", "キュー"],
        strict=True,
    )
)
"""Digit names after a decimal point (3.14 → さんてんいちよん)."""


def dialled(groups: list[str]) -> str:
    """Digit groups read digit by digit, joined by の."""
    return "の".join(
        "".join(DIALLED_DIGITS[d] for d in g if d in DIALLED_DIGITS) for g in groups if g
    )


def fraction_digits(digits: str) -> str:
    """The digits after a decimal point, one by one."""
    return "".join(FRACTION_DIGITS[d] for d in digits)


def version(parts: list[str]) -> str:
    """Version parts joined by 点; a part that is zero is read ゼロ (not 零, れい)."""
    return "点".join("ゼロ" if p.strip("0") == "" else p.lstrip("0") for p in parts)
