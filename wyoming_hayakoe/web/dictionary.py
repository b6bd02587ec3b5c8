"""The page's user-dictionary file: read, validate, edit one change at a time, write atomically.

The file is the CSV the server reads (``surface,reading,accent,priority[,pos]``, see
`engine.text.userdict`) and is one of its ``--user-dict`` files, so a change is live for the
next request: after each write the watched files are reloaded at once
(`engine.reload_user_dictionary`). Its path comes from the configuration (``--http-dict``),
never from a request. Edits are serialised by one lock and each reads the file again before
changing it, so two edits at once both land. The other dictionary files (``--user-dict``,
the add-on's ``user_words``) are shown read-only.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import logging
import os
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from engine.text.userdict import (
    MAX_READING,
    MAX_SURFACE,
    UserDictionaryError,
    UserWord,
    read_user_dictionary,
)
from engine.text.userdict_watch import reload_user_dictionary

from ..errors import HayakoeError

__all__ = [
    "MAX_READING",
    "MAX_SURFACE",
    "FieldError",
    "ImportError_",
    "PageDictionary",
    "ensure_dictionary_file",
    "parse_csv",
    "to_csv",
    "validate_entry",
    "word_json",
]

_LOGGER = logging.getLogger(__name__)

# the bounds of a word are the engine's (`engine.text.userdict`), the one check every door uses
MAX_WORDS = 5000
HEADER = ["surface", "reading", "accent", "priority", "pos"]
_FIELDS = ("surface", "reading", "accent", "priority", "pos")

T = TypeVar("T")


class FieldError(HayakoeError, ValueError):
    """A malformed entry; `field` names the field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class ImportError_(HayakoeError, ValueError):
    """A CSV import with bad lines: one message per line (nothing is written)."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(errors)} bad line(s)")
        self.errors = errors


def _field_of(message: str) -> str:
    """The field a `UserWord.make` message is about (the word after its location)."""
    tail = message.split("): ", 1)[-1] if "): " in message else message.split(": ", 1)[-1]
    found = re.match(r"\s*(\w+)", tail)
    return found.group(1) if found and found.group(1) in _FIELDS else "entry"


def validate_entry(data: object) -> UserWord:
    """One entry from JSON (``surface``, ``reading``, ``accent``, ``priority``, ``pos``)."""
    if not isinstance(data, Mapping):
        raise FieldError("entry", "expected a JSON object with surface and reading")
    unknown = sorted(set(data) - {*_FIELDS, "original"})
    if unknown:  # e.g. a file name: the dictionary's path comes from the configuration only
        raise FieldError(str(unknown[0]), f"{unknown[0]}: not a field of a word")
    surface = data.get("surface")
    reading = data.get("reading")
    if not isinstance(surface, str) or not surface.strip():
        raise FieldError("surface", "surface: write the word as it appears in text")
    if len(surface) > MAX_SURFACE:  # the page's own words for the engine's bound
        raise FieldError("surface", f"surface: at most {MAX_SURFACE} characters")
    if not isinstance(reading, str) or not reading.strip():
        raise FieldError("reading", "reading: write how it is read, in katakana")
    if len(reading) > MAX_READING:
        raise FieldError("reading", f"reading: at most {MAX_READING} characters")
    accent = data.get("accent")
    if accent == "":
        accent = None
    if accent is not None and (isinstance(accent, bool) or not isinstance(accent, int)):
        raise FieldError("accent", "accent: a whole number (0 = flat) or empty")
    priority = data.get("priority", 5)
    if priority in ("", None):
        priority = 5
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise FieldError("priority", "priority: a whole number from 0 to 10")
    pos = data.get("pos") or "proper_noun"
    if not isinstance(pos, str):
        raise FieldError("pos", "pos: proper_noun or noun")
    try:
        return UserWord.make(surface, reading, accent, priority, pos, where="entry")
    except UserDictionaryError as exc:
        message = str(exc)
        text = message.split("): ", 1)[-1] if "): " in message else message.split(": ", 1)[-1]
        raise FieldError(exc.field or _field_of(message), text) from None


def word_json(word: UserWord, source: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {
        "surface": word.surface,
        "reading": word.reading,
        "accent": word.accent,
        "priority": word.priority,
        "pos": word.pos,
    }
    if source is not None:
        found["source"] = source
    return found


def to_csv(words: Sequence[UserWord]) -> str:
    """The words in the server's CSV format (with a header line)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(HEADER)
    for w in words:
        writer.writerow(
            [w.surface, w.reading, "" if w.accent is None else w.accent, w.priority, w.pos]
        )
    return buf.getvalue()


def parse_csv(text: str, name: str = "import.csv") -> list[UserWord]:
    """Words of a CSV text in the server's format; `ImportError_` lists every bad line."""
    with tempfile.TemporaryDirectory(prefix="hayakoe-import-") as tmp:
        path = Path(tmp) / "import.csv"
        path.write_text(text, encoding="utf-8")
        words, problems = read_user_dictionary(path)
    errors = []
    for problem in problems:
        found = re.match(r".*?import\.csv:(\d+)(?: \(.*?\))?: (.*)", problem, re.S)
        line, message = (int(found.group(1)), found.group(2)) if found else (0, problem)
        errors.append({"line": line, "field": _field_of(message), "message": message})
    if errors:  # the engine's one check named each line (bounds included)
        raise ImportError_(errors)
    return words


def ensure_dictionary_file(path: Path) -> None:
    """Create the page's dictionary (a header line) when missing, so the server can read it."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, to_csv([]))
    _LOGGER.info("Created the page's user dictionary %s", path)


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@dataclass
class PageDictionary:
    """The editable file and the read-only ones."""

    path: Path | None
    readonly: Sequence[Path] = ()
    reload: Callable[[], object] = reload_user_dictionary

    def __post_init__(self) -> None:
        self._lock = asyncio.Lock()

    def read(self) -> tuple[list[UserWord], list[str]]:
        """The editable file's words and its problems (a missing file has none)."""
        if self.path is None or not self.path.exists():
            return [], []
        try:
            return read_user_dictionary(self.path)
        except UserDictionaryError as exc:
            return [], [str(exc)]

    def read_only_words(self) -> list[tuple[UserWord, str]]:
        out: list[tuple[UserWord, str]] = []
        for path in self.readonly:
            if self.path is not None and path.resolve() == self.path.resolve():
                continue
            try:
                words, _ = read_user_dictionary(path)
            except UserDictionaryError as exc:
                _LOGGER.warning("%s", exc)
                continue
            out.extend((w, path.name) for w in words)
        return out

    async def edit(self, change: Callable[[dict[str, UserWord]], T]) -> T:
        """Apply `change` to the file's words (by surface) under the lock, write, reload.

        `change` may raise (a `FieldError`, a `KeyError`): nothing is written then."""
        if self.path is None:
            raise FieldError("dictionary", "no dictionary file is configured (--http-dict)")
        path = self.path
        async with self._lock:
            words, problems = await asyncio.to_thread(self.read)
            if problems and not words and path.exists() and path.stat().st_size > 0:
                # unreadable as a whole: never overwrite what we could not read
                raise FieldError("dictionary", problems[0])
            table = {w.surface: w for w in words}
            result = change(table)
            if len(table) > MAX_WORDS:
                raise FieldError("dictionary", f"at most {MAX_WORDS} words")
            await asyncio.to_thread(_atomic_write, path, to_csv(list(table.values())))
            await asyncio.to_thread(self.reload)
            return result
