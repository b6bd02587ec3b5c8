"""The voice library through the real program and its page's HTTP API: a stand-in AivisHub
on loopback serves `.aivmx` files made with aivmlib; installs by page URL, by UUID and by
upload (an `.aivmx`: an `.aivm` converts through the engine's path, tested in
tests/engine/aivm, in half a minute); `describe` lists the new voices and a Wyoming request
speaks with one; faults end their job with one sentence and leave nothing behind; remove →
`describe` no longer lists it; a restart with no hub brings the library back."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.helpers.aivishub import HubModel, StandInHub
from tests.helpers.net import closed_endpoint, free_port
from tests.helpers.program import Program
from wyoming_hayakoe.client import WyomingClient

pytestmark = pytest.mark.timeout(600)

HUB_PAGE = "https://hub.aivis-project.com/aivm-models/"


class Page:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.headers = {"Origin": self.base}

    async def get(self, path: str) -> tuple[int, Any]:
        async with aiohttp.ClientSession() as s, s.get(self.base + path) as r:
            return r.status, await r.json()

    async def post(self, path: str, data: Any) -> tuple[int, Any]:
        async with (
            aiohttp.ClientSession() as s,
            s.post(self.base + path, json=data, headers=self.headers) as r,
        ):
            return r.status, await r.json()

    async def upload(self, file: Path, name: str | None = None) -> tuple[int, Any]:
        form = aiohttp.FormData()
        form.add_field("file", file.read_bytes(), filename=file.name)
        if name is not None:
            form.add_field("name", name)
        async with (
            aiohttp.ClientSession() as s,
            s.post(self.base + "/api/library/install", data=form, headers=self.headers) as r,
        ):
            return r.status, await r.json()

    async def finished(self, status: int, answer: Any, timeout: float = 240) -> dict:
        assert status == 202, answer
        job_id = answer["job"]
        end = time.monotonic() + timeout
        while True:  # until the job itself says it ended
            _, job = await self.get(f"/api/library/jobs/{job_id}")
            if job["state"] in ("ready", "failed", "cancelled"):
                return job
            assert time.monotonic() < end, f"job {job_id} did not end: {job}"
            await asyncio.sleep(0.1)


def _server_args(
    port: int, http: int, hub: str, library: Path, cache: Path, layout_root: Path
) -> list[str]:
    return [
        "--uri",
        f"tcp://127.0.0.1:{port}",
        "--http",
        f"127.0.0.1:{http}",
        "--library-dir",
        str(library),
        "--aivishub-api",
        hub,
        "--aivishub-timeout",
        "0.2",
        "--cache-dir",
        str(cache),
        "--bert-source",
        str(layout_root),
        "--threads",
        "1",
        "--no-warmup",
        "--precision",
        "fp32",
    ]


def _library_files(library: Path) -> set[str]:
    partial = library / ".partial"
    leftovers = {f"partial/{p.name}" for p in partial.iterdir()} if partial.is_dir() else set()
    return {p.name for p in library.iterdir() if p.is_file()} | leftovers


async def test_install_speak_remove_and_restart_offline(
    aivm_files, layout_root: Path, tmp_path: Path
) -> None:
    hub = await StandInHub().start()
    one = hub.add(HubModel(aivm_files.one))
    multi = hub.add(HubModel(aivm_files.multi))
    lying = tmp_path / "lying.aivmx"
    shutil.copy(aivm_files.one, lying)
    bad_sum = hub.add(
        HubModel(lying, uuid="11111111-2222-3333-4444-555555555555", checksum="0" * 64)
    )
    bad_size = hub.add(HubModel(lying, uuid="11111111-2222-3333-4444-666666666666", file_size=12))
    hanging = hub.add(HubModel(lying, uuid="11111111-2222-3333-4444-777777777777", hang=True))
    other_arch = hub.add(
        HubModel(
            lying, uuid="11111111-2222-3333-4444-888888888888", architecture="Style-Bert-VITS2"
        )
    )
    library, cache = tmp_path / "library", tmp_path / "cache"
    port, http = free_port(), free_port()
    args = _server_args(port, http, hub.api, library, cache, layout_root)
    client = WyomingClient(f"tcp://127.0.0.1:{port}", timeout=60)
    page = Page(http)
    try:
        async with Program(*args) as prog:
            await prog.wait_ready(timeout=300)
            # by page URL, by UUID, by upload
            job = await page.finished(
                *await page.post("/api/library/install", {"source": HUB_PAGE + one.uuid})
            )
            assert job["state"] == "ready", job
            assert job["voices"] == ["tsukuyomi-test"]
            assert job["bytes"] == job["total"] == aivm_files.one.stat().st_size
            assert job["int8"] == {"tsukuyomi-test": "fp32"}
            job = await page.finished(
                *await page.post(
                    "/api/library/install", {"source": multi.uuid.upper(), "name": "duo"}
                )
            )
            assert job["voices"] == ["duo-alice", "duo-bob"], job
            job = await page.finished(*await page.upload(aivm_files.one, "mine"))
            assert job["state"] == "ready" and job["voices"] == ["mine"], job

            info = await client.describe()
            names = {v.name for p in info.tts for v in p.voices}
            assert {"tsukuyomi-test", "duo-alice", "duo-bob", "mine"} <= names
            assert "openjtalk-mei" in names
            spoken = await client.speak("こんにちは。", voice="duo-bob")
            assert len(spoken.pcm) > 0.2 * spoken.rate * 2
            status, listing = await page.get("/api/library")
            assert status == 200
            assert [c["name"] for c in listing["configured"]] == ["openjtalk-mei"]
            installed = {e["name"]: e for e in listing["installed"]}
            assert set(installed) == {"tsukuyomi-test", "duo", "mine"}
            assert installed["duo"]["kind"] == "aivishub" and installed["duo"]["version"]
            assert installed["mine"]["source"] == "upload:tsukuyomi.aivmx"
            before = _library_files(library)

            # faults: one sentence each, nothing left behind, the server still serves
            truncated = tmp_path / "cut.aivmx"
            truncated.write_bytes(aivm_files.one.read_bytes()[:4000])
            not_aivm = tmp_path / "plain.aivmx"
            not_aivm.write_bytes(b"\x00" * 5000)
            faults = {
                "truncated": await page.upload(truncated),
                "not aivm": await page.upload(not_aivm),
                "404": await page.post(
                    "/api/library/install", {"source": "99999999-9999-9999-9999-999999999999"}
                ),
                "checksum": await page.post("/api/library/install", {"source": bad_sum.uuid}),
                "size": await page.post("/api/library/install", {"source": bad_size.uuid}),
                "never answers": await page.post("/api/library/install", {"source": hanging.uuid}),
                "architecture": await page.post(
                    "/api/library/install", {"source": other_arch.uuid}
                ),
            }
            errors = {k: (await page.finished(*v))["error"] for k, v in faults.items()}
            assert "cut.aivmx" in errors["truncated"], errors
            assert "plain.aivmx" in errors["not aivm"] or "AIVM" in errors["not aivm"], errors
            assert "404" in errors["404"], errors
            assert "checksum" in errors["checksum"], errors
            assert "file_size" in errors["size"], errors
            assert "did not answer" in errors["never answers"], errors
            assert "JP-Extra" in errors["architecture"], errors
            assert _library_files(library) == before
            status, refused = await page.post(
                "/api/library/install", {"source": "http://192.168.1.1/voice.aivmx"}
            )
            assert status == 400 and refused["field"] == "source"
            assert "AivisHub" in refused["error"]

            # remove: describe no longer lists it; configured voices cannot go
            status, answer = await page.post("/api/library/remove", {"name": "tsukuyomi-test"})
            assert status == 200 and answer["removed"] == ["tsukuyomi-test"]
            info = await client.describe()
            names = {v.name for p in info.tts for v in p.voices}
            assert "tsukuyomi-test" not in names and "duo-alice" in names
            assert not any(f.startswith("tsukuyomi") for f in _library_files(library))
            status, answer = await page.post("/api/library/remove", {"name": "openjtalk-mei"})
            assert status == 409 and "configured" in answer["error"]
            status, answer = await page.post("/api/library/remove", {"name": "nobody"})
            assert status == 404
            await prog.stop()

        # restart with no hub: the library is back from the folder
        offline = _server_args(port, http, closed_endpoint() + "/v1", library, cache, layout_root)
        async with Program(*offline) as prog:
            await prog.wait_ready(timeout=300)
            info = await client.describe()
            names = {v.name for p in info.tts for v in p.voices}
            assert {"duo-alice", "duo-bob", "mine"} <= names
            assert "tsukuyomi-test" not in names
            spoken = await client.speak("はい。", voice="mine")
            assert len(spoken.pcm) > 0
            await prog.stop()
    finally:
        await hub.stop()
