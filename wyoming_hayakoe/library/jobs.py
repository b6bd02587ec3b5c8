"""Installs and updates as jobs the page can follow, and the one queue that runs them in
turn: queued → contacting (the hub asked for the model) → downloading (bytes/total) →
checking → converting (an `.aivm`'s checkpoint to ONNX) → loading → ready, or failed (one
sentence and its `Code`) or cancelled.

A job that ended stays in its end state (`Job.move` refuses to leave it), so a cancelled job
never becomes failed or ready. Cancel is final and immediate: a queued job is dropped, a
running one has its task cancelled, which stops the hub's retries at once. A job loading
its voice cannot stop (``job_busy``). Work is bounded: `MAX_QUEUED` jobs waiting, and the
bytes of the uploads they hold (`JobQueue.pending_bytes`). Finished jobs stay listed (failed
ones until dismissed) up to `KEEP_JOBS`."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Protocol

from .errors import Code, LibraryError

__all__ = ["KEEP_JOBS", "MAX_QUEUED", "Job", "JobQueue", "JobState", "Report"]

_LOGGER = logging.getLogger(__name__)

MAX_QUEUED = 8
"""Jobs waiting at most (``queue_full`` beyond)."""
KEEP_JOBS = 50
"""Finished jobs listed at most (the oldest leave first)."""


class JobState(str, Enum):
    QUEUED = "queued"
    CONTACTING = "contacting"
    DOWNLOADING = "downloading"
    CHECKING = "checking"
    CONVERTING = "converting"
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"
    CANCELLED = "cancelled"

    def __str__(self) -> str:
        return str(self.value)


class Report(Protocol):
    """Where an install says how far it is (a `Job`; the CLI's stderr)."""

    def move(self, state: JobState) -> None: ...

    def fetching(self, what: str) -> None:
        """The name of what is downloaded (the hub's name of the model)."""
        ...

    def progress(self, done: int, total: int | None) -> None: ...


FINAL = frozenset({JobState.READY, JobState.FAILED, JobState.CANCELLED})
_BUSY = frozenset({JobState.CONVERTING, JobState.LOADING})

_ids = itertools.count(1)


@dataclass
class Job:
    source: str
    """What was asked for (an AivisHub page or UUID, ``upload:<file name>``, ``hf://...``)."""
    name: str | None = None
    action: str = "install"
    """``install`` or ``update``."""
    upload: Path | None = None
    """The uploaded file it installs (in the partial folder until then)."""
    id: str = field(default_factory=lambda: str(next(_ids)))
    state: JobState = JobState.QUEUED
    done_bytes: int = 0
    total_bytes: int | None = None
    error: str = ""
    error_code: Code | None = None
    voices: tuple[str, ...] = ()
    """The voices it made (ready)."""
    created: float = field(default_factory=time.time)
    ended: asyncio.Event = field(default_factory=asyncio.Event, repr=False, compare=False)
    """Set once its work has stopped (after a cancel too: nothing of it runs any more)."""

    @property
    def finished(self) -> bool:
        return self.state in FINAL

    def move(self, state: JobState) -> None:
        """To `state`, unless the job has ended (an end state is kept)."""
        if not self.finished:
            self.state = state

    def fail(self, code: Code, message: str) -> None:
        if self.finished:
            return
        self.state, self.error, self.error_code = JobState.FAILED, message, code
        _LOGGER.warning("Library job %s (%s) failed: %s", self.id, self.source, message)

    def fetching(self, what: str) -> None:
        return None

    def progress(self, done: int, total: int | None) -> None:
        self.done_bytes, self.total_bytes = done, total

    def as_json(self, int8: dict[str, str] | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "action": self.action,
            "source": self.source,
            "name": self.name,
            "state": self.state.value,
            "bytes": self.done_bytes,
            "total": self.total_bytes,
            "error": self.error or None,
            "error_code": self.error_code.value if self.error_code else None,
            "voices": list(self.voices),
        }
        if int8 is not None:
            data["int8"] = int8
        return data


Runner = Callable[[Job], Coroutine[Any, Any, None]]


class JobQueue:
    """The jobs, run one at a time by `run` (a coroutine per job, its task cancelled on
    cancel). Call on the event loop."""

    def __init__(self, run: Runner, *, max_queued: int = MAX_QUEUED) -> None:
        self._run = run
        self._max_queued = max_queued
        self._jobs: dict[str, Job] = {}
        self._queue: asyncio.Queue[Job] = asyncio.Queue()
        self._current: tuple[Job, asyncio.Task[None]] | None = None
        self._worker: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._worker = asyncio.create_task(self._work(), name="library-jobs")

    async def close(self) -> None:
        for job in self._jobs.values():
            self._drop(job)
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None

    # -- what the page sees --------------------------------------------------------------
    def jobs(self) -> list[Job]:
        return list(self._jobs.values())

    def get(self, job_id: str) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise LibraryError(Code.JOB_NOT_FOUND, f"no job {job_id!r}", "job")
        return job

    def queued(self) -> list[Job]:
        return [j for j in self._jobs.values() if j.state is JobState.QUEUED]

    def pending_bytes(self) -> int:
        """Bytes of the uploads that unfinished jobs hold on disk."""
        total = 0
        for job in self._jobs.values():
            if job.upload is not None and not job.finished:
                with contextlib.suppress(OSError):
                    total += job.upload.stat().st_size
        return total

    # -- changes -------------------------------------------------------------------------
    def admit(self) -> None:
        """`LibraryError` (``queue_full``) when no more jobs may wait."""
        if len(self.queued()) >= self._max_queued:
            raise LibraryError(
                Code.QUEUE_FULL,
                f"{self._max_queued} installs are waiting already: try again when one ends",
                None,
            )

    def submit(self, job: Job) -> Job:
        try:
            self.admit()
        except LibraryError:
            if job.upload is not None:
                job.upload.unlink(missing_ok=True)
            raise
        self._jobs[job.id] = job
        self._prune()
        self._queue.put_nowait(job)
        return job

    def cancel(self, job_id: str) -> Job:
        """Cancel a job not loading its voice: final at once (its task cancelled)."""
        job = self.get(job_id)
        if job.finished:
            raise LibraryError(Code.JOB_ENDED, f"job {job_id} has ended ({job.state})", "job")
        if job.state in _BUSY:
            raise LibraryError(
                Code.JOB_BUSY, f"job {job_id} is loading its voice and cannot stop now", "job"
            )
        self._drop(job)
        return job

    def dismiss(self, job_id: str) -> None:
        """A finished job leaves the listing (``job_busy`` for one still running)."""
        job = self.get(job_id)
        if not job.finished:
            raise LibraryError(
                Code.JOB_BUSY, f"job {job_id} has not ended ({job.state}): cancel it first", "job"
            )
        del self._jobs[job_id]

    def _drop(self, job: Job) -> None:
        job.move(JobState.CANCELLED)
        if self._current is not None and self._current[0] is job:
            self._current[1].cancel()
        elif job.upload is not None:
            job.upload.unlink(missing_ok=True)

    def _prune(self) -> None:
        finished = [j for j in self._jobs.values() if j.finished]
        for old in finished[: max(0, len(finished) - KEEP_JOBS)]:
            del self._jobs[old.id]

    async def _work(self) -> None:
        while True:
            job = await self._queue.get()
            if job.finished:  # cancelled while queued
                job.ended.set()
                continue
            task = asyncio.create_task(self._run(job), name=f"library-job-{job.id}")
            self._current = (job, task)
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:  # the queue closes: the job goes too
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
                raise
            finally:
                self._current = None
                if job.upload is not None:
                    job.upload.unlink(missing_ok=True)
            self._settle(job, task)
            job.ended.set()

    @staticmethod
    def _settle(job: Job, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            job.move(JobState.CANCELLED)
            return
        exc = task.exception()
        if exc is None:
            return
        if isinstance(exc, LibraryError):
            job.fail(exc.code, exc.message)
        else:
            _LOGGER.error("Library job %s failed", job.id, exc_info=exc)
            job.fail(Code.INTERNAL, f"the install failed unexpectedly ({exc})")
