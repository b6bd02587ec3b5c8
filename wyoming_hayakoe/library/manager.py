"""`Library`: the voices installed while the server runs, beside the configured ones.

It owns the library folder (`state`), runs installs as jobs one at a time (`jobs`: an
AivisHub download, an upload already on disk, a Hugging Face voice), adds and removes voices
on the server's `TTS` (`TTS.add` / `TTS.remove`) and its `VoiceCatalog` (so the next
`describe` lists them), and watches the state file so replicas sharing the folder follow
each other's changes. Every method is called on the server's event loop; the slow parts run
in threads."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import shutil
import uuid as uuidlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.aivm.loader import voices_of_file
from engine.aivm.manifest import AivmFileError, read_metadata
from engine.aivm.naming import model_slug
from engine.aivm.store import cache_entries

from . import jobs as J
from .hub import Cancelled, HubError, HubModel, download, fetch_model
from .jobs import Job, JobFailed
from .memory import MemoryRefused, available_bytes, check_fits, estimate_bytes
from .options import LibrarySettings
from .sources import Requested, SourceRefused, parse_request
from .state import (
    PARTIAL_DIR,
    LibraryEntry,
    LibraryState,
    StateError,
    locked,
    read_state,
    signature,
    write_state,
)

if TYPE_CHECKING:
    from engine import TTS, Speaker

    from ..info import VoiceCatalog
    from ..settings import Settings

__all__ = ["Library", "LibraryError", "library_registrations"]

_LOGGER = logging.getLogger(__name__)

WATCH_INTERVAL_S = 2.0
_KEEP_JOBS = 50


class LibraryError(Exception):
    """A library request refused: `status` for HTTP, `field` names what was wrong."""

    def __init__(self, message: str, status: int = 400, field: str = "name") -> None:
        super().__init__(message)
        self.status = status
        self.field = field


def library_folder(settings: Settings) -> Path | None:
    lib: LibrarySettings = settings.library
    return lib.folder_for(settings.cache_dir) if lib.enabled else None


def _registrations(entry: LibraryEntry, folder: Path, settings: Settings) -> list[tuple[str, str]]:
    if entry.file:
        path = folder / entry.file
        pairs = voices_of_file(str(path), entry.name, cache_dir=settings.cache_dir, offline=True)
        return [(n, s) for n, s in pairs]
    return [(entry.voices[0], entry.load_source)]


def library_registrations(settings: Settings, taken: list[str]) -> list[tuple[str, str]]:
    """The library's voices to load at start, after the configured ones (`taken`): a file
    that cannot be read, or a voice whose name is taken, is left out with an error logged.
    Downloads a stopped server left half done are removed (the install starts again)."""
    folder = library_folder(settings)
    if folder is None:
        return []
    shutil.rmtree(folder / PARTIAL_DIR, ignore_errors=True)
    try:
        state = read_state(folder)
    except StateError as exc:
        _LOGGER.error("Voice library left out: %s", exc)
        return []
    used = {t.casefold() for t in taken}
    found: list[tuple[str, str]] = []
    for entry in state.entries:
        try:
            pairs = _registrations(entry, folder, settings)
        except (OSError, AivmFileError) as exc:
            _LOGGER.error("Library voice %s left out: %s", entry.name, exc)
            continue
        clash = [n for n, _ in pairs if n.casefold() in used]
        if clash:
            _LOGGER.error(
                "Library voice %s left out: %s is also a configured voice", entry.name, clash[0]
            )
            continue
        used.update(n.casefold() for n, _ in pairs)
        found.extend(pairs)
    return found


class Library:
    def __init__(self, settings: Settings, tts: TTS, catalog: VoiceCatalog, folder: Path) -> None:
        self.settings = settings
        self.options: LibrarySettings = settings.library
        self.tts = tts
        self.catalog = catalog
        self.folder = folder
        self.partial = folder / PARTIAL_DIR
        self._jobs: dict[str, Job] = {}
        self._queue: asyncio.Queue[tuple[Job, Requested | Path]] = asyncio.Queue()
        self._change = asyncio.Lock()  # installs, removes and the watcher, one at a time
        self._tasks: list[asyncio.Task[None]] = []
        self._signature = signature(folder)
        try:
            state = read_state(folder)
        except StateError:
            state = LibraryState()
        speakers = catalog.speakers
        self._served: dict[str, LibraryEntry] = {
            e.name: e for e in state.entries if all(v in speakers for v in e.voices)
        }
        """The entries this process serves now, by name."""

    # -- life ----------------------------------------------------------------------------
    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._work(), name="library-jobs"),
            asyncio.create_task(self._watch(), name="library-watch"),
        ]

    async def close(self) -> None:
        for job in self._jobs.values():
            job.cancel_asked = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []

    # -- what the page shows -------------------------------------------------------------
    def configured(self) -> list[str]:
        mine = {v for e in self._served.values() for v in e.voices}
        return [n for n in self.catalog.speakers if n not in mine]

    def _int8(self, voices: tuple[str, ...]) -> dict[str, str]:
        upgrades = self.tts.int8_upgrades
        out: dict[str, str] = {}
        for name in voices:
            if name in upgrades:
                out[name] = upgrades[name].state
            else:
                speaker = self.catalog.speakers.get(name)
                precision = getattr(speaker, "precision", None) if speaker else None
                out[name] = str(precision or "")
        return out

    def listing(self) -> dict[str, Any]:
        speakers = self.catalog.speakers
        configured = [
            {"name": n, "configured": True, "precision": _precision(speakers[n])}
            for n in self.configured()
        ]
        installed = []
        for entry in self._served.values():
            data = entry.as_json()
            data["configured"] = False
            data["int8"] = self._int8(entry.voices)
            installed.append(data)
        return {
            "configured": configured,
            "installed": installed,
            "jobs": [j.as_json() for j in self._jobs.values()],
            "official": list(_official()),
            "max_upload": self.options.max_upload,
        }

    def job(self, job_id: str) -> dict[str, Any]:
        job = self._jobs.get(job_id)
        if job is None:
            raise LibraryError(f"no job {job_id!r}", 404, "job")
        return job.as_json(self._int8(job.voices) if job.state == J.READY else None)

    def cancel(self, job_id: str) -> dict[str, Any]:
        job = self._jobs.get(job_id)
        if job is None:
            raise LibraryError(f"no job {job_id!r}", 404, "job")
        if job.finished:
            raise LibraryError(f"job {job_id} has ended ({job.state})", 409, "job")
        if job.state in (J.CONVERTING, J.LOADING):
            raise LibraryError(f"job {job_id} is loading its voice and cannot stop now", 409, "job")
        job.cancel_asked = True
        if job.state == J.QUEUED:
            job.state = J.CANCELLED
        return job.as_json()

    # -- requests ------------------------------------------------------------------------
    def install(self, source: str, name: str | None = None) -> Job:
        try:
            requested = parse_request(source, name)
        except SourceRefused as exc:
            raise LibraryError(str(exc), 400, "source") from None
        return self._submit(Job(source=requested.source, name=requested.name), requested)

    def install_upload(self, path: Path, filename: str, name: str | None = None) -> Job:
        """An uploaded file already streamed to `path` (under `upload_path()`)."""
        if name is not None and (not name.strip() or ":" in name):
            path.unlink(missing_ok=True)
            raise LibraryError(f"name {name!r}: give a non-empty name without ':'")
        return self._submit(Job(source=f"upload:{filename}", name=name), path)

    def upload_path(self, filename: str) -> Path:
        """Where an upload is streamed to (cleaned at the next start if left)."""
        suffix = ".aivm" if filename.lower().endswith(".aivm") else ".aivmx"
        self.partial.mkdir(parents=True, exist_ok=True)
        return self.partial / f"upload-{uuidlib.uuid4().hex}{suffix}"

    def update(self, name: str) -> Job:
        entry = self._entry(name)
        if entry.kind != "aivishub":
            raise LibraryError(f"{entry.name} did not come from AivisHub: no update to look for")
        requested = Requested("aivishub", entry.source, uuid=entry.uuid, name=entry.name)
        job = Job(source=entry.source, name=entry.name, action="update")
        return self._submit(job, requested)

    async def remove(self, name: str) -> list[str]:
        entry = self._entry(name)
        why = self.catalog.in_use(list(entry.voices))
        if why is not None:
            raise LibraryError(f"{entry.name} cannot be removed: {why}", 409)
        async with self._change:
            await self._unserve(entry)
            await asyncio.to_thread(self._write, lambda s: s.without(entry.name))
            await asyncio.to_thread(self._delete_files, entry)
        return list(entry.voices)

    def _entry(self, name: Any) -> LibraryEntry:
        if not isinstance(name, str) or not name.strip():
            raise LibraryError("name: give the name of a library voice")
        state = LibraryState(tuple(self._served.values()))
        entry = state.find(name.strip())
        if entry is None:
            if any(n.casefold() == name.strip().casefold() for n in self.configured()):
                raise LibraryError(
                    f"{name} is a configured voice (flags or add-on options), not a library "
                    "voice: change the configuration to remove it",
                    409,
                )
            raise LibraryError(f"{name} is not in the library", 404)
        return entry

    def _submit(self, job: Job, what: Requested | Path) -> Job:
        self._jobs[job.id] = job
        for old in [j for j in self._jobs.values() if j.finished][: -_KEEP_JOBS or None]:
            if len(self._jobs) > _KEEP_JOBS:
                self._jobs.pop(old.id, None)
        self._queue.put_nowait((job, what))
        return job

    # -- the worker ----------------------------------------------------------------------
    async def _work(self) -> None:
        while True:
            job, what = await self._queue.get()
            if job.state == J.CANCELLED:
                if isinstance(what, Path):
                    what.unlink(missing_ok=True)
                continue
            try:
                await self._run(job, what)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a bug: the job says so, the server goes on
                _LOGGER.exception("Library job %s failed", job.id)
                _fail(job, f"the install failed unexpectedly ({exc})")

    async def _run(self, job: Job, what: Requested | Path) -> None:
        file: Path | None = None
        try:
            if isinstance(what, Path):
                file = what
                await self._install_file(job, file, "upload", job.source, None)
            elif what.kind == "aivishub":
                model = await self._hub_model(what.uuid)
                current = self._served.get(job.name or "") if job.action == "update" else None
                if current is not None and current.version == model.version:
                    job.state = J.READY
                    job.voices = current.voices
                    job.error = ""
                    _LOGGER.info(
                        "%s is AivisHub's newest version (%s)", current.name, model.version
                    )
                    return
                if model.file_size is not None:
                    self._check_memory(model.name, int(model.file_size * 1.6))
                file = await self._download(job, model)
                await self._install_file(job, file, "aivishub", job.source, model, replace=current)
            else:
                await self._install_hf(job, what)
        except Cancelled:
            job.state = J.CANCELLED
        except (JobFailed, HubError, AivmFileError, MemoryRefused) as exc:
            message = str(exc)
            if file is not None:  # the file as the user knows it, not where it waited
                shown = job.source.removeprefix("upload:") if isinstance(what, Path) else ""
                message = message.replace(str(file), shown or file.name)
            _fail(job, message)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                _fail(job, f"the disk holding {self.folder} is full")
            else:
                _fail(job, f"{exc.filename or self.folder}: {exc.strerror or exc}")
        finally:
            if file is not None:
                file.unlink(missing_ok=True)  # moved into the library when installed

    async def _hub_model(self, uuid: str) -> HubModel:
        model = await fetch_model(
            self.options.aivishub_api,
            uuid,
            connect=self.options.connect_timeout,
            read=self.options.read_timeout,
        )
        arch = model.architecture.replace("-", "").replace("_", "").lower()
        if arch and "jpextra" not in arch:
            raise JobFailed(
                f"AivisHub model {model.name} is a {model.architecture} model; only "
                "Style-Bert-VITS2 JP-Extra voices are served"
            )
        return model

    async def _download(self, job: Job, model: HubModel) -> Path:
        self.partial.mkdir(parents=True, exist_ok=True)
        dest = self.partial / f"{model.uuid}-{_safe(model.version)}.aivmx"
        job.state = J.DOWNLOADING

        def progress(done: int, total: int | None) -> None:
            job.done_bytes, job.total_bytes = done, total

        await download(
            self.options.aivishub_api,
            model,
            dest,
            connect=self.options.connect_timeout,
            read=self.options.read_timeout,
            progress=progress,
            cancelled=lambda: job.cancel_asked,
        )
        return dest

    def _check_memory(self, what: str, needed: int) -> None:
        check_fits(what, needed, available_bytes())

    async def _install_file(
        self,
        job: Job,
        file: Path,
        kind: str,
        source: str,
        model: HubModel | None,
        replace: LibraryEntry | None = None,
    ) -> None:
        job.state = J.CHECKING
        meta = await asyncio.to_thread(read_metadata, file)
        manifest = meta.manifest
        self._check_memory(
            f"{manifest.name} ({file.stat().st_size / 2**20:.0f} MB file)", estimate_bytes(file)
        )
        if job.cancel_asked:
            raise Cancelled
        base = job.name or model_slug(manifest) or f"aivm-{manifest.uuid[:8]}"
        suffix = file.suffix.lower()
        final = self.folder / f"{_safe(base)}-{manifest.uuid[:8]}-{_safe(manifest.version)}{suffix}"
        async with self._change:
            if replace is None and base in self._served:
                raise JobFailed(f"the library already has {base}: remove it or give another name")
            await asyncio.to_thread(os.replace, file, final)
            added: list[Speaker] = []
            try:
                pairs = voices_of_file(str(final), base, cache_dir=self.settings.cache_dir)
                names = [n for n, _ in pairs]
                old = set(replace.voices) if replace is not None else set()
                taken = {n.casefold() for n in self.catalog.speakers if n not in old}
                clash = [n for n in names if n.casefold() in taken]
                if clash:
                    raise JobFailed(
                        f"a voice named {clash[0]} is already served: give another name"
                    )
                if replace is not None:
                    await self._unserve(replace)
                job.state = J.CONVERTING if suffix == ".aivm" else J.LOADING
                added = await asyncio.to_thread(self.tts.add, pairs, warmup=self.settings.warmup)
                self.catalog.add_speakers({s.name: s for s in added})
            except BaseException as exc:
                for s in added:
                    with contextlib.suppress(Exception):
                        self.catalog.remove_speakers([s.name])
                await asyncio.to_thread(_unlink_with_cache, final, self.settings.cache_dir)
                if isinstance(exc, Exception) and not isinstance(exc, (JobFailed, Cancelled)):
                    raise JobFailed(f"{manifest.name} cannot be loaded: {exc}") from exc
                raise
            entry = LibraryEntry(
                name=base,
                voices=tuple(names),
                source=source,
                kind=kind,
                file=final.name,
                uuid=manifest.uuid,
                version=manifest.version,
                size=final.stat().st_size,
                license=(manifest.license or "").split("\n", 1)[0][:80],
                creators=tuple(manifest.creators),
            )
            self._served[entry.name] = entry
            await asyncio.to_thread(self._write, lambda s: s.with_entry(entry))
            if replace is not None and replace.file != entry.file:
                await asyncio.to_thread(self._delete_files, replace)
        job.voices = entry.voices
        job.state = J.READY
        _LOGGER.info("Library: %s installed (%s)", entry.name, ", ".join(entry.voices))

    async def _install_hf(self, job: Job, what: Requested) -> None:
        name = what.name or ""
        async with self._change:
            if name.casefold() in {n.casefold() for n in self.catalog.speakers}:
                raise JobFailed(f"a voice named {name} is already served")
            job.state = J.LOADING
            try:
                added = await asyncio.to_thread(
                    self.tts.add, [(name, what.load_source)], warmup=self.settings.warmup
                )
            except Exception as exc:  # noqa: BLE001 - the job names it
                raise JobFailed(f"{name} cannot be loaded from {what.load_source}: {exc}") from exc
            self.catalog.add_speakers({s.name: s for s in added})
            entry = LibraryEntry(
                name=name,
                voices=(name,),
                source=what.source,
                kind="hf",
                load_source=what.load_source,
            )
            self._served[name] = entry
            await asyncio.to_thread(self._write, lambda s: s.with_entry(entry))
        job.voices = entry.voices
        job.state = J.READY

    # -- changes -------------------------------------------------------------------------
    async def _unserve(self, entry: LibraryEntry) -> None:
        voices = [v for v in entry.voices if v in self.catalog.speakers]
        self.catalog.remove_speakers(voices)
        self._served.pop(entry.name, None)
        loaded = [v for v in voices if v in self.tts.speakers]
        if loaded:
            await asyncio.to_thread(self.tts.remove, loaded, timeout=self.settings.drain_timeout)

    def _write(self, change: Callable[[LibraryState], LibraryState]) -> None:
        with locked(self.folder):
            try:
                state = read_state(self.folder)
            except StateError as exc:
                _LOGGER.error("%s; it is written again from what this server serves", exc)
                state = LibraryState(tuple(self._served.values()))
            write_state(self.folder, change(state))
            self._signature = signature(self.folder)

    def _delete_files(self, entry: LibraryEntry) -> None:
        if entry.file:
            _unlink_with_cache(self.folder / entry.file, self.settings.cache_dir)

    # -- replicas sharing the folder -----------------------------------------------------
    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(WATCH_INTERVAL_S)
            if signature(self.folder) == self._signature:
                continue
            try:
                await self.sync()
            except Exception:  # noqa: BLE001 - tried again at the next change
                _LOGGER.exception("Library: following the state file failed")

    async def sync(self) -> None:
        """Serve what the state file lists now (another replica installed or removed)."""
        async with self._change:
            self._signature = signature(self.folder)
            try:
                state = await asyncio.to_thread(read_state, self.folder)
            except StateError as exc:
                _LOGGER.error("Library: %s", exc)
                return
            wanted = {e.name: e for e in state.entries}
            for name, entry in list(self._served.items()):
                if name not in wanted or wanted[name].file != entry.file:
                    _LOGGER.info("Library: %s removed by another server", name)
                    await self._unserve(entry)
            for name, entry in wanted.items():
                if name in self._served:
                    continue
                try:
                    pairs = _registrations(entry, self.folder, self.settings)
                    if any(n in self.catalog.speakers for n, _ in pairs):
                        continue
                    added = await asyncio.to_thread(self.tts.add, pairs, warmup=False)
                except Exception as exc:  # noqa: BLE001 - logged, the others go on
                    _LOGGER.error("Library voice %s cannot be served here: %s", name, exc)
                    continue
                self.catalog.add_speakers({s.name: s for s in added})
                self._served[name] = entry
                _LOGGER.info("Library: %s installed by another server", name)


def _fail(job: Job, message: str) -> None:
    job.state = J.FAILED
    job.error = message
    _LOGGER.warning("Library job %s (%s) failed: %s", job.id, job.source, job.error)


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text) or "voice"


def _precision(speaker: Any) -> str:
    return str(getattr(speaker, "precision", "") or "")


def _official() -> tuple[str, ...]:
    from .sources import OFFICIAL_VOICES

    return OFFICIAL_VOICES


def _unlink_with_cache(path: Path, cache_dir: Any) -> None:
    """`path` and what the engine derived from it in the cache."""
    try:
        entries = cache_entries(read_metadata(path), cache_dir)
    except (OSError, AivmFileError):
        entries = []
    for folder in entries:
        shutil.rmtree(folder, ignore_errors=True)
    path.unlink(missing_ok=True)
