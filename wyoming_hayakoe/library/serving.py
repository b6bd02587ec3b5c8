"""What the library serves, over the server's `TTS` (its `speakers` are the one list of
served voices: the catalog reads it, so nothing else is kept in step).

`Serving` is the server's `install.Host`: the library's entries as the state file lists them
(read again when the file changes), the entries this process serves, and those it cannot
serve (listed with the reason, so the page can show and remove them). One `asyncio.Lock`
(`changing`) orders every change: an install's commit, a remove, following a replica."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from engine.aivm import AivmFileError, voices_of_file
from engine.sources.cache import CacheDir

from .errors import Code, LibraryError
from .files import clean_folder, remove_with_cache
from .jobs import Report
from .naming import name_key
from .options import LibraryConfig
from .priority import lowered
from .state import LibraryEntry, LibraryState, StateError, change_state, read_state, signature

if TYPE_CHECKING:
    from engine import TTS


__all__ = ["Serving", "VoiceUse", "listed_voices", "registrations", "startup_registrations"]

_LOGGER = logging.getLogger(__name__)


class VoiceUse(Protocol):
    """What the library asks of the server's catalog (`info.VoiceCatalog`)."""

    def in_use(self, names: Sequence[str]) -> str | None:
        """Why `names` cannot be removed (the default voice, a preset's), or None."""
        ...


def registrations(entry: LibraryEntry, folder: Path, cache_dir: CacheDir) -> list[tuple[str, str]]:
    """The (voice, source) pairs the engine loads for `entry`."""
    if entry.file:
        path = folder / entry.file
        return list(voices_of_file(str(path), entry.name, cache_dir=cache_dir, offline=True))
    return [(entry.voices[0], entry.load_source)]


def listed_voices(folder: Path) -> list[str]:
    """Every voice the state file lists, served or not (a file gone, a name taken): names
    that are the library's, never to be looked up anywhere else (a voice named only, by
    ``--default-voice`` or a preset, is otherwise fetched from hayakoe's repository)."""
    try:
        return read_state(folder).voices()
    except StateError:  # reported by `startup_registrations`
        return []


def startup_registrations(
    folder: Path, cache_dir: CacheDir, taken: Sequence[str]
) -> list[tuple[str, str]]:
    """The library's voices to load at start, beside the configured ones (`taken`): what a
    stopped or killed process left unlisted in the folder is removed first
    (`files.clean_folder`); an entry whose file cannot be read, or whose voice's name is
    taken, is left out with an error logged (listed by the page, which can remove it)."""
    try:
        state = read_state(folder)
    except StateError as exc:
        _LOGGER.error("Voice library left out: %s", exc)
        return []
    clean_folder(folder, cache_dir, state)
    used = {name_key(t) for t in taken}
    found: list[tuple[str, str]] = []
    for entry in state.entries:
        try:
            pairs = registrations(entry, folder, cache_dir)
        except (OSError, AivmFileError) as exc:
            _LOGGER.error("Library voice %s left out: %s", entry.name, exc)
            continue
        clash = [n for n, _ in pairs if name_key(n) in used]
        if clash:
            _LOGGER.error(
                "Library voice %s left out: %s is also a configured voice", entry.name, clash[0]
            )
            continue
        used.update(name_key(n) for n, _ in pairs)
        found.extend(pairs)
    return found


