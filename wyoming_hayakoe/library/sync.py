"""Replicas sharing a library folder follow each other: when the state file changes, this
process serves what it lists now (another server or the CLI installed, removed or updated a
voice) and stops serving what it no longer lists."""

from __future__ import annotations

import asyncio
import logging

from .serving import Serving, registrations
from .state import LibraryEntry

__all__ = ["WATCH_INTERVAL_S", "follow", "watch"]

_LOGGER = logging.getLogger(__name__)

WATCH_INTERVAL_S = 2.0


async def watch(serving: Serving, interval: float = WATCH_INTERVAL_S) -> None:
    """Follow the state file for ever (a change is noticed within `interval` seconds)."""
    while True:
        await asyncio.sleep(interval)
        if not serving.changed():
            continue
        try:
            await follow(serving)
        except Exception:  # noqa: BLE001 - tried again at the next change
            _LOGGER.exception("Library: following the state file failed")


async def follow(serving: Serving) -> None:
    """Serve what the state file lists now."""
    async with serving.changing():
        wanted = {e.name: e for e in serving.entries().entries}
        for name, entry in list(serving.mine.items()):
            new = wanted.get(name)
            if new is not None and new.file != entry.file and new.file and entry.file:
                await _follow_update(serving, entry, new)
            elif new is None or new.file != entry.file:
                _LOGGER.info("Library: %s removed elsewhere (another server or the CLI)", name)
                await serving.unload(entry, entry.voices)
        for name in list(serving.problems):
            if name not in wanted:
                del serving.problems[name]
        for name, entry in wanted.items():
            if name not in serving.mine and name not in serving.problems:
                await _serve(serving, entry)


async def _serve(serving: Serving, entry: LibraryEntry) -> None:
    try:
        pairs = registrations(entry, serving.folder, serving.cache_dir)
        if any(n in serving.tts.speakers for n, _ in pairs):
            raise ValueError("a voice of it has the name of one served here")
        await asyncio.to_thread(serving.tts.add, pairs, warmup=False)
    except Exception as exc:  # noqa: BLE001 - logged, listed with why, the others go on
        _LOGGER.error("Library voice %s cannot be served here: %s", entry.name, exc)
        serving.problems[entry.name] = f"it cannot be served here: {exc}"
        return
    serving.committed(entry)
    _LOGGER.info("Library: %s installed elsewhere (another server or the CLI)", entry.name)


async def _follow_update(serving: Serving, old: LibraryEntry, new: LibraryEntry) -> None:
    """Another process updated `old` to `new`: the same swap, beside the old; a new version
    that cannot be served here leaves the old one serving."""
    try:
        pairs = registrations(new, serving.folder, serving.cache_dir)
        await serving.swap(old, pairs, warmup=False)
    except Exception as exc:  # noqa: BLE001 - logged, the old version serves on
        _LOGGER.error(
            "Library voice %s %s cannot be served here (%s); %s serves on",
            new.name, new.version, exc, old.version,
        )  # fmt: skip
        return
    serving.committed(new)
    _LOGGER.info("Library: %s updated to %s elsewhere", new.name, new.version)
    await serving.wait_retired()
