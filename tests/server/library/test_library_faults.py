"""The voice library's faults during a download, through the real program: a full disk, a
job cancelled while the hub is sending, a server stopped (SIGTERM) or killed (SIGKILL) with a
download half done and then started again, and a cache that fills while the voice is
prepared (root only). Each ends with one sentence (or no job at all after a kill) and leaves
nothing behind: no file in the library folder or its `.partial` folder, no entry in the
state file, no folder in the cache, the voice not listed; installing again works. The
stand-in hub holds its answer half-way until the test lets it go on (`HeldHub`), so
"mid-download" is a fact, not a timing."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from engine.aivm.manifest import read_metadata
from engine.aivm.store import cache_entries
from tests.helpers.aivishub import HubModel, StandInHub
from tests.helpers.program import Program
from tests.server.library.test_library_server import Page, _library_files, _server_args
from wyoming_hayakoe.client import WyomingClient
from wyoming_hayakoe.library.state import PARTIAL_DIR, STATE_FILE, read_state

pytestmark = pytest.mark.timeout(300)


@dataclass
class HeldHub(StandInHub):
    """The stand-in AivisHub whose file answers stop at `stop_at` (a fraction of the file)
    until `go` is set; `held` is set when one has stopped there. `holding` off: whole files."""

    stop_at: float = 0.5
    holding: bool = True
    held: asyncio.Event = field(default_factory=asyncio.Event)
    go: asyncio.Event = field(default_factory=asyncio.Event)

    async def _file(self, request: web.Request) -> web.StreamResponse:
        if not self.holding:
            return await super()._file(request)
        data = self.models[request.match_info["uuid"]].file.read_bytes()
        response = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        response.content_length = len(data)
        await response.prepare(request)
        half = int(len(data) * self.stop_at)
        with contextlib.suppress(ConnectionError):  # the server went away (the point)
            await response.write(data[:half])
            self.held.set()
            await self.go.wait()
            await response.write(data[half:])
            await response.write_eof()
        return response

    async def stop(self) -> None:
        self.go.set()
        await super().stop()


@contextlib.asynccontextmanager
async def _hub(*files: Path, stop_at: float = 0.5) -> AsyncIterator[tuple[HeldHub, list[Any]]]:
    hub = await HeldHub(stop_at=stop_at).start()
    try:
        yield hub, [hub.add(HubModel(f)) for f in files]
    finally:
        await hub.stop()


async def _downloading(page: Page, job_id: str, timeout: float = 60) -> dict:
    """The job once the server holds part of the file (bounded polling of the page's API)."""
    end = time.monotonic() + timeout
    while True:
        _, job = await page.get(f"/api/library/jobs/{job_id}")
        if job["state"] == "downloading" and job["bytes"] > 0:
            return job
        assert job["state"] in ("queued", "contacting", "downloading"), job
        assert time.monotonic() < end, f"job {job_id} never downloaded: {job}"
        await asyncio.sleep(0.05)


def _partial_files(library: Path) -> list[Path]:
    partial = library / PARTIAL_DIR
    return sorted(partial.iterdir()) if partial.is_dir() else []


def _assert_nothing_left(library: Path, cache: Path, model_file: Path) -> None:
    assert _partial_files(library) == []
    assert not [f for f in _library_files(library) if f.endswith((".aivmx", ".aivm"))]
    assert read_state(library).entries == ()
    assert cache_entries(read_metadata(model_file), cache) == []


async def _served(port: int) -> set[str]:
    info = await WyomingClient(f"tcp://127.0.0.1:{port}", timeout=60).describe()
    return {v.name for p in info.tts for v in p.voices}


# -- a full disk ---------------------------------------------------------------------------
@contextlib.contextmanager
def _small_disk(folder: Path, size: int) -> Iterator[str]:
    """`folder` on a tmpfs of `size` bytes (root): a real ENOSPC. Without root, yields
    "rlimit": the test limits the server's file size instead (RLIMIT_FSIZE: EFBIG), the
    same write failing in the same place."""
    folder.mkdir(parents=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        yield "rlimit"
        return
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:  # a container without CAP_SYS_ADMIN
        yield "rlimit"
        return
    try:
        yield "tmpfs"
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


async def test_full_disk_and_cancel_leave_nothing(
    aivm_files, layout_root: Path, tmp_path: Path
) -> None:
    """One server whose library folder holds 60% of a voice file: a download cancelled while
    the hub holds it at 30% ends cancelled; a whole download fills the disk and fails naming
    it; nothing is left of either and the server still speaks."""
    room = int(aivm_files.one.stat().st_size * 0.6)
    big = tmp_path / "big.aivmx"  # a second model, the same bytes under another uuid
    shutil.copy(aivm_files.one, big)
    library, cache = tmp_path / "library", tmp_path / "cache"
    async with _hub(aivm_files.one, stop_at=0.3) as (hub, (held,)):
        whole = hub.add(HubModel(big, uuid="11111111-2222-3333-4444-999999999999"))
        with _small_disk(library, room) as how:
            port, http = _free_ports()
            args = _server_args(port, http, hub.api, library, cache, layout_root)
            args += ["--aivishub-timeout", "10"]  # a stalled hub is not what ends the cancel
            async with Program(*args) as prog:
                await prog.wait_ready(timeout=120)
                if how == "rlimit":
                    import psutil

                    psutil.Process(prog.proc.pid).rlimit(psutil.RLIMIT_FSIZE, (room, room))
                page = Page(http)

                # cancel while the hub holds the file: cancelled at once, nothing kept
                status, answer = await page.post("/api/library/install", {"source": held.uuid})
                assert status == 202, answer
                await _downloading(page, answer["job"])
                assert _partial_files(library)  # the half it has is on disk
                status, cancelled = await page.post(f"/api/library/jobs/{answer['job']}/cancel", {})
                assert status == 200, cancelled
                job = await page.finished(202, answer, timeout=10)
                assert job["state"] == "cancelled" and not job["error"], job
                _assert_nothing_left(library, cache, held.file)

                # the disk fills: one sentence naming the library, nothing kept
                hub.holding = False
                job = await page.finished(
                    *await page.post("/api/library/install", {"source": whole.uuid})
                )
                assert job["state"] == "failed", job
                error = job["error"]
                assert str(library) in error and "cannot hold it" in error, error
                if how == "tmpfs":
                    assert "disk is full" in error, error
                assert "\n" not in error and error.count(". ") == 0, error
                _assert_nothing_left(library, cache, whole.file)
                assert {n.split(":")[0] for n in await _served(port)} == {"openjtalk-mei"}
                spoken = await WyomingClient(f"tcp://127.0.0.1:{port}", timeout=60).speak(
                    "はい。", voice="openjtalk-mei"
                )
                assert len(spoken.pcm) > 0
                await prog.stop()
            _assert_nothing_left(library, cache, whole.file)


# -- stopped and killed mid-download -------------------------------------------------------
async def test_restart_and_kill_mid_download_leave_nothing(
    aivm_files, layout_root: Path, tmp_path: Path
) -> None:
    """SIGTERM with a download half done: the stopping server removes it. SIGKILL with one
    half done: the half file stays until the next start removes it. Either way no state entry,
    no cache folder, the voice not listed, and installing it again works."""
    library, cache = tmp_path / "library", tmp_path / "cache"
    async with _hub(aivm_files.one) as (hub, (model,)):
        port, http = _free_ports()
        args = _server_args(port, http, hub.api, library, cache, layout_root)
        page = Page(http)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            hub.held.clear()
            async with Program(*args) as prog:
                await prog.wait_ready(timeout=120)
                status, answer = await page.post(
                    "/api/library/install",
                    {"source": "https://hub.aivis-project.com/aivm-models/" + model.uuid},
                )
                assert status == 202, answer
                await hub.held.wait()
                await _downloading(page, answer["job"])
                assert _partial_files(library)
                code = await prog.stop(sig)
            if sig == signal.SIGTERM:
                assert code == 0, prog.log
                _assert_nothing_left(library, cache, model.file)  # cleaned on the way out
            else:
                assert code == -signal.SIGKILL
                assert _partial_files(library)  # a killed server cleans nothing
                assert read_state(library).entries == ()

        # started again: the half file is gone, nothing listed, and the install works
        hub.holding = False
        async with Program(*args) as prog:
            await prog.wait_ready(timeout=120)
            _assert_nothing_left(library, cache, model.file)
            assert "tsukuyomi-test" not in await _served(port)
            _, listing = await page.get("/api/library")
            assert listing["installed"] == [] and listing["jobs"] == []
            job = await page.finished(
                *await page.post("/api/library/install", {"source": model.uuid})
            )
            assert job["state"] == "ready" and job["voices"] == ["tsukuyomi-test"], job
            assert "tsukuyomi-test" in await _served(port)
            assert [e.name for e in read_state(library).entries] == ["tsukuyomi-test"]
            assert _partial_files(library) == []
            await prog.stop()


def _free_ports() -> tuple[int, int]:
    from tests.helpers.net import free_port

    return free_port(), free_port()


# -- a full cache while the voice is prepared ------------------------------------------------
async def test_full_cache_during_the_conversion_leaves_nothing(
    aivm_files, layout_root: Path, tmp_path: Path
) -> None:
    """The download fits but the cache, where the `.aivmx` is prepared for the engine, fills
    on the way (root: the cache on a tmpfs shrunk once the server is ready): the job fails
    with one sentence, and neither the library folder nor the cache keeps any of it."""
    cache, library = tmp_path / "cache", tmp_path / "library"
    with _small_disk(cache, 512 * 2**20) as how:
        if how != "tmpfs":
            pytest.skip("needs root and tmpfs (only the cache may fill)")
        async with _hub(aivm_files.one) as (hub, (model,)):
            hub.holding = False
            port, http = _free_ports()
            args = _server_args(port, http, hub.api, library, cache, layout_root)
            async with Program(*args) as prog:
                await prog.wait_ready(timeout=120)
                used = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file())
                room = used + aivm_files.one.stat().st_size // 2 + 2**20
                subprocess.run(["mount", "-o", f"remount,size={room}", str(cache)], check=True)
                page = Page(http)
                job = await page.finished(
                    *await page.post("/api/library/install", {"source": model.uuid})
                )
                assert job["state"] == "failed", job
                error = job["error"]
                assert f"{cache} is full (No space left" in error, error
                assert "\n" not in error, error
                _assert_nothing_left(library, cache, model.file)
                store = cache / "aivm"  # the half-made voice folder is gone too
                assert not store.is_dir() or list(store.rglob("*")) == []
                assert {n.split(":")[0] for n in await _served(port)} == {"openjtalk-mei"}
                await prog.stop()


# -- killed while the voice loads ------------------------------------------------------------
def _loading_file(library: Path) -> Path | None:
    found = [p for p in library.glob("*.aivmx") if p.is_file()]
    return found[0] if found else None


async def test_kill_while_the_voice_loads_leaves_nothing_unlisted(
    aivm_files, layout_root: Path, tmp_path: Path
) -> None:
    """SIGKILL once the downloaded file is in the library folder and the voice is loading
    (the server frozen by SIGSTOP the moment the file appears, before the state lists it):
    after a restart nothing is in the folder that the state does not list, no temporary file
    is left in the folder or the cache, every entry listed is served, and installing the
    voice again works."""
    library, cache = tmp_path / "library", tmp_path / "cache"
    async with _hub(aivm_files.one) as (hub, (model,)):
        hub.holding = False
        port, http = _free_ports()
        args = _server_args(port, http, hub.api, library, cache, layout_root)
        page = Page(http)
        async with Program(*args) as prog:
            await prog.wait_ready(timeout=120)
            status, answer = await page.post("/api/library/install", {"source": model.uuid})
            assert status == 202, answer
            end = time.monotonic() + 120
            while (file := _loading_file(library)) is None:  # the moment it is moved in
                assert prog.proc.returncode is None and time.monotonic() < end, prog.log
                await asyncio.sleep(0.002)
            prog.proc.send_signal(signal.SIGSTOP)
            assert read_state(library).entries == (), "the voice was listed already"
            assert await prog.stop(signal.SIGKILL) == -signal.SIGKILL
        assert file.exists()  # a killed server cleans nothing

        async with Program(*args) as prog:
            await prog.wait_ready(timeout=120)
            listed = {e.file for e in read_state(library).entries}
            left = {p.name for p in library.iterdir() if p.is_file()}
            assert left - listed <= {STATE_FILE, ".lock"}, left
            assert _partial_files(library) == []
            assert not [p for p in library.rglob(".*") if p.name.endswith((".tmp", ".part"))]
            store = cache / "aivm"
            temps = [p for p in store.iterdir() if p.name.startswith(".")] if store.is_dir() else []
            assert temps == [], temps
            assert cache_entries(read_metadata(model.file), cache) == []
            served = await _served(port)
            assert all(v in served for e in read_state(library).entries for v in e.voices)
            assert "tsukuyomi-test" not in served
            job = await page.finished(
                *await page.post("/api/library/install", {"source": model.uuid})
            )
            assert job["state"] == "ready" and job["voices"] == ["tsukuyomi-test"], job
            assert "tsukuyomi-test" in await _served(port)
            assert [e.name for e in read_state(library).entries] == ["tsukuyomi-test"]
            assert await prog.stop() == 0, prog.log
