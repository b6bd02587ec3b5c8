"""`Library`: the voices installed while the server runs, beside the configured ones.

It owns the library folder (`state`), runs installs as jobs one at a time (`jobs`: an
AivisHub download, an upload already on disk, a Hugging Face voice), adds and removes voices
on the server's `TTS` (`TTS.add` / `TTS.remove`) and its `VoiceCatalog` (so the next
`describe` lists them), and watches the state file so replicas sharing the folder follow
each other's changes. Every method is called on the server's event loop; the slow parts run
in threads.

Updates (AivisHub voices): AivisHub's newest version of each installed AivisHub model is
asked for at start, then every ``--library-update-check`` hours, and when the page asks
(`check_updates`); `listing` says ``update_available`` where it is newer (SemVer,
`semver`). An update is made ready beside the old version (`TTS.replace`: built under the
same names while the old serves), then the catalog points the names at the new speakers in
one step (requests already running on the old finish on it), then the old is freed and its
file and derived graphs deleted. A new version that cannot be loaded leaves the old one
served as it was."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
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
from engine.sources.cache import cache_root

from . import hub as _hub
from . import jobs as J
from .hub import Cancelled, HubError, HubModel, download, fetch_model
from .jobs import Job, JobFailed
from .memory import MemoryRefused, available_bytes, check_fits, estimate_bytes
from .options import LibrarySettings
from .semver import is_newer
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
CHECK_WAIT_S = 10.0
"""How long a listing asked to check for updates (``?check=1``) waits for the hub; a slower
check goes on and the next listing shows what it found."""

_QUIET_HUB = contextvars.ContextVar("library_update_check", default=False)


class _QuietHubTries(logging.Filter):
    """The hub client's warning per failed try, left out inside an update check (which logs
    one line for the whole check): a check is asked again later, an install is not."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _QUIET_HUB.get()


