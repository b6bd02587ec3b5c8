"""The library's one small state file, ``library.json`` in the library folder: which voices
are installed, from where, as which file. Written atomically
(`engine.sources.base.write_json_atomic`) under a lock file, so replicas sharing the folder
never read half a file and never lose each other's changes; `signature` lets them notice a
change (as `engine.text.userdict_watch` does for dictionaries)."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.sources import write_json_atomic

from ..errors import HayakoeError
from .naming import name_key

__all__ = [
    "PARTIAL_DIR",
    "STATE_FILE",
    "LibraryEntry",
    "LibraryState",
    "StateError",
    "change_state",
    "locked",
    "read_state",
    "signature",
    "write_state",
]

_LOGGER = logging.getLogger(__name__)

STATE_FILE = "library.json"
PARTIAL_DIR = ".partial"
"""Downloads and uploads in progress (cleaned at start: a restart begins them again)."""
_LOCK_FILE = ".lock"
_VERSION = 1


class StateError(HayakoeError, ValueError):
    """The state file cannot be read (names the file and what is wrong)."""


@dataclass(frozen=True)
class LibraryEntry:
    """One installed file (or hayakoe voice): all its speakers come and go together."""

    name: str
    """The name it was installed under (a file with several speakers: their prefix)."""
    voices: tuple[str, ...]
    """The voices it serves (one per speaker)."""
    source: str
    """Where it came from, as the user gave it (an AivisHub page, a UUID, ``upload``,
    ``hf://...``, an official voice's name)."""
    kind: str
    """``aivishub``, ``upload``, ``hf``."""
    file: str = ""
    """Its file in the library folder (relative); "" for a voice kept in the cache (hf)."""
    load_source: str = ""
    """What the engine loads (``hf://...`` voices); "" for a file."""
    uuid: str = ""
    version: str = ""
    size: int = 0
    license: str = ""
    creators: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["voices"] = list(self.voices)
        data["creators"] = list(self.creators)
        return data

    @classmethod
    def from_json(cls, data: Any, where: Path) -> LibraryEntry:
        if not isinstance(data, dict):
            raise StateError(f"{where}: an entry is not an object")
        names = {f.name for f in dataclasses.fields(cls)}
        try:
            values = {k: v for k, v in data.items() if k in names}
            values["voices"] = tuple(str(v) for v in values.get("voices", ()))
            values["creators"] = tuple(str(v) for v in values.get("creators", ()))
            entry = cls(**values)
        except TypeError as exc:
            raise StateError(f"{where}: entry {data.get('name')!r}: {exc}") from exc
        if not entry.name or not entry.voices:
            raise StateError(f"{where}: entry {data.get('name')!r} has no name or voices")
        return entry


@dataclass(frozen=True)
class LibraryState:
    entries: tuple[LibraryEntry, ...] = field(default_factory=tuple)

    def find(self, name: str) -> LibraryEntry | None:
        """The entry installed as `name`, or serving a voice `name` (case-insensitive, in NFC:
        `naming.name_key`)."""
        key = name_key(name)
        for entry in self.entries:
            if name_key(entry.name) == key or any(name_key(v) == key for v in entry.voices):
                return entry
        return None

    def with_uuid(self, uuid: str) -> list[LibraryEntry]:
        """The entries of the AivisHub model `uuid` (a model may be installed under two
        names)."""
        return [e for e in self.entries if uuid and e.uuid == uuid]

    def voices(self) -> list[str]:
        return [v for e in self.entries for v in e.voices]

    def with_entry(self, entry: LibraryEntry) -> LibraryState:
        rest = tuple(e for e in self.entries if e.name != entry.name)
        return LibraryState((*rest, entry))

    def without(self, name: str) -> LibraryState:
        return LibraryState(tuple(e for e in self.entries if e.name != name))


def read_state(folder: Path) -> LibraryState:
    """The state in `folder` (empty when there is no file yet)."""
    path = folder / STATE_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return LibraryState()
    except OSError as exc:
        raise StateError(f"{path}: cannot be read ({exc})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StateError(f"{path}: not JSON ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("voices"), list):
        raise StateError(f'{path}: expected {{"voices": [...]}}')
    return LibraryState(tuple(LibraryEntry.from_json(e, path) for e in data["voices"]))


def write_state(folder: Path, state: LibraryState) -> None:
    """Replace the state file at once (a reader sees the old one or the new one)."""
    data = {"version": _VERSION, "voices": [e.as_json() for e in state.entries]}
    write_json_atomic(folder / STATE_FILE, data)


def change_state(folder: Path, change: Callable[[LibraryState], LibraryState]) -> LibraryState:
    """Read, change and write the state file under its lock (one writer at a time across
    processes); a state file that cannot be read raises `StateError` and is left as it is.
    Returns the state written."""
    with locked(folder):
        state = change(read_state(folder))
        write_state(folder, state)
    return state


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """One writer at a time across processes sharing `folder` (read, change, write)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / _LOCK_FILE, "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def signature(folder: Path) -> tuple[int, int, int] | None:
    """Changes when the state file is replaced (modification time, size, inode)."""
    try:
        st = (folder / STATE_FILE).stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)
