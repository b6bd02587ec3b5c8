"""Names: the one check of a name a user gives (at request time, before any work), and the
one map from an installed voice to its file in the library folder.

A file's name is derived from what is unique about it: the model's UUID, its version and
the name it was installed under (case-folded, in NFC: `name_key`; entry names are unique
so), the last two through a digest, so two names never share a file however they are spelled
(``my voice`` / ``my_voice``, ``a/b`` / ``a b``) and an update sits beside the old version."""

from __future__ import annotations

import hashlib
import unicodedata
import uuid as uuidlib

from ..resolve import name_key
from .errors import Code, LibraryError

__all__ = ["MAX_NAME", "check_name", "library_file_name", "name_key"]

MAX_NAME = 64
"""Characters in a name at most (a voice name is also a Wyoming voice and a log field)."""
_FORBIDDEN = ":/\\,"
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Control, format (zero-width space and joiners, bidirectional marks), surrogate, private,
unassigned, line and paragraph separator characters: none is seen in a name."""
_BLANKS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Letters drawn as nothing (Hangul fillers, the blank Braille pattern)."""


def _unseen(c: str) -> bool:
    """A character a reader cannot see or tell from a space (only U+0020 is a space)."""
    category = unicodedata.category(c)
    if category in _INVISIBLE_CATEGORIES or c in _BLANKS:
        return True
    return category == "Zs" and c != " "


def check_name(name: object, field: str = "name") -> str:
    """`name` stripped and in NFC (the form stored and served), or `LibraryError`
    (``name_invalid``) naming what is wrong: empty, not text, longer than `MAX_NAME`, only
    dots (``.``, ``..``: a folder's names), a character no one sees (a control or format
    character such as a newline, NUL or a zero-width space; a space other than U+0020), or
    one of ``: / \\ ,`` (``:`` separates a style; the others are path and list
    separators)."""
    if not isinstance(name, str):
        raise LibraryError(Code.NAME_INVALID, f"{field}: give the name as text", field)
    text = unicodedata.normalize("NFC", name).strip()
    if not text:
        raise LibraryError(Code.NAME_INVALID, f"{field}: the name is empty", field)
    if len(text) > MAX_NAME:
        raise LibraryError(
            Code.NAME_INVALID,
            f"{field}: the name has {len(text)} characters, at most {MAX_NAME} are taken",
            field,
        )
    unseen = sorted({c for c in text if _unseen(c)})
    if unseen:
        shown = " ".join(f"U+{ord(c):04X}" for c in unseen)
        raise LibraryError(
            Code.NAME_INVALID,
            f"{field}: the name has a character no one sees ({shown}: a control, format or "
            "space character other than a plain space)",
            field,
        )
    if set(text) == {"."}:
        raise LibraryError(
            Code.NAME_INVALID, f"{field}: a name of only dots ({text!r}) is not taken", field
        )
    bad = sorted({c for c in text if c in _FORBIDDEN})
    if bad:
        raise LibraryError(
            Code.NAME_INVALID,
            f"{field}: the name may not hold {' '.join(repr(c) for c in bad)}",
            field,
        )
    return text


def library_file_name(uuid: str, version: str, name: str, suffix: str) -> str:
    """The file of the model `uuid` at `version`, installed as `name`, in the library folder:
    ``<uuid>-<digest of version and name>.aivmx`` (the one place a name becomes a file)."""
    canonical = str(uuidlib.UUID(uuid))
    key = f"{version}\0{name_key(name)}".encode()
    digest = hashlib.sha256(key).hexdigest()[:16]
    return f"{canonical}-{digest}{suffix.lower()}"
