"""The one install path, for the page, the API, the CLI, updates and replicas alike:
check → fetch → verify → load → commit.

- **check** (before any byte is fetched): the name is free, the model is not installed
  already (AivisHub, no name given), an update's voice is still the one installed.
- **fetch** (`fetch`): the AivisHub model's facts (*contacting*), its architecture and the
  memory guard from its declared size, then its file (*downloading*); an upload is on disk
  already; a Hugging Face voice is fetched by the load.
- **verify** (*checking*): the file's manifest, an `.aivm` only where PyTorch can convert it,
  the memory guard from the file, its voices' names free.
- **load** (*converting*/*loading*): the `Host` loads it — the server builds and serves it
  (`serving.Serving`), the CLI has nothing more to do on a stopped server's folder.
- **commit**: the file moved into the folder under its one name (`naming.library_file_name`),
  held (`files.claimed`) until the state file lists it; the entry built here and nowhere
  else. Any failure undoes what was done: no file, no cache, no entry left."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import re
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from engine.aivm import AivmFileError, AivmManifest, model_slug, read_metadata, voices_of_file
from engine.sources import is_disk_full
from engine.sources.cache import CacheDir

from .errors import Code, LibraryError
from .fetch import contact_hub, download_hub, partial_file
from .files import claimed, remove_with_cache
from .jobs import JobState, Report
from .memory import MemoryRefused, available_bytes, check_fits, estimate_bytes
from .naming import library_file_name, name_key
from .options import LibrarySettings
from .semver import is_newer
from .state import LibraryEntry, LibraryState, change_state

__all__ = [
    "Host",
    "Plan",
    "build_entry",
    "check_plan",
    "commit_file",
    "hub_host",
    "install",
    "plain_license",
    "torch_available",
    "verify_file",
]

_LOGGER = logging.getLogger(__name__)

Pairs = list[tuple[str, str]]


@dataclass(frozen=True)
class Plan:
    """What to install: from where, under which name (None: the file's own)."""

    kind: str
    """``aivishub``, ``upload`` or ``hf``."""
    source: str
    """As the user gave it (``upload:<file name>`` for an upload)."""
    name: str | None = None
    uuid: str = ""
    load_source: str = ""
    """What the engine loads (``hf``)."""
    replace: LibraryEntry | None = None
    """The entry an update replaces."""


class Host(Protocol):
    """Where an install lands: the library folder, and what serves it."""

    @property
    def folder(self) -> Path: ...

    @property
    def cache_dir(self) -> CacheDir: ...

    def entries(self) -> LibraryState:
        """The library's entries now."""
        ...

    def configured(self) -> Sequence[str]:
        """Voices served that are not the library's (their names are taken)."""
        ...

    def changing(self) -> AbstractAsyncContextManager[None]:
        """Held while an install commits (one change to the served voices at a time)."""
        ...

    async def load(self, pairs: Pairs, replace: LibraryEntry | None, report: Report) -> None:
        """Build and serve `pairs` (in place of `replace`'s voices); raises and serves
        nothing new when they cannot be."""
        ...

    async def unload(self, entry: LibraryEntry, voices: Sequence[str]) -> None:
        """Undo `load` (the state file could not be written)."""
        ...

    def committed(self, entry: LibraryEntry) -> None:
        """`entry` is listed in the state file now, and served."""
        ...


def torch_available() -> bool:
    """Whether PyTorch can be imported here (an `.aivm` is converted with it)."""
    return importlib.util.find_spec("torch") is not None


def _taken(host: Host, name: str, replace: LibraryEntry | None) -> None:
    state = host.entries()
    entry = state.find(name)
    if entry is not None and (replace is None or entry.name != replace.name):
        also = "" if name_key(entry.name) == name_key(name) else f" (it serves {name})"
        raise LibraryError(
            Code.NAME_TAKEN,
            f"the library already has {entry.name}{also}: remove it or give another name",
            "name",
        )
    if any(name_key(c) == name_key(name) for c in host.configured()):
        raise LibraryError(
            Code.NAME_TAKEN, f"a configured voice is named {name}: give another name", "name"
        )


def check_plan(plan: Plan, host: Host) -> None:
    """The checks made before anything is fetched (`LibraryError` naming the field)."""
    if plan.replace is not None:
        current = host.entries().find(plan.replace.name)
        if current != plan.replace:
            raise LibraryError(
                Code.NOT_IN_LIBRARY, f"{plan.replace.name} changed while its update waited"
            )
        return
    if plan.name is not None:
        _taken(host, plan.name, None)
    elif plan.uuid:
        same = host.entries().with_uuid(plan.uuid)
        if same:
            raise LibraryError(
                Code.ALREADY_INSTALLED,
                f"the library already has {same[0].name} (AivisHub model {plan.uuid}): "
                "update it, or give another name to install it twice",
                "source",
            )


@dataclass(frozen=True)
class Verified:
    """A file that passed `verify_file`: its manifest, its name and its voices."""

    file: Path
    manifest: AivmManifest
    base: str
    names: tuple[str, ...]


def verify_file(
    plan: Plan, file: Path, shown: str, host: Host, report: Report, available: int | None = None
) -> Verified:
    """The file's checks (`LibraryError`; `shown`: the file as the user knows it)."""
    report.move(JobState.CHECKING)
    try:
        manifest = read_metadata(file).manifest
        if file.suffix.lower() == ".aivm" and not torch_available():
            raise LibraryError(
                Code.NOT_SUPPORTED,
                f"{shown}: an .aivm file holds PyTorch weights and this installation has no "
                "PyTorch to convert it; install the .aivmx of the same voice",
                "file",
            )
        free = available_bytes() if available is None else available
        size_mb = file.stat().st_size / 2**20
        check_fits(f"{manifest.name} ({size_mb:.0f} MB file)", estimate_bytes(file), free)
        base = plan.name or (plan.replace.name if plan.replace else model_slug(manifest))
        pairs = voices_of_file(str(file), base, cache_dir=host.cache_dir, offline=True)
    except AivmFileError as exc:
        raise LibraryError(Code.FILE_INVALID, str(exc).replace(str(file), shown), "file") from None
    except MemoryRefused as exc:
        raise LibraryError(Code.MEMORY, str(exc)) from None
    if plan.replace is not None and manifest.uuid != plan.replace.uuid:
        raise LibraryError(Code.FILE_INVALID, f"{shown} is another model than {plan.replace.name}")
    names = tuple(n for n, _ in pairs)
    if plan.replace is None:
        _taken(host, base, None)
    old = {name_key(v) for v in plan.replace.voices} if plan.replace else set()
    for n in names:
        if name_key(n) not in old:
            _taken(host, n, plan.replace)
    return Verified(file, manifest, base, names)


_MARKUP = re.compile(r"^\s{0,3}(?:#{1,6}\s*|[-*+>]\s+)|[*_`~]+")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def plain_license(text: str | None, limit: int = 200) -> str:
    """A manifest's license (often Markdown) as one line of plain text: headings, list
    marks, emphasis and link targets left out."""
    lines = [_MARKUP.sub("", _LINK.sub(r"\1", line)).strip() for line in (text or "").splitlines()]
    first = next((line for line in lines if line), "")
    return first[:limit]


def build_entry(
    plan: Plan,
    name: str,
    voices: Sequence[str],
    *,
    final: Path | None = None,
    manifest: AivmManifest | None = None,
) -> LibraryEntry:
    """The state file's entry of an install (the one place one is built)."""
    kind = "aivishub" if plan.replace is not None else plan.kind
    if final is None or manifest is None:
        return LibraryEntry(
            name=name, voices=tuple(voices), source=plan.source, kind=kind,
            load_source=plan.load_source,
        )  # fmt: skip
    return LibraryEntry(
        name=name,
        voices=tuple(voices),
        source=plan.replace.source if plan.replace is not None else plan.source,
        kind=kind,
        file=final.name,
        uuid=manifest.uuid,
        version=manifest.version,
        size=final.stat().st_size,
        license=plain_license(manifest.license),
        creators=tuple(manifest.creators),
    )


def _write_entry(host: Host, entry: LibraryEntry, replace: LibraryEntry | None) -> None:
    def change(state: LibraryState) -> LibraryState:
        if replace is not None:
            state = state.without(replace.name)
        elif state.find(entry.name) is not None:  # another process was quicker
            raise LibraryError(Code.NAME_TAKEN, f"the library already has {entry.name}", "name")
        return state.with_entry(entry)

    change_state(host.folder, change)


async def commit_file(plan: Plan, verified: Verified, host: Host, report: Report) -> LibraryEntry:
    """Move the verified file into the folder, load it, list it; undone on any failure."""
    m = verified.manifest
    final = host.folder / library_file_name(m.uuid, m.version, verified.base, verified.file.suffix)
    if final.exists():
        raise LibraryError(Code.ALREADY_INSTALLED, f"{verified.base} {m.version} is installed")
    await asyncio.to_thread(os.replace, verified.file, final)
    try:
        pairs = voices_of_file(str(final), verified.base, cache_dir=host.cache_dir, offline=True)
        entry = build_entry(plan, verified.base, verified.names, final=final, manifest=m)
        async with host.changing():
            check_plan(plan, host)
            await _commit_claimed(plan, final, pairs, entry, host, report)
    except BaseException as exc:
        await asyncio.to_thread(remove_with_cache, final, host.cache_dir)
        failure = _load_failure(exc, m, plan.replace, host)
        if failure is exc:
            raise
        raise failure from exc
    return entry


async def _commit_claimed(
    plan: Plan, final: Path, pairs: Pairs, entry: LibraryEntry, host: Host, report: Report
) -> None:
    """Load the file held as being installed, then list it; unloaded when listing fails."""
    with claimed(final):
        converting = final.suffix.lower() == ".aivm"
        report.move(JobState.CONVERTING if converting else JobState.LOADING)
        await host.load(pairs, plan.replace, report)
        try:
            await asyncio.to_thread(_write_entry, host, entry, plan.replace)
        except BaseException:
            await host.unload(entry, entry.voices)
            raise
        host.committed(entry)


async def install(
    plan: Plan,
    host: Host,
    report: Report,
    options: LibrarySettings,
    upload: tuple[Path, str] | None = None,
) -> LibraryEntry | None:
    """Install `plan` on `host`, every step in order (`upload`: the uploaded file and its
    name as the user knows it). Returns the entry, or None for an update that found no
    newer version."""
    check_plan(plan, host)
    if plan.kind == "hf":
        return await _install_hf(plan, host, report)
    if upload is not None:
        file, shown = upload
    else:
        model = await contact_hub(plan.uuid, options, report)
        if plan.replace is not None and not is_newer(model.version, plan.replace.version):
            _LOGGER.info(
                "%s %s: AivisHub has no newer version (%s)",
                plan.replace.name, plan.replace.version, model.version,
            )  # fmt: skip
            return None
        file = partial_file(host.folder, f"{model.uuid}.aivmx")
        shown = f"{model.name} {model.version}".strip()
    try:
        if upload is None:
            await download_hub(model, file, options, report)
        verified = await asyncio.to_thread(verify_file, plan, file, shown, host, report)
        return await commit_file(plan, verified, host, report)
    finally:
        file.unlink(missing_ok=True)  # moved into the folder when installed


def hub_host() -> str:
    """The Hugging Face host a ``hf://`` voice is fetched from (``HF_ENDPOINT``'s, else
    ``huggingface.co``)."""
    endpoint = os.environ.get("HF_ENDPOINT", "").strip() or "https://huggingface.co"
    return urlsplit(endpoint).netloc or endpoint


def _hf_failure(exc: Exception, name: str, host: Host) -> LibraryError:
    """Why a Hugging Face voice could not be loaded, as the library's error: the Hub out of
    reach (``source_unreachable``, naming its host), a full disk, else ``load_failed``."""
    from engine.sources import SourceUnavailableError

    cause = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, SourceUnavailableError):
        return LibraryError(
            Code.SOURCE_UNREACHABLE,
            f"{name} could not be fetched: {hub_host()} could not be reached ({cause})",
            "source",
        )
    if is_disk_full(exc):
        from engine.sources.cache import cache_root

        return LibraryError(
            Code.DISK_FULL, f"{name} cannot be fetched: {cache_root(host.cache_dir)} is full"
        )
    return LibraryError(Code.LOAD_FAILED, f"{name} cannot be loaded: {cause}")


