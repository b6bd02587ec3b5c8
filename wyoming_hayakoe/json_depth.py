"""JSON from a peer, parsed with a bound on its nesting (a leaf: the standard library only).

Python's `json` parser recurses once per level: a body of 100,000 ``[`` raises
`RecursionError` (or, with a raised recursion limit, crashes the interpreter). The text is
scanned first, without recursion, and refused past `MAX_JSON_DEPTH` levels; `RecursionError`
is caught as well, should the parser still recurse too deep.
"""

from __future__ import annotations

import json
import re

from .errors import HayakoeError

__all__ = ["MAX_JSON_DEPTH", "JsonDepthError", "json_too_deep", "loads_bounded"]

MAX_JSON_DEPTH = 64
"""Deepest nesting of objects and arrays accepted from a peer (the page, a Wyoming client)."""

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OPENERS = frozenset("[{")


class JsonDepthError(HayakoeError, ValueError):
    """The text nests objects and arrays deeper than allowed (or is not JSON at all)."""


def json_too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `text` nests ``[``/``{`` more than `limit` levels (outside strings).

    Linear in the text and without recursion. Text that is not JSON (an unterminated
    string, say) may be counted as too deep; it would be refused anyway."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for char in re.sub(r"[^\[\]{}]", "", _STRING.sub("", text)):
        if char in _OPENERS:
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def loads_bounded(text: str, limit: int = MAX_JSON_DEPTH) -> object:
    """`json.loads(text)`, refusing nesting deeper than `limit`.

    Raises `JsonDepthError` for too deep a text, `ValueError` (`json.JSONDecodeError`)
    for one that is not JSON."""
    if json_too_deep(text, limit):
        raise JsonDepthError(f"JSON nested deeper than {limit} levels")
    try:
        return json.loads(text)
    except RecursionError:  # not reached after the scan; kept as a second guard
        raise JsonDepthError(f"JSON nested deeper than {limit} levels") from None