class Serving:
    def __init__(self, config: LibraryConfig, tts: TTS, catalog: VoiceUse) -> None:
        self.config = config
        self.tts = tts
        self.catalog = catalog
        self._lock = asyncio.Lock()
        self._state = LibraryState()
        self._signature: object = None
        self.problems: dict[str, str] = {}
        """Entries listed that this process does not serve, with why."""
        self._retiring: asyncio.Future[None] | None = None
        speakers = tts.speakers
        self.mine: dict[str, LibraryEntry] = {
            e.name: e for e in self.entries().entries if all(v in speakers for v in e.voices)
        }
        """The entries this process serves, by name."""
        for e in self.entries().entries:
            if e.name not in self.mine:
                self.problems[e.name] = "it could not be loaded at start (see the log)"

    @property
    def folder(self) -> Path:
        return self.config.folder

    @property
    def cache_dir(self) -> CacheDir:
        return self.config.cache_dir

    def changing(self) -> AbstractAsyncContextManager[None]:
        return self._lock

    def entries(self) -> LibraryState:
        sig = signature(self.folder)
        if sig != self._signature:
            try:
                self._state = read_state(self.folder)
            except StateError as exc:
                _LOGGER.error("Voice library: %s", exc)
            self._signature = sig
        return self._state

    def changed(self) -> bool:
        return signature(self.folder) != self._signature

    def configured(self) -> list[str]:
        """Served voices that are not the library's."""
        mine = {v for e in self.mine.values() for v in e.voices}
        return [n for n in self.tts.speakers if n not in mine]

    # -- the Host's loads ----------------------------------------------------------------
    async def load(
        self, pairs: list[tuple[str, str]], replace: LibraryEntry | None, report: Report
    ) -> None:
        if replace is None:

            def add() -> None:
                with lowered():  # the voices serving get the cores first
                    self.tts.add(pairs, warmup=self.config.warmup)

            await asyncio.to_thread(add)
        else:
            await self.swap(replace, pairs, warmup=self.config.warmup)
        if replace is not None:
            self.mine.pop(replace.name, None)

    async def unload(self, entry: LibraryEntry, voices: Sequence[str]) -> None:
        loaded = [v for v in voices if v in self.tts.speakers]
        self.mine.pop(entry.name, None)
        if loaded:
            await asyncio.to_thread(self.tts.remove, loaded, timeout=self.config.drain_timeout)

    def committed(self, entry: LibraryEntry) -> None:
        self.mine[entry.name] = entry
        self.problems.pop(entry.name, None)

    async def swap(self, old: LibraryEntry, pairs: list[tuple[str, str]], *, warmup: bool) -> None:
        """`old`'s voices replaced by `pairs` (`TTS.replace` in a thread): returns once the
        new ones are listed (raising, the old untouched, when they cannot be built); the old
        are freed after their requests (`retired`)."""
        loop = asyncio.get_running_loop()
        swapped: asyncio.Future[None] = loop.create_future()
        loaded = [v for v in old.voices if v in self.tts.speakers]

        def settle() -> None:
            if not swapped.done():
                swapped.set_result(None)

        def swap(_new: object) -> None:
            loop.call_soon_threadsafe(settle)

        def replace() -> None:
            with lowered():  # the voices serving (the old version too) get the cores first
                self.tts.replace(
                    loaded, pairs, swap=swap, warmup=warmup, timeout=self.config.drain_timeout
                )

        work: asyncio.Future[None] = asyncio.ensure_future(asyncio.to_thread(replace))
        await asyncio.wait([work, swapped], return_when=asyncio.FIRST_COMPLETED)
        if not swapped.done():
            work.result()  # raises: the new version could not be built
        self._retiring = work

    async def wait_retired(self) -> None:
        """The replaced version's requests ended and it is freed (a failure is logged)."""
        work, self._retiring = self._retiring, None
        if work is not None:
            try:
                await work
            except Exception as exc:  # noqa: BLE001 - the new version serves on
                _LOGGER.error("Library: freeing a replaced voice failed: %s", exc)

    async def retired(self, old: LibraryEntry) -> None:
        """After an update: the old version's requests ended, it is freed, its file too."""
        await self.wait_retired()
        if old.file and old.file not in {e.file for e in self.entries().entries}:
            await asyncio.to_thread(remove_with_cache, self.folder / old.file, self.cache_dir)

    # -- remove --------------------------------------------------------------------------
    def find(self, name: object) -> LibraryEntry:
        """The entry `name` names (installed name or one of its voices)."""
        if not isinstance(name, str) or not name.strip():
            raise LibraryError(Code.NAME_INVALID, "name: give the name of a library voice", "name")
        entry = self.entries().find(name.strip())
        if entry is not None:
            return entry
        if any(name_key(n) == name_key(name.strip()) for n in self.configured()):
            raise LibraryError(
                Code.CONFIGURED_VOICE,
                f"{name} is a configured voice (flags or add-on options), not a library "
                "voice: change the configuration to remove it",
                "name",
            )
        raise LibraryError(Code.NOT_IN_LIBRARY, f"{name} is not in the library", "name")

    async def remove(self, name: object) -> list[str]:
        async with self._lock:
            entry = self.find(name)
            why = self.catalog.in_use(list(entry.voices))
            if why is not None and entry.name in self.mine:
                raise LibraryError(Code.IN_USE, f"{entry.name} cannot be removed: {why}", "name")
            await self.unload(entry, entry.voices)
            await asyncio.to_thread(change_state, self.folder, lambda s: s.without(entry.name))
            self.problems.pop(entry.name, None)
            if entry.file:
                path = self.folder / entry.file
                await asyncio.to_thread(remove_with_cache, path, self.cache_dir)
        _LOGGER.info("Library: %s removed (%s)", entry.name, ", ".join(entry.voices))
        return list(entry.voices)
