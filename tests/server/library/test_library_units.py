"""The library's modules one by one, in seconds: names (`naming`), jobs (`jobs`), the
folder's files (`files`), the hub client (`hub`: bounded downloads, redirects) against the
stand-in AivisHub on loopback, update checks (`updates`). Each test named after the defect
of issue 46 it pins down failed on the code before it."""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
import time
from pathlib import Path

import pytest
from aiohttp import web

from tests.helpers.aivishub import HubModel, StandInHub
from wyoming_hayakoe.library.errors import Code, LibraryError
from wyoming_hayakoe.library.files import claimed, clean_folder, remove_with_cache
from wyoming_hayakoe.library.hub import download, fetch_model
from wyoming_hayakoe.library.jobs import MAX_QUEUED, Job, JobQueue, JobState
from wyoming_hayakoe.library.naming import MAX_NAME, check_name, library_file_name
from wyoming_hayakoe.library.options import LibrarySettings
from wyoming_hayakoe.library.sources import parse_request
from wyoming_hayakoe.library.state import LibraryEntry, LibraryState, write_state
from wyoming_hayakoe.library.updates import UpdateChecker

pytestmark = pytest.mark.timeout(120)

UUID = "0b7e0f4c-1b2a-4c3d-8e9f-0a1b2c3d4e5f"


# -- naming (defects 1, 6, 8) ------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", ["a\x00b", "a\nb", "a/b", "a\\b", "x:y", "", "   ", "n" * 300, 7, None]
)
def test_defect8_names_are_refused_before_any_work(bad: object) -> None:
    with pytest.raises(LibraryError) as err:
        check_name(bad)
    assert err.value.code is Code.NAME_INVALID and err.value.field == "name"
    assert "\n" not in err.value.message and "\x00" not in err.value.message


def test_defect8_a_request_with_a_bad_name_is_refused_at_parse() -> None:
    with pytest.raises(LibraryError) as err:
        parse_request(UUID, "x" * (MAX_NAME + 1))
    assert err.value.code is Code.NAME_INVALID
    assert check_name("  私の声 ") == "私の声"


def test_defect1_two_names_never_share_a_file() -> None:
    names = ["my voice", "my_voice", "a b", "a_b", "a.b", "A B"]
    files = {library_file_name(UUID, "1.0.0", n, ".aivmx") for n in names}
    assert len(files) == len(names) - 1  # "a b" and "A B" are one name (case-insensitive)
    assert library_file_name(UUID, "1.0.0", "x", ".aivmx") != library_file_name(
        UUID, "1.0.1", "x", ".aivmx"
    )


def test_defect6_an_official_voice_keeps_its_name() -> None:
    with pytest.raises(LibraryError) as err:
        parse_request("jvnv-F1-jp", "myvoice")
    assert err.value.code is Code.NAME_INVALID and err.value.field == "name"
    assert parse_request("jvnv-f1-jp").name == "jvnv-F1-jp"


# -- jobs (defects 10, 14) ---------------------------------------------------------------


async def test_defect14_cancel_is_final_and_stops_the_work_at_once() -> None:
    started = asyncio.Event()

    async def run(job: Job) -> None:
        job.move(JobState.CHECKING)
        started.set()
        try:
            await asyncio.sleep(60)
        finally:  # a retry loop that would go on and fail
            raise LibraryError(Code.HUB_ERROR, "the hub failed after the cancel")

    queue = JobQueue(run)
    queue.start()
    try:
        job = queue.submit(Job(source="x"))
        await asyncio.wait_for(started.wait(), 10)
        t0 = time.monotonic()
        assert queue.cancel(job.id).state is JobState.CANCELLED
        await asyncio.wait_for(job.ended.wait(), 1.0)
        assert time.monotonic() - t0 < 1.0
        assert job.state is JobState.CANCELLED and job.error == ""
        with pytest.raises(LibraryError) as err:
            queue.cancel(job.id)
        assert err.value.code is Code.JOB_ENDED
    finally:
        await queue.close()


