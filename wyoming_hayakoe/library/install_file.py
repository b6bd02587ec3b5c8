"""The steps of an install and a remove that need no running server: what the `library`
subcommand does to a stopped server's folder with the same checks as the page's installs
(`manager.Library`): the hub's architecture before a download, the memory guard, the file's
name in the folder, its `LibraryEntry`, the state changed under its lock, a file removed
with what the engine derived from it in the cache.

Pure functions over a folder and a file; no `TTS`, no event loop."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from engine.aivm.manifest import AivmFileError, AivmManifest, read_metadata
from engine.aivm.store import cache_entries
from engine.sources.cache import CacheDir

from .hub import HubModel
from .jobs import JobFailed
from .memory import HOLD_FACTOR, available_bytes, check_fits, estimate_bytes
from .state import LibraryEntry, LibraryState, locked, read_state, write_state

__all__ = [
    "change_state",
    "check_file_memory",
    "check_hub_architecture",
    "check_hub_memory",
    "check_name",
    "entry_for_file",
    "library_file",
    "remove_with_cache",
    "safe_name",
]


def safe_name(text: str) -> str:
    """`text` with only ``[A-Za-z0-9._-]`` (others as ``_``), for a file name."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text) or "voice"


def check_name(name: str | None) -> str | None:
    """A name the user gave a file (stripped), or `JobFailed` (empty, or with ``:``)."""
    if name is None:
        return None
    if not name.strip() or ":" in name:
        raise JobFailed(f"name {name!r}: give a non-empty name without ':'")
    return name.strip()


def check_hub_architecture(model: HubModel) -> None:
    """`JobFailed` when AivisHub says the model is not a JP-Extra voice (before any byte of
    it is downloaded)."""
    arch = model.architecture.replace("-", "").replace("_", "").lower()
    if arch and "jpextra" not in arch:
        raise JobFailed(
            f"AivisHub model {model.name} is a {model.architecture} model; only "
            "Style-Bert-VITS2 JP-Extra voices are served"
        )


def check_hub_memory(model: HubModel, available: int | None = None) -> None:
    """The memory guard from the hub's `file_size` (nothing downloaded yet); `available`:
    free bytes (default: `memory.available_bytes`)."""
    if model.file_size is not None:
        free = available_bytes() if available is None else available
        check_fits(model.name, int(model.file_size * HOLD_FACTOR), free)


def check_file_memory(manifest: AivmManifest, file: Path, available: int | None = None) -> None:
    """The memory guard from the file itself (`memory.MemoryRefused` naming both figures)."""
    free = available_bytes() if available is None else available
    size_mb = file.stat().st_size / 2**20
    check_fits(f"{manifest.name} ({size_mb:.0f} MB file)", estimate_bytes(file), free)


def library_file(folder: Path, base: str, manifest: AivmManifest, suffix: str) -> Path:
    """Where the file installed as `base` lives in the library folder (uuid and version in
    its name, so an update sits beside the old version until the swap)."""
    uuid8 = manifest.uuid[:8]
    return folder / f"{safe_name(base)}-{uuid8}-{safe_name(manifest.version)}{suffix.lower()}"


def entry_for_file(
    base: str, voices: tuple[str, ...], source: str, kind: str, final: Path, manifest: AivmManifest
) -> LibraryEntry:
    """The state file's entry of an installed `.aivmx`/`.aivm` (`final`, in the folder)."""
    return LibraryEntry(
        name=base,
        voices=voices,
        source=source,
        kind=kind,
        file=final.name,
        uuid=manifest.uuid,
        version=manifest.version,
        size=final.stat().st_size,
        license=(manifest.license or "").split("\n", 1)[0][:80],
        creators=tuple(manifest.creators),
    )


def change_state(folder: Path, change: Callable[[LibraryState], LibraryState]) -> LibraryState:
    """Read, change and write the state file under its lock (one writer at a time across
    processes); a state file that cannot be read raises `state.StateError` and is left as
    it is. Returns the state written."""
    with locked(folder):
        state = change(read_state(folder))
        write_state(folder, state)
    return state


def remove_with_cache(path: Path, cache_dir: CacheDir = None) -> None:
    """`path` and what the engine derived from it in the cache (its voice folder, split,
    optimised and int8 graphs)."""
    try:
        entries = cache_entries(read_metadata(path), cache_dir)
    except (OSError, AivmFileError):
        entries = []
    for folder in entries:
        shutil.rmtree(folder, ignore_errors=True)
    path.unlink(missing_ok=True)
