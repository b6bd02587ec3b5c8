"""The symbol table of Style-Bert-VITS2 (data): phone ids, tone and language offsets.

The order is the model's embedding order, so it must not change: index = phone id. It is
the reference's table (``tests/data/symbols.json``; a test checks they agree).
"""

from __future__ import annotations

PAD = "_"
"""The padding / sentence-edge symbol (id 0); also the blank interspersed between phones."""

PUNCTUATIONS: tuple[str, ...] = ("!", "?", "…", ",", ".", "'", "-")
"""Punctuation that is kept as its own phone (tone 0)."""

SYMBOLS: tuple[str, ...] = (
    "_", "AA", "E", "EE", "En", "N", "OO", "V", "a", "a:",
    "aa", "ae", "ah", "ai", "an", "ang", "ao", "aw", "ay", "b",
    "by", "c", "ch", "d", "dh", "dy", "e", "e:", "eh", "ei",
    "en", "eng", "er", "ey", "f", "g", "gy", "h", "hh", "hy",
    "i", "i0", "i:", "ia", "ian", "iang", "iao", "ie", "ih", "in",
    "ing", "iong", "ir", "iu", "iy", "j", "jh", "k", "ky", "l",
    "m", "my", "n", "ng", "ny", "o", "o:", "ong", "ou", "ow",
    "oy", "p", "py", "q", "r", "ry", "s", "sh", "t", "th",
    "ts", "ty", "u", "u:", "ua", "uai", "uan", "uang", "uh", "ui",
    "un", "uo", "uw", "v", "van", "ve", "vn", "w", "x", "y",
    "z", "zh", "zy", "!", "?", "\u2026", ",", ".", "'", "-",
    "SP", "UNK",
)  # fmt: skip

SYMBOL_TO_ID: dict[str, int] = {s: i for i, s in enumerate(SYMBOLS)}

LANGUAGE_ID_MAP: dict[str, int] = {"ZH": 0, "JP": 1, "EN": 2}
LANGUAGE_TONE_START_MAP: dict[str, int] = {"ZH": 0, "JP": 6, "EN": 8}
NUM_TONES = 12
NUM_LANGUAGES = 3

JP_LANG_ID = LANGUAGE_ID_MAP["JP"]
JP_TONE_START = LANGUAGE_TONE_START_MAP["JP"]