async def test_defect10_queued_jobs_are_bounded_and_failed_ones_stay_until_dismissed() -> None:
    release, holding = asyncio.Event(), asyncio.Event()

    async def run(job: Job) -> None:
        if job.source == "fail":
            raise LibraryError(Code.FILE_INVALID, "bad file")
        job.move(JobState.CONTACTING)
        holding.set()
        await release.wait()

    queue = JobQueue(run)
    queue.start()
    try:
        failing = queue.submit(Job(source="fail"))
        await asyncio.wait_for(failing.ended.wait(), 10)
        assert failing.state is JobState.FAILED
        assert failing.as_json()["error_code"] == "file_invalid"
        holder = queue.submit(Job(source="hold"))
        await asyncio.wait_for(holding.wait(), 10)
        for _ in range(MAX_QUEUED):
            queue.submit(Job(source="wait"))
        with pytest.raises(LibraryError) as err:
            queue.submit(Job(source="one too many"))
        assert err.value.code is Code.QUEUE_FULL
        with pytest.raises(LibraryError) as err:
            queue.dismiss(holder.id)
        assert err.value.code is Code.JOB_BUSY
        assert failing in queue.jobs()
        queue.dismiss(failing.id)
        assert failing not in queue.jobs()
        release.set()
    finally:
        await queue.close()


# -- files (defects 1, 3) ----------------------------------------------------------------


