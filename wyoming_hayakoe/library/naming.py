"""Names: the one check of a name a user gives (at request time, before any work), and the
one map from an installed voice to its file in the library folder.

A file's name is derived from what is unique about it: the model's UUID, its version and
the name it was installed under (case-folded; entry names are unique case-insensitively),
the last two through a digest, so two names never share a file however they are spelled
(``my voice`` / ``my_voice``, ``a/b`` / ``a b``) and an update sits beside the old version."""

from __future__ import annotations

import hashlib
import unicodedata
import uuid as uuidlib

from .errors import Code, LibraryError

__all__ = ["MAX_NAME", "check_name", "library_file_name"]

MAX_NAME = 64
"""Characters in a name at most (a voice name is also a Wyoming voice and a log field)."""
_FORBIDDEN = ":/\\,"


def check_name(name: object, field: str = "name") -> str:
    """`name` stripped, or `LibraryError` (``name_invalid``) naming what is wrong: empty, not
    text, longer than `MAX_NAME`, a control character (newline, NUL, ...), or one of
    ``: / \\ ,`` (``:`` separates a style; the others are path and list separators)."""
    if not isinstance(name, str):
        raise LibraryError(Code.NAME_INVALID, f"{field}: give the name as text", field)
    text = name.strip()
    if not text:
        raise LibraryError(Code.NAME_INVALID, f"{field}: the name is empty", field)
    if len(text) > MAX_NAME:
        raise LibraryError(
            Code.NAME_INVALID,
            f"{field}: the name has {len(text)} characters, at most {MAX_NAME} are taken",
            field,
        )
    if any(unicodedata.category(c).startswith("C") for c in text):
        raise LibraryError(
            Code.NAME_INVALID, f"{field}: the name has a control character (newline, NUL)", field
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
    key = f"{version}\0{name.casefold()}".encode()
    digest = hashlib.sha256(key).hexdigest()[:16]
    return f"{canonical}-{digest}{suffix.lower()}"
