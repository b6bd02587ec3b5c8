"""User dictionary files kept in step with the disk: reload on demand (SIGHUP) or on change.

The server loads its ``--user-dict`` files through :func:`watch_user_dictionaries`. After
that, :func:`refresh_user_dictionary` (run by `engine.speaker.Speaker` at the start of every
request, in its worker thread) compares each file's modification time, size and inode with
those of the last load and reloads when one changed; :func:`reload_user_dictionary` reloads
at once (the server calls it on SIGHUP).

A reload replaces the words that came from the files (later files win for the same
surface) and leaves words added in code (:func:`engine.text.add_word`) alone. A bad entry
(one `UserWord.make` refuses: past the bounds OpenJTalk survives, e.g. a surface of more
than `MAX_SURFACE` characters an old version saved) is skipped with a warning naming the
file and line, never a crash nor a refusal to start; a file that cannot be read or parsed at
reload keeps its previous words, with a warning. Only the first load is strict about a file
that cannot be read at all (the server should not start with a dictionary it cannot see).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from .userdict import (
    UserDictionaryError,
    UserWord,
    active_dictionary,
    read_user_dictionary,
)

__all__ = [
    "DictionaryWatcher",
    "check_user_dictionary",
    "refresh_user_dictionary",
    "reload_user_dictionary",
    "unwatch_user_dictionaries",
    "watch_user_dictionaries",
]

_LOGGER = logging.getLogger(__name__)

_Signature = tuple[int, int, int] | None


def _signature(path: Path) -> _Signature:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class DictionaryWatcher:
    """The words of some dictionary files in the active user dictionary, kept up to date."""

    def __init__(self, paths: Sequence[str | os.PathLike[str]]) -> None:
        self.paths = [Path(p) for p in paths]
        self._lock = threading.Lock()
        self._seen: dict[Path, _Signature] = {}
        self._words: dict[Path, list[UserWord]] = {}
        self._loaded: set[str] = set()
        self.reloads = 0
        """How many times the files were (re)loaded, the first load included."""

    @property
    def surfaces(self) -> frozenset[str]:
        """The surfaces the files gave at the last load."""
        return frozenset(self._loaded)

    def load(self) -> int:
        """First load: a file that cannot be read is an error; bad entries are skipped."""
        with self._lock:
            for path in self.paths:
                self._seen[path] = _signature(path)
                self._words[path] = self._read(path)
            return self._install()

    def reload(self) -> int:
        """Read every file again now; returns the number of words from files."""
        with self._lock:
            for path in self.paths:
                self._seen[path] = _signature(path)
                try:
                    self._words[path] = self._read(path)
                except UserDictionaryError as exc:
                    _LOGGER.warning("%s; keeping its previous words", exc)
            return self._install()

    def refresh(self) -> bool:
        """Reload if a file changed since the last load (cheap: one stat per file)."""
        if all(_signature(p) == self._seen.get(p) for p in self.paths):
            return False
        changed = [str(p) for p in self.paths if _signature(p) != self._seen.get(p)]
        _LOGGER.info("user dictionary changed (%s): reloading", ", ".join(changed))
        self.reload()
        return True

    @staticmethod
    def _read(path: Path) -> list[UserWord]:
        words, problems = read_user_dictionary(path)
        for problem in problems:
            _LOGGER.warning("user dictionary entry skipped: %s", problem)
        return words

    def _install(self) -> int:
        words = [w for path in self.paths for w in self._words.get(path, [])]
        d = active_dictionary()
        d.update(words, remove=self._loaded)
        if not d.is_active:
            d.apply()
        self._loaded = {w.surface for w in words}
        self.reloads += 1
        _LOGGER.info(
            "user dictionary: %d words from %s", len(self._loaded), ", ".join(map(str, self.paths))
        )
        return len(self._loaded)


_WATCHER: DictionaryWatcher | None = None


def watch_user_dictionaries(paths: Sequence[str | os.PathLike[str]]) -> DictionaryWatcher:
    """Load ``paths`` into the active user dictionary and keep them in step (process-wide)."""
    global _WATCHER
    watcher = DictionaryWatcher(paths)
    if _WATCHER is not None:  # its words make way for the new files' words
        watcher._loaded = set(_WATCHER._loaded)
    watcher.load()
    _WATCHER = watcher
    return watcher


def unwatch_user_dictionaries() -> None:
    """Stop watching; the watched files' words leave the active dictionary."""
    global _WATCHER
    watcher, _WATCHER = _WATCHER, None
    if watcher is not None and watcher._loaded:
        active_dictionary().update([], remove=watcher._loaded)


def refresh_user_dictionary() -> bool:
    """Between requests: reload the watched files if one changed. Never raises."""
    watcher = _WATCHER
    if watcher is None:
        return False
    try:
        return watcher.refresh()
    except Exception as exc:  # noqa: BLE001 - a request must not fail for the dictionary
        _LOGGER.warning("user dictionary reload failed: %s", exc)
        return False


def reload_user_dictionary() -> bool:
    """Reload the watched files now (SIGHUP); False when none are watched. Never raises."""
    watcher = _WATCHER
    if watcher is None:
        _LOGGER.info("SIGHUP: no user dictionary to reload")
        return False
    try:
        watcher.reload()
    except Exception as exc:  # noqa: BLE001 - the server goes on
        _LOGGER.warning("user dictionary reload failed: %s", exc)
        return False
    return True


def check_user_dictionary(path: str | os.PathLike[str]) -> tuple[int, list[str]]:
    """(good words, one message per problem) of a file, without installing anything.

    Also compiles each good word's surface the way OpenJTalk will see it, so a surface with
    nothing readable is reported too.
    """
    from .userdict import _mecab_surface  # the check the dictionary itself makes

    try:
        words, problems = read_user_dictionary(Path(path))
    except UserDictionaryError as exc:
        return 0, [str(exc)]
    good = 0
    for w in words:
        try:
            _mecab_surface(w.surface)
            good += 1
        except UserDictionaryError as exc:
            problems.append(f"{path}: {exc}")
    return good, problems
