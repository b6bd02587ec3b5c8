"""The library's page endpoints (`web.library`) over a real `Library` on a real `TTS` (the
embedded voice), on loopback: refusals as JSON with their code before any work, failed
uploads leaving nothing, a finished job dismissed; and the CLI's checks equal to the
server's (an `.aivm` with no PyTorch). Seconds each."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from engine import EMBEDDED_VOICE_NAME, TTS
from wyoming_hayakoe.commands.library import main as library_main
from wyoming_hayakoe.info import VoiceCatalog
from wyoming_hayakoe.library import install as install_module
from wyoming_hayakoe.library.manager import Library
from wyoming_hayakoe.library.options import LibraryConfig, LibrarySettings
from wyoming_hayakoe.web.api import STATE
from wyoming_hayakoe.web.errors import api_errors_middleware
from wyoming_hayakoe.web.library import add_library_routes

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def tts() -> TTS:
    return TTS().load(EMBEDDED_VOICE_NAME).prepare()


@pytest.fixture
async def page(tts: TTS, tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    folder = tmp_path / "library"
    config = LibraryConfig(folder, tmp_path / "cache", LibrarySettings(max_upload=1 << 20))
    catalog = VoiceCatalog(tts.speakers, EMBEDDED_VOICE_NAME)
    catalog.follow(lambda: tts.speakers)
    library = Library(config, tts, catalog)
    catalog.library = library
    library.start()
    app = web.Application(middlewares=[api_errors_middleware])
    app[STATE] = cast(Any, SimpleNamespace(catalog=catalog))
    add_library_routes(app)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield f"http://127.0.0.1:{server.port}", folder
    finally:
        await server.close()
        await library.close()


def _partial(folder: Path) -> list[str]:
    partial = folder / ".partial"
    return sorted(p.name for p in partial.iterdir()) if partial.is_dir() else []


async def test_defect8_a_bad_name_is_a_400_naming_the_field_and_no_job(page) -> None:
    base, _ = page
    async with aiohttp.ClientSession() as s:
        for name in ("a\nb", "x" * 300, "a/b", "\x00"):
            body = {"source": "0b7e0f4c-1b2a-4c3d-8e9f-0a1b2c3d4e5f", "name": name}
            async with s.post(base + "/api/library/install", json=body) as r:
                answer = await r.json()
                assert r.status == 400, answer
                assert answer["code"] == "name_invalid" and answer["field"] == "name"
        async with s.post(
            base + "/api/library/install", json={"source": "jvnv-F1-jp", "name": "x"}
        ) as r:
            assert r.status == 400 and (await r.json())["code"] == "name_invalid"
        async with s.get(base + "/api/library") as r:
            assert (await r.json())["jobs"] == []


async def test_defect4_an_upload_whose_client_leaves_keeps_no_file(page) -> None:
    base, folder = page
    port = int(base.rsplit(":", 1)[1])
    boundary = "XyZ"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="v.aivmx"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    body = head + b"\x01" * 300_000 + f"\r\n--{boundary}\r\nContent-Disp".encode()
    request = (
        f"POST /api/library/install HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
        f"Content-Length: {len(body) + 100_000}\r\n\r\n"
    ).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request + body)
    await writer.drain()
    end = time.monotonic() + 10
    while not _partial(folder):  # the server has begun writing the file
        assert time.monotonic() < end, "the upload never reached the disk"
        await asyncio.sleep(0.02)
    writer.close()
    await writer.wait_closed()
    while _partial(folder):  # removed as soon as the handler sees the client gone
        assert time.monotonic() < end, f"left in .partial: {_partial(folder)}"
        await asyncio.sleep(0.02)


async def test_defect4_an_upload_with_a_bad_later_part_keeps_no_file(page, aivm_files) -> None:
    base, folder = page
    form = aiohttp.FormData()
    form.add_field("file", aivm_files.one.read_bytes()[:200_000], filename="v.aivmx")
    form.add_field("name", "n" * 5000)
    async with aiohttp.ClientSession() as s, s.post(base + "/api/library/install", data=form) as r:
        answer = await r.json()
    assert r.status == 400 and answer["code"] == "name_invalid", answer
    assert _partial(folder) == []


async def test_a_failed_job_stays_listed_until_dismissed(page, aivm_files, tmp_path) -> None:
    base, folder = page
    cut = tmp_path / "cut.aivmx"
    cut.write_bytes(aivm_files.one.read_bytes()[:4000])
    form = aiohttp.FormData()
    form.add_field("file", cut.read_bytes(), filename="cut.aivmx")
    async with aiohttp.ClientSession() as s:
        async with s.post(base + "/api/library/install", data=form) as r:
            job_id = (await r.json())["job"]
        end = time.monotonic() + 30
        while True:
            async with s.get(f"{base}/api/library/jobs/{job_id}") as r:
                job = await r.json()
            if job["state"] in ("ready", "failed", "cancelled"):
                break
            assert time.monotonic() < end, job
            await asyncio.sleep(0.05)
        assert job["state"] == "failed" and job["error_code"] == "file_invalid", job
        assert "cut.aivmx" in job["error"]
        async with s.get(base + "/api/library") as r:
            assert [j["id"] for j in (await r.json())["jobs"]] == [job_id]
        async with s.post(f"{base}/api/library/jobs/{job_id}/dismiss") as r:
            assert r.status == 200
        async with s.get(base + "/api/library") as r:
            assert (await r.json())["jobs"] == []
        async with s.post(f"{base}/api/library/jobs/{job_id}/cancel") as r:
            assert r.status == 404 and (await r.json())["code"] == "job_not_found"
    assert _partial(folder) == []


def test_defect2_the_cli_refuses_an_aivm_the_server_cannot_load(
    aivm_files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(install_module, "torch_available", lambda: False)
    library = tmp_path / "library"
    where = ["--library-dir", str(library), "--cache-dir", str(tmp_path / "cache")]
    assert library_main(["add", str(aivm_files.aivm), *where]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "PyTorch" in err[0], err
    leftovers = [p for p in library.rglob("*") if p.is_file() and p.name != ".lock"]
    assert leftovers == []