def test_defect3_start_removes_what_the_state_does_not_list(aivm_files, tmp_path: Path) -> None:
    folder, cache = tmp_path / "library", tmp_path / "cache"
    (folder / ".partial").mkdir(parents=True)
    listed = folder / "listed.aivmx"
    shutil.copy(aivm_files.one, listed)
    orphan = folder / "orphan.aivmx"
    shutil.copy(aivm_files.multi, orphan)
    busy = folder / "busy.aivmx"
    shutil.copy(aivm_files.multi, busy)
    (folder / ".partial" / "123-abc.aivmx").write_bytes(b"x" * 100)
    (folder / ".library-x.tmp").write_text("{")
    entry = LibraryEntry("one", ("one",), "upload:x", "upload", file=listed.name)
    write_state(folder, LibraryState((entry,)))
    with claimed(busy):  # another process is installing it
        removed = clean_folder(folder, cache, LibraryState((entry,)))
    assert sorted(removed) == [".library-x.tmp", ".partial/123-abc.aivmx", "orphan.aivmx"]
    assert listed.exists() and busy.exists() and not orphan.exists()
    fd = os.open(busy, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released with the block
    finally:
        os.close(fd)


def test_defect1_removing_one_install_keeps_the_other_install_of_its_model(
    aivm_files, tmp_path: Path
) -> None:
    from engine.aivm.manifest import read_metadata
    from engine.aivm.store import cache_entries, folder_for

    cache, folder = tmp_path / "cache", tmp_path / "library"
    folder.mkdir()
    m = read_metadata(aivm_files.one).manifest
    files = [folder / library_file_name(m.uuid, m.version, n, ".aivmx") for n in ("a b", "a_b")]
    for f in files:
        shutil.copy(aivm_files.one, f)
        folder_for(read_metadata(f), cache).mkdir(parents=True)
    kept = cache_entries(read_metadata(files[1]), cache)
    remove_with_cache(files[0], cache)
    assert not files[0].exists() and files[1].exists()
    assert kept and all(k.exists() for k in kept)


def test_the_engine_forgets_a_files_cache_and_keeps_the_file(aivm_files, tmp_path: Path) -> None:
    """`engine.aivm.store.forget_cache` (the library's one way to drop a voice's cache):
    the voice folder and a graph derived from it go, the file and another file's cache
    stay; a file that cannot be read forgets nothing."""
    from engine.aivm.manifest import read_metadata
    from engine.aivm.store import folder_for, forget_cache
    from engine.sources.cache import DERIVED_SUBDIR, cache_root, path_digest

    cache = tmp_path / "cache"
    one, other = tmp_path / "one.aivmx", tmp_path / "other.aivmx"
    shutil.copy(aivm_files.one, one)
    shutil.copy(aivm_files.one, other)
    own, kept = folder_for(read_metadata(one), cache), folder_for(read_metadata(other), cache)
    for folder in (own, kept):
        folder.mkdir(parents=True)
        (folder / "synthesizer.onnx").write_bytes(b"graph")
    derived = cache_root(cache) / DERIVED_SUBDIR / f"split-{path_digest(own / 'synthesizer.onnx')}"
    derived.mkdir(parents=True)
    half_made = own.parent / f".{own.name}.k1ll3d"  # voice_folder's temporary, left by a kill
    half_made.mkdir()
    assert sorted(forget_cache(one, cache)) == sorted([own, derived, half_made])
    assert not own.exists() and not derived.exists() and not half_made.exists()
    assert one.exists() and kept.exists()
    broken = tmp_path / "broken.aivmx"
    broken.write_bytes(b"not a voice")
    assert forget_cache(broken, cache) == []


def test_a_full_disk_is_classified_by_the_engine_also_as_a_cause(aivm_files) -> None:
    """A failure whose cause is ENOSPC or EFBIG (the engine's `is_disk_full`) is the
    library's ``disk_full``, not a failed load."""
    import errno

    from engine.aivm.manifest import read_metadata
    from wyoming_hayakoe.library.install import _load_failure

    m = read_metadata(aivm_files.one).manifest
    for code in (errno.ENOSPC, errno.EFBIG):
        try:
            try:
                raise OSError(code, os.strerror(code))
            except OSError as inner:
                raise RuntimeError("the session could not be saved") from inner
        except RuntimeError as exc:
            failure = _load_failure(exc, m, None, _NoHost())
        assert isinstance(failure, LibraryError) and failure.code is Code.DISK_FULL, failure
    plain = _load_failure(RuntimeError("bad graph"), m, None, _NoHost())
    assert isinstance(plain, LibraryError) and plain.code is Code.LOAD_FAILED


class _NoHost:
    cache_dir = None


# -- the hub client (defect 9) -----------------------------------------------------------


class RedirectingHub(StandInHub):
    target: str = ""

    async def _download(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request.path)
        raise web.HTTPFound(self.target)


async def _model(hub: StandInHub, uuid: str):
    return await fetch_model(hub.api, uuid, connect=5, read=5)


async def test_defect9_a_download_stops_at_the_declared_size(aivm_files, tmp_path: Path) -> None:
    hub = await StandInHub().start()
    try:
        declared = hub.add(HubModel(aivm_files.one, file_size=70_000))
        undeclared = hub.add(HubModel(aivm_files.multi))
        undeclared.file_size = None
        seen: list[int] = []
        dest = tmp_path / "f.aivmx"
        for model, limit in ((declared, 70_000), (undeclared, 50_000)):
            seen.clear()
            with pytest.raises(LibraryError) as err:
                await download(
                    hub.api, await _model(hub, model.uuid), dest, connect=5, read=5,
                    progress=lambda done, total: seen.append(done), max_bytes=limit,
                )  # fmt: skip
            assert err.value.code is Code.TOO_LARGE, err.value
            assert max(seen, default=0) <= limit and not dest.exists()
    finally:
        await hub.stop()


async def test_defect9_a_redirect_off_the_hub_is_refused(aivm_files, tmp_path: Path) -> None:
    hub = RedirectingHub()
    await hub.start()
    other = await StandInHub().start()
    try:
        model = hub.add(HubModel(aivm_files.one))
        other.add(model)
        hub.target = f"http://localhost:{other.port}/files/{model.uuid}.aivmx"
        with pytest.raises(LibraryError) as err:
            await download(
                hub.api, await _model(hub, model.uuid), tmp_path / "f.aivmx", connect=5,
                read=5, progress=lambda d, t: None, max_bytes=10**9,
            )  # fmt: skip
        assert "not AivisHub's" in err.value.message
        assert other.requests == []
    finally:
        await hub.stop()
        await other.stop()


# -- update checks (defect 10) -----------------------------------------------------------


async def test_defect10_page_update_checks_are_throttled(aivm_files) -> None:
    hub = await StandInHub().start()
    try:
        model = hub.add(HubModel(aivm_files.one))
        entry = LibraryEntry("one", ("one",), model.uuid, "aivishub", uuid=model.uuid, version="0")
        options = LibrarySettings(aivishub_api=hub.api)
        checker = UpdateChecker(options, lambda: [entry])
        for _ in range(5):
            await checker.check(wait=10, page=True)
        assert len(hub.requests) == 1
        assert checker.latest_for(entry) == model.version
    finally:
        await hub.stop()


# -- the install path's first steps (defect 15) --------------------------------------------


class _Host:
    """The least an install needs of where it lands (`install.Host`): a folder and the
    entries there; loading is never reached in these tests."""

    def __init__(self, folder: Path, entries: tuple[LibraryEntry, ...] = ()) -> None:
        self.folder = folder
        self.cache_dir = folder.parent / "cache"
        self._entries = LibraryState(entries)

    def entries(self) -> LibraryState:
        return self._entries

    def configured(self) -> list[str]:
        return []

    def changing(self):  # pragma: no cover - not reached
        raise AssertionError("an install that should stop early went on to load")

    async def load(self, pairs, replace, report) -> None:  # pragma: no cover
        raise AssertionError("not reached")

    async def unload(self, entry, voices) -> None:  # pragma: no cover
        raise AssertionError("not reached")

    def committed(self, entry) -> None:  # pragma: no cover
        raise AssertionError("not reached")


async def test_defect15_a_duplicate_is_refused_before_the_hub_and_contacting_is_shown(
    aivm_files, tmp_path: Path
) -> None:
    """A model installed already is refused before a request reaches the hub (nothing
    downloaded); a job waiting on the hub says "contacting", not "queued"."""
    from wyoming_hayakoe.library.install import Plan, install

    hub = await StandInHub().start()
    try:
        model = hub.add(HubModel(aivm_files.one, hang=True))
        options = LibrarySettings(aivishub_api=hub.api, connect_timeout=5, read_timeout=5)
        entry = LibraryEntry("one", ("one",), model.uuid, "aivishub", uuid=model.uuid, version="1")
        (tmp_path / "library").mkdir()
        host = _Host(tmp_path / "library", (entry,))
        plan = Plan("aivishub", model.uuid, None, model.uuid)
        job = Job(source=model.uuid)
        with pytest.raises(LibraryError) as err:
            await install(plan, host, job, options)
        assert err.value.code is Code.ALREADY_INSTALLED and err.value.field == "source"
        assert hub.requests == []  # refused before the hub was asked anything

        job = Job(source=model.uuid)
        task = asyncio.create_task(install(plan, _Host(host.folder), job, options))
        end = time.monotonic() + 30
        while job.state is not JobState.CONTACTING and not task.done():
            assert time.monotonic() < end, job.state
            await asyncio.sleep(0.01)
        assert job.state is JobState.CONTACTING and job.as_json()["state"] == "contacting"
        assert hub.requests and "download" not in hub.requests[-1]
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        await hub.stop()


# -- an install's loading at a lower priority ------------------------------------------------


def test_an_install_loads_at_low_priority_and_leaves_no_thread_there() -> None:
    """Inside `lowered()` the loading thread and the threads it starts (ONNX Runtime's, for
    the new voice's sessions) run at `INSTALL_NICENESS`; afterwards every one of them is back
    at the process's priority, so the installed voice does not serve at a low one."""
    import threading

    from wyoming_hayakoe.library.priority import INSTALL_NICENESS, can_raise_back, lowered

    if not can_raise_back():
        pytest.skip("this process may not raise a thread's priority back (no root)")
    base = os.getpriority(os.PRIO_PROCESS, os.getpid())
    seen: dict[str, int] = {}
    started, stop = threading.Event(), threading.Event()

    def session_thread() -> None:  # started by the load, lives on (a session's pool)
        seen["child"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        started.set()
        stop.wait(30)
        seen["child_after"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    def load() -> None:
        with lowered() as done:
            assert done
            seen["loader"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
            child = threading.Thread(target=session_thread, daemon=True)
            child.start()
            started.wait(30)
        seen["loader_after"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        stop.set()
        child.join(30)

    loader = threading.Thread(target=load)
    loader.start()
    loader.join(60)
    assert seen["loader"] == seen["child"] == max(base, INSTALL_NICENESS)
    assert seen["loader_after"] == seen["child_after"] == base