async def _install_hf(plan: Plan, host: Host, report: Report) -> LibraryEntry:
    name = plan.name or ""
    entry = build_entry(plan, name, [name])
    report.move(JobState.LOADING)
    async with host.changing():
        check_plan(plan, host)
        try:
            await host.load([(name, plan.load_source)], None, report)
        except LibraryError:
            raise
        except Exception as exc:  # noqa: BLE001 - said as one of the library's codes
            raise _hf_failure(exc, name, host) from exc
        try:
            await asyncio.to_thread(_write_entry, host, entry, None)
        except BaseException:
            await host.unload(entry, entry.voices)
            raise
        host.committed(entry)
    return entry


def _load_failure(
    exc: BaseException, m: AivmManifest, replace: LibraryEntry | None, host: Host
) -> BaseException:
    if not isinstance(exc, Exception) or isinstance(exc, LibraryError):
        return exc
    cause = " ".join(str(exc).split()) or type(exc).__name__
    if is_disk_full(exc):
        from engine.sources.cache import cache_root

        where = cache_root(host.cache_dir)
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else cause
        return LibraryError(Code.DISK_FULL, f"{m.name} cannot be prepared: {where} is full ({why})")
    if replace is not None:
        return LibraryError(
            Code.LOAD_FAILED,
            f"{m.name} {m.version} cannot be loaded ({cause}); {replace.version} still serves",
        )
    return LibraryError(Code.LOAD_FAILED, f"{m.name} cannot be loaded: {cause}")
