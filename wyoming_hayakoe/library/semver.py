"""Semantic Versioning 2.0.0's precedence (semver.org, item 11), for AivisHub's model
versions: `is_newer` says whether the hub's version is an update of the installed one.

Numbers compare as numbers (``1.10.0`` > ``1.9.0``); a pre-release is older than its release
(``1.0.0-rc.1`` < ``1.0.0``) and pre-releases compare field by field (numbers below words,
fewer fields first); build metadata (``+...``) is ignored. Leniencies: a leading ``v`` and
a missing minor or patch (``1.2`` is ``1.2.0``). A version that is none of these is not
compared: `is_newer` says False (no update is offered on a guess)."""

from __future__ import annotations

import re

__all__ = ["Version", "compare", "is_newer", "parse"]

_SEMVER = re.compile(
    r"^v?(?P<major>0|[1-9]\d*)(?:\.(?P<minor>0|[1-9]\d*))?(?:\.(?P<patch>0|[1-9]\d*))?"
    r"(?:-(?P<pre>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)

Version = tuple[tuple[int, int, int], tuple[str, ...]]
"""(major, minor, patch) and the pre-release fields (empty for a release)."""


def parse(text: str) -> Version | None:
    """The version `text` names, or None when it is not SemVer."""
    m = _SEMVER.match(text.strip())
    if m is None:
        return None
    core = (int(m["major"]), int(m["minor"] or 0), int(m["patch"] or 0))
    pre = tuple(m["pre"].split(".")) if m["pre"] else ()
    if any(f.isdigit() and len(f) > 1 and f.startswith("0") for f in pre):
        return None  # numeric fields have no leading zeros
    return core, pre


def _field_key(field: str) -> tuple[int, int, str]:
    return (0, int(field), "") if field.isdigit() else (1, 0, field)


def compare(a: str, b: str) -> int | None:
    """-1, 0 or 1 as `a` is older than, as old as, or newer than `b`; None when either is
    not SemVer."""
    va, vb = parse(a), parse(b)
    if va is None or vb is None:
        return None
    if va[0] != vb[0]:
        return -1 if va[0] < vb[0] else 1
    pa, pb = va[1], vb[1]
    if pa == pb:
        return 0
    if not pa or not pb:  # a release is newer than its pre-releases
        return 1 if not pa else -1
    ka, kb = [_field_key(f) for f in pa], [_field_key(f) for f in pb]
    return -1 if ka < kb else 1


def is_newer(candidate: str, current: str) -> bool:
    """Whether `candidate` is a later version than `current` (False when either is not
    SemVer)."""
    return compare(candidate, current) == 1
