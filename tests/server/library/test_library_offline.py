"""Defect 16 of issue 46, through the real program: an offline server (``--offline``)
whose shared BERT is not in the cache refuses an install at once (``bert_missing``, a
sentence naming the BERT and how to fetch it), before it asks the hub anything or keeps a
byte of an upload; with the BERT at hand the same offline server installs the voice."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from tests.helpers.aivishub import HubModel, StandInHub
from tests.helpers.net import closed_endpoint, free_port
from tests.helpers.program import Program
from tests.server.library.test_library_server import Page, _server_args
from wyoming_hayakoe.library.state import PARTIAL_DIR, read_state

pytestmark = pytest.mark.timeout(600)


async def _post_upload(page: Page, file: Path) -> tuple[int, dict]:
    form = aiohttp.FormData()
    form.add_field("file", file.read_bytes(), filename=file.name)
    async with (
        aiohttp.ClientSession() as s,
        s.post(page.base + "/api/library/install", data=form, headers=page.headers) as r,
    ):
        return r.status, await r.json()


def _offline_args(port: int, http: int, hub: str, library: Path, cache: Path, bert: str) -> list:
    args = _server_args(port, http, hub, library, cache, Path("."))
    at = args.index("--bert-source")
    args[at + 1] = bert
    return [*args, "--offline"]


async def test_defect16_offline_without_the_bert_an_install_is_refused_at_once(
    aivm_files, layout_root: Path, tmp_path: Path
) -> None:
    hub = await StandInHub().start()
    model = hub.add(HubModel(aivm_files.one))
    library, cache = tmp_path / "library", tmp_path / "cache"
    page = Page(http := free_port())
    try:
        args = _offline_args(free_port(), http, hub.api, library, cache, "hf://nobody/no-bert")
        async with Program(*args) as prog:
            await prog.wait_ready(timeout=120)
            status, answer = await page.post("/api/library/install", {"source": model.uuid})
            assert status == 503, answer
            assert answer["code"] == "bert_missing", answer
            message = answer["error"]
            assert "BERT" in message and "offline" in message, message
            assert "wyoming-hayakoe download" in message and str(cache) in message, message
            status, answer = await _post_upload(page, aivm_files.one)
            assert (status, answer["code"]) == (503, "bert_missing"), answer
            _, listing = await page.get("/api/library")
            assert listing["jobs"] == [] and listing["installed"] == [], listing
            partial = library / PARTIAL_DIR
            assert not partial.is_dir() or list(partial.iterdir()) == []
            assert hub.requests == []  # refused before the hub was asked anything
            assert await prog.stop() == 0, prog.log

        # the same offline server with the BERT at hand (a local folder): it installs
        args = _offline_args(free_port(), http, hub.api, library, cache, str(layout_root))
        async with Program(*args) as prog:
            await prog.wait_ready(timeout=120)
            job = await page.finished(
                *await page.post("/api/library/install", {"source": model.uuid})
            )
            assert job["state"] == "ready", job
            assert [e.name for e in read_state(library).entries] == ["tsukuyomi-test"]
            assert await prog.stop() == 0, prog.log
    finally:
        await hub.stop()


async def test_online_without_the_network_the_errors_say_what_happened(
    aivm_files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 54 finding 15, through the real program with Hugging Face out of reach (a
    closed port as ``HF_ENDPOINT``) and no ``--offline``: an official voice's install ends
    ``source_unreachable`` naming the host (it was ``internal``, "Something went wrong"),
    and an upload whose load needs the shared BERT, which cannot be fetched, ends
    ``bert_missing`` naming the BERT (it was ``load_failed``)."""
    endpoint = closed_endpoint()
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    host = endpoint.removeprefix("http://")
    library, cache = tmp_path / "library", tmp_path / "cache"
    page = Page(http := free_port())
    args = _server_args(free_port(), http, closed_endpoint(), library, cache, Path("."))
    args[args.index("--bert-source") + 1] = "hf://nobody/no-bert"
    async with Program(*args) as prog:
        await prog.wait_ready(timeout=120)
        job = await page.finished(
            *await page.post("/api/library/install", {"source": "jvnv-F1-jp"})
        )
        assert (job["state"], job["error_code"]) == ("failed", "source_unreachable"), job
        assert host in job["error"] and "jvnv-F1-jp" in job["error"], job
        job = await page.finished(*await _post_upload(page, aivm_files.one))
        assert (job["state"], job["error_code"]) == ("failed", "bert_missing"), job
        assert "BERT" in job["error"] and "hf://nobody/no-bert" in job["error"], job
        assert "wyoming-hayakoe download" in job["error"], job
        assert read_state(library).entries == ()
        partial = library / PARTIAL_DIR
        assert not partial.is_dir() or list(partial.iterdir()) == []
        assert await prog.stop() == 0, prog.log