_hub_logger = logging.getLogger(_hub.__name__)
if not any(isinstance(f, _QuietHubTries) for f in _hub_logger.filters):
    _hub_logger.addFilter(_QuietHubTries())


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
        self._latest: dict[str, str] = {}
        """AivisHub's newest version of each installed AivisHub model, by UUID (as last
        asked: a model the hub did not answer for is left out)."""
        self._check: asyncio.Task[None] | None = None
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
        if self.options.update_check_hours > 0:
            self._tasks.append(asyncio.create_task(self._check_often(), name="library-updates"))

    async def close(self) -> None:
        for job in self._jobs.values():
            job.cancel_asked = True
        if self._check is not None:
            self._tasks.append(self._check)
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
                out[name] = _precision(speaker) if speaker is not None else ""
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
            latest = self._latest.get(entry.uuid) if entry.kind == "aivishub" else None
            data["latest_version"] = latest
            data["update_available"] = latest is not None and is_newer(latest, entry.version)
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

    # -- newer versions on AivisHub ------------------------------------------------------
    async def check_updates(self, wait: float | None = None) -> None:
        """Ask AivisHub for the newest version of every installed AivisHub model (one check
        at a time: a second caller joins the one running); `wait`: seconds to wait for it at
        most (it goes on after). Never raises for the hub: a model it does not answer for
        shows no update, and the check logs one warning."""
        if self._check is None or self._check.done():
            self._check = asyncio.create_task(self._check_once(), name="library-update-check")
        await asyncio.wait({self._check}, timeout=wait)

    async def _check_often(self) -> None:
        while True:
            await self.check_updates()
            await asyncio.sleep(self.options.update_check_hours * 3600)

    async def _check_once(self) -> None:
        _QUIET_HUB.set(True)  # this task's context only: installs keep their warnings
        entries = [e for e in self._served.values() if e.kind == "aivishub" and e.uuid]
        uuids = sorted({e.uuid for e in entries})
        if not uuids:
            return
        answers = await asyncio.gather(
            *(
                fetch_model(
                    self.options.aivishub_api,
                    uuid,
                    connect=self.options.connect_timeout,
                    read=self.options.read_timeout,
                )
                for uuid in uuids
            ),
            return_exceptions=True,
        )
        failed: list[str] = []
        for uuid, answer in zip(uuids, answers, strict=True):
            if isinstance(answer, HubModel) and answer.version:
                self._latest[uuid] = answer.version
                continue
            self._latest.pop(uuid, None)
            if isinstance(answer, BaseException) and not isinstance(answer, Exception):
                raise answer  # cancelled
            names = ", ".join(e.name for e in entries if e.uuid == uuid)
            cause = answer if isinstance(answer, Exception) else "no version given"
            failed.append(f"{names} ({cause})")
        if failed:
            _LOGGER.warning(
                "AivisHub update check: no answer for %s; no update is shown for %s",
                "; ".join(failed),
                "it" if len(failed) == 1 else "them",
            )
        newer = [
            f"{e.name} {e.version} → {self._latest[e.uuid]}"
            for e in entries
            if e.uuid in self._latest and is_newer(self._latest[e.uuid], e.version)
        ]
        if newer:
            _LOGGER.info("AivisHub has newer versions: %s", ", ".join(newer))

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
                if model.version:
                    self._latest[model.uuid] = model.version
                current = self._served.get(job.name or "") if job.action == "update" else None
                if current is not None and not is_newer(model.version, current.version):
                    job.state = J.READY
                    job.voices = current.voices
                    job.error = ""
                    _LOGGER.info(
                        "%s %s: AivisHub has no newer version (%s)",
                        current.name,
                        current.version,
                        model.version,
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
        if replace is not None and final.name == replace.file:  # never over the served file
            final = final.with_name(f"{final.stem}-{job.id}{suffix}")
        async with self._change:
            if replace is None and base in self._served:
                raise JobFailed(f"the library already has {base}: remove it or give another name")
            if replace is not None and self._served.get(replace.name) != replace:
                raise JobFailed(f"{replace.name} changed while its update was downloaded")
            await asyncio.to_thread(os.replace, file, final)
            added: list[Speaker] = []
            swapped = False
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
                    why = self.catalog.in_use([v for v in replace.voices if v not in names])
                    if why is not None:
                        raise JobFailed(
                            f"{replace.name} {manifest.version} no longer has a voice in use: {why}"
                        )
                job.state = J.CONVERTING if suffix == ".aivm" else J.LOADING
                if replace is None:
                    added = await asyncio.to_thread(
                        self.tts.add, pairs, warmup=self.settings.warmup
                    )
                    self.catalog.add_speakers({s.name: s for s in added})
                else:
                    swap = self._replace(replace, pairs, warmup=self.settings.warmup)
                    await swap.swapped
                    swapped = True
            except BaseException as exc:
                for s in added:
                    with contextlib.suppress(Exception):
                        self.catalog.remove_speakers([s.name])
                await asyncio.to_thread(_unlink_with_cache, final, self.settings.cache_dir)
                if isinstance(exc, Exception) and not isinstance(exc, (JobFailed, Cancelled)):
                    if replace is not None:
                        cause = " ".join(str(exc).split()) or type(exc).__name__
                        raise JobFailed(
                            f"{manifest.name} {manifest.version} cannot be loaded ({cause}); "
                            f"{replace.version} still serves"
                        ) from exc
                    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
                        where = cache_root(self.settings.cache_dir)
                        raise JobFailed(
                            f"{manifest.name} cannot be prepared: {where} is full ({exc.strerror})"
                        ) from exc
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
            if replace is not None and replace.name != entry.name:
                self._served.pop(replace.name, None)
            self._served[entry.name] = entry

            def change(state: LibraryState) -> LibraryState:
                if replace is not None and replace.name != entry.name:
                    state = state.without(replace.name)
                return state.with_entry(entry)

            await asyncio.to_thread(self._write, change)
            if swapped:
                with contextlib.suppress(Exception):  # logged by `_log_failure`
                    await swap.retired  # requests on the old version end, then it is freed
                if replace is not None and replace.file != entry.file:
                    await asyncio.to_thread(self._delete_files, replace)
        job.voices = entry.voices
        job.state = J.READY
        if replace is not None:
            _LOGGER.info(
                "Library: %s updated from %s to %s (%s)",
                entry.name,
                replace.version,
                entry.version,
                ", ".join(entry.voices),
            )
        else:
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
    def _replace(self, entry: LibraryEntry, pairs: list[tuple[str, str]], *, warmup: bool) -> _Swap:
        """`entry`'s voices replaced by `pairs` (`TTS.replace` in a thread): `swapped` ends
        once the catalog serves the new speakers (raising, with the old served untouched,
        when they cannot be built), `retired` once the old ones are freed."""
        loop = asyncio.get_running_loop()
        swapped: asyncio.Future[None] = loop.create_future()
        old_listed = [v for v in entry.voices if v in self.catalog.speakers]
        old_loaded = [v for v in entry.voices if v in self.tts.speakers]

        def swap(new: dict[str, Speaker]) -> None:
            self.catalog.replace_speakers(old_listed, new)
            loop.call_soon_threadsafe(_settle, swapped, None)

        async def run() -> None:
            try:
                await asyncio.to_thread(
                    self.tts.replace,
                    old_loaded,
                    pairs,
                    swap=swap,
                    warmup=warmup,
                    timeout=self.settings.drain_timeout,
                )
            except BaseException as exc:
                if swapped.done():
                    raise  # after the swap: freeing the old version failed (logged)
                _settle(swapped, exc)

        retired = asyncio.ensure_future(run())
        retired.add_done_callback(_log_failure)
        return _Swap(swapped, retired)

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
                new = wanted.get(name)
                if new is not None and new.file != entry.file and new.file and entry.file:
                    await self._follow_update(entry, new)
                elif new is None or new.file != entry.file:
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

    async def _follow_update(self, old: LibraryEntry, new: LibraryEntry) -> None:
        """Another server updated `old` to `new`: the same swap, beside the old; a new
        version that cannot be served here leaves the old one serving."""
        try:
            pairs = _registrations(new, self.folder, self.settings)
            swap = self._replace(old, pairs, warmup=False)
            await swap.swapped
        except Exception as exc:  # noqa: BLE001 - logged, the old version serves on
            _LOGGER.error(
                "Library voice %s %s cannot be served here (%s); %s serves on",
                new.name,
                new.version,
                exc,
                old.version,
            )
            return
        self._served[new.name] = new
        _LOGGER.info("Library: %s updated to %s by another server", new.name, new.version)
        with contextlib.suppress(Exception):  # logged by `_log_failure`
            await swap.retired


class _Swap:
    def __init__(self, swapped: asyncio.Future[None], retired: asyncio.Future[None]) -> None:
        self.swapped = swapped
        self.retired = retired


def _settle(future: asyncio.Future[None], exc: BaseException | None) -> None:
    if future.done():
        return
    if exc is None:
        future.set_result(None)
    else:
        future.set_exception(exc)


def _log_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        _LOGGER.error("Library: freeing a replaced voice failed: %s", task.exception())


def _fail(job: Job, message: str) -> None:
    job.state = J.FAILED
    job.error = message
    _LOGGER.warning("Library job %s (%s) failed: %s", job.id, job.source, job.error)


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text) or "voice"


def _precision(speaker: Speaker) -> str:
    """What a served voice runs ("" for one with no int8/fp32 choice: the embedded voice)."""
    return speaker.precision or ""


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
