"""The library folder's files: a voice file removed with what the engine derived from it
(kept while another entry still uses the same model version), a file claimed while it is
installed, and the folder cleaned at start of what its state file does not list.

A file being installed sits in the folder before the state file lists it (it is loaded from
there); the installing process holds an exclusive `flock` on it until the state is written
(`claimed`), so `clean_folder` (in this process or a replica's) leaves it alone, and a
process killed mid-install leaves a file the next start removes."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from engine.aivm import forget_cache
from engine.sources.cache import CacheDir

from .state import PARTIAL_DIR, LibraryState, locked

__all__ = ["VOICE_SUFFIXES", "claimed", "clean_folder", "remove_with_cache"]

_LOGGER = logging.getLogger(__name__)

VOICE_SUFFIXES = (".aivmx", ".aivm")
_TEMP_PATTERNS = (".library-*.tmp", ".library.json.*.tmp")


def remove_with_cache(path: Path, cache_dir: CacheDir) -> None:
    """`path` and what the engine derived from it in the cache (its voice folder, split,
    optimised and int8 graphs: found by the file's path, so another file of the same model
    keeps its own)."""
    forget_cache(path, cache_dir)  # before the file: its manifest says where the cache is
    path.unlink(missing_ok=True)


@contextlib.contextmanager
def claimed(path: Path) -> Iterator[None]:
    """Hold `path` as being installed (an exclusive `flock` on it) for the block."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _is_claimed(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def clean_folder(folder: Path, cache_dir: CacheDir, state: LibraryState) -> list[str]:
    """Remove what a stopped or killed process left in `folder`: half-done downloads and
    uploads (``.partial``; a restart begins them again), state-file temporaries, and voice
    files `state` does not list (with their derived graphs), except a file another process
    is installing now. Returns the names removed (logged)."""
    removed: list[str] = []
    with locked(folder):
        partial = folder / PARTIAL_DIR
        if partial.is_dir():
            for item in partial.iterdir():
                if item.is_file() and not _is_claimed(item):
                    item.unlink(missing_ok=True)
                    removed.append(f"{PARTIAL_DIR}/{item.name}")
        for pattern in _TEMP_PATTERNS:
            for item in folder.glob(pattern):
                item.unlink(missing_ok=True)
                removed.append(item.name)
        listed = {e.file for e in state.entries if e.file}
        for item in folder.iterdir():
            if item.suffix.lower() not in VOICE_SUFFIXES or item.name in listed:
                continue
            if item.is_file() and not _is_claimed(item):
                remove_with_cache(item, cache_dir)
                removed.append(item.name)
    if removed:
        _LOGGER.info("Voice library: removed what no entry lists: %s", ", ".join(removed))
    return removed
