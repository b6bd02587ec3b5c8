"""`Library`: the voices installed while the server runs, beside the configured ones.

It puts the rooms together: the job queue (`jobs`), the one install path (`install`, with
the fetchers of `fetch`), what is served (`serving`, over the server's `TTS`), replicas
following the state file (`sync`) and newer versions on AivisHub (`updates`). Every
method is called on the server's event loop; the slow parts run in threads. Refusals raise
`errors.LibraryError` (a code, a sentence, a field; no HTTP status)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.sources import is_disk_full

from .bert import BertCheck
from .errors import Code, LibraryError
from .fetch import partial_file
from .install import Plan, install
from .jobs import Job, JobQueue, JobState
from .naming import check_name
from .semver import is_newer
from .serving import Serving, VoiceUse
from .sources import OFFICIAL_VOICES, parse_request
from .sync import follow, watch
from .updates import CHECK_WAIT_S, UpdateChecker
from .uploads import Reservation, UploadRoom

if TYPE_CHECKING:
    from engine import TTS

    from .options import LibraryConfig

__all__ = ["CHECK_WAIT_S", "Library"]

_LOGGER = logging.getLogger(__name__)

_UPLOAD_SUFFIXES = (".aivmx", ".aivm")


class Library:
    def __init__(self, config: LibraryConfig, tts: TTS, catalog: VoiceUse) -> None:
        self.config = config
        self.options = config.options
        self.folder = config.folder
        self.serving = Serving(config, tts, catalog)
        self.updates = UpdateChecker(self.options, lambda: list(self.serving.entries().entries))
        self.queue = JobQueue(self._run)
        self.uploads = UploadRoom(self.options.max_upload, self.queue.pending_bytes)
        """The one room all uploads share (`--library-max-upload`)."""
        self.bert = BertCheck(tts)
        """Refuses installs at once when the first neural voice could not load (offline)."""
        self._plans: dict[str, tuple[Plan, tuple[Path, str] | None]] = {}
        self._tasks: list[asyncio.Task[None]] = []

    # -- life ----------------------------------------------------------------------------
    def start(self) -> None:
        self.queue.start()
        self._tasks = [asyncio.create_task(watch(self.serving), name="library-watch")]
        if self.options.update_check_hours > 0:
            self._tasks.append(asyncio.create_task(self.updates.often(), name="library-updates"))

    async def close(self) -> None:
        await self.queue.close()
        await self.updates.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []

    # -- what the page shows -------------------------------------------------------------
    def _int8(self, voices: tuple[str, ...]) -> dict[str, str]:
        upgrades = self.serving.tts.int8_upgrades
        speakers = self.serving.tts.speakers
        out: dict[str, str] = {}
        for name in voices:
            if name in upgrades:
                out[name] = upgrades[name].state
            else:
                speaker = speakers.get(name)
                out[name] = (speaker.precision or "") if speaker is not None else ""
        return out

    def listing(self) -> dict[str, Any]:
        speakers = self.serving.tts.speakers
        configured = [
            {"name": n, "configured": True, "precision": speakers[n].precision or ""}
            for n in self.serving.configured()
            if n in speakers
        ]
        installed = []
        for entry in self.serving.entries().entries:
            data = entry.as_json()
            data["configured"] = False
            data["served"] = entry.name in self.serving.mine
            data["problem"] = self.serving.problems.get(entry.name)
            data["int8"] = self._int8(entry.voices) if data["served"] else {}
            latest = self.updates.latest_for(entry)
            data["latest_version"] = latest
            data["update_available"] = latest is not None and is_newer(latest, entry.version)
            installed.append(data)
        return {
            "configured": configured,
            "installed": installed,
            "jobs": [j.as_json() for j in self.queue.jobs()],
            "official": list(OFFICIAL_VOICES),
            "max_upload": self.options.max_upload,
        }

    def job(self, job_id: str) -> dict[str, Any]:
        job = self.queue.get(job_id)
        return job.as_json(self._int8(job.voices) if job.state is JobState.READY else None)

    def cancel(self, job_id: str) -> dict[str, Any]:
        return self.queue.cancel(job_id).as_json()

    def dismiss(self, job_id: str) -> None:
        self.queue.dismiss(job_id)

    async def check_updates(self, wait: float | None = None, *, page: bool = False) -> None:
        await self.updates.check(wait, page=page)

    async def sync(self) -> None:
        """Serve what the state file lists now (another replica installed or removed)."""
        await follow(self.serving)

    # -- requests ------------------------------------------------------------------------
    def install(self, source: object, name: object = None) -> Job:
        """An install from AivisHub or Hugging Face (checked here, before any work)."""
        self.bert.check()
        if not isinstance(source, str):
            raise LibraryError(
                Code.SOURCE_INVALID, "source: give an AivisHub page, a UUID or a voice name",
                "source",
            )  # fmt: skip
        requested = parse_request(source, check_name(name) if name is not None else None)
        plan = Plan(
            requested.kind, requested.source, requested.name, requested.uuid,
            requested.load_source,
        )  # fmt: skip
        return self._submit(Job(source=requested.source, name=requested.name), plan, None)

    def upload_room(self, filename: str) -> Reservation:
        """A reservation for the next upload in the room ``--library-max-upload`` gives all
        uploads together (`uploads.UploadRoom`: the uploads arriving, counted as their bytes
        arrive, and those queued jobs hold); the caller takes each chunk from it before
        keeping it and releases it when the upload ends in any way. ``queue_full`` when no
        room or no place in the queue is left; ``bert_missing`` before any byte of the file
        is read when no neural voice could load."""
        self.bert.check()
        self.queue.admit()
        return self.uploads.reserve(filename)

    def upload_path(self, filename: str) -> Path:
        """Where an upload is streamed to (removed when it fails, and at the next start)."""
        if not filename.lower().endswith(_UPLOAD_SUFFIXES):
            raise LibraryError(
                Code.FILE_INVALID, f"{filename}: not an .aivmx or .aivm file", "file"
            )
        return partial_file(self.folder, filename)

    def install_upload(self, path: Path, filename: str, name: str | None = None) -> Job:
        """An uploaded file already streamed to `path` (`upload_path`); removed on refusal."""
        try:
            checked = check_name(name) if name is not None else None
            plan = Plan("upload", f"upload:{filename}", checked)
            job = Job(source=plan.source, name=checked, upload=path)
            return self._submit(job, plan, (path, filename))
        except BaseException:
            path.unlink(missing_ok=True)
            raise

    def update(self, name: object) -> Job:
        entry = self.serving.find(name)
        if entry.kind != "aivishub":
            raise LibraryError(
                Code.NOT_SUPPORTED,
                f"{entry.name} did not come from AivisHub: no update to look for",
                "name",
            )
        plan = Plan("aivishub", entry.source, entry.name, entry.uuid, replace=entry)
        job = Job(source=entry.source, name=entry.name, action="update")
        return self._submit(job, plan, None)

    async def remove(self, name: object) -> list[str]:
        return await self.serving.remove(name)

    def _submit(self, job: Job, plan: Plan, upload: tuple[Path, str] | None) -> Job:
        self.queue.submit(job)
        self._plans[job.id] = (plan, upload)
        return job

    # -- the worker ----------------------------------------------------------------------
    async def _run(self, job: Job) -> None:
        plan, upload = self._plans.pop(job.id)
        try:
            entry = await install(plan, self.serving, job, self.options, upload)
        except LibraryError as exc:
            message = exc.message
            if upload is not None:  # the file as the user knows it, not where it waited
                message = message.replace(str(upload[0]), upload[1])
            if exc.code is Code.LOAD_FAILED:  # was it the shared BERT that could not be had?
                why = await asyncio.to_thread(self.bert.unavailable, message)
                if why is not None:
                    raise LibraryError(Code.BERT_MISSING, why) from exc
            if message != exc.message:
                raise LibraryError(exc.code, message, exc.field) from None
            raise
        except OSError as exc:
            raise _os_failure(exc, self.folder) from exc
        if entry is None:  # an update that found no newer version
            current = plan.replace
            job.voices = current.voices if current is not None else ()
            job.move(JobState.READY)
            return
        if plan.replace is not None:
            await self.serving.retired(plan.replace)
            _LOGGER.info(
                "Library: %s updated from %s to %s (%s)",
                entry.name, plan.replace.version, entry.version, ", ".join(entry.voices),
            )  # fmt: skip
        else:
            _LOGGER.info("Library: %s installed (%s)", entry.name, ", ".join(entry.voices))
        if entry.version and entry.uuid:
            self.updates.latest.setdefault(entry.uuid, entry.version)
        job.voices = entry.voices
        job.move(JobState.READY)


def _os_failure(exc: OSError, folder: Path) -> LibraryError:
    if is_disk_full(exc):
        return LibraryError(Code.DISK_FULL, f"the disk holding {folder} is full")
    return LibraryError(Code.INTERNAL, f"{exc.filename or folder}: {exc.strerror or exc}")
