"""`wyoming-hayakoe library` (`wyoming_hayakoe.commands.library`), the real program on a
library folder: add by file and by UUID through a stand-in AivisHub (`--aivishub-api`), list
(text and ``--json``), an ``.aivm`` copied in, remove; refusals exit 2 and failures 1 with
one line, leaving nothing behind; then a real server started on that folder serves what was
added, and follows an add and a remove made while it runs (it watches the state file)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.aivishub import HubModel, StandInHub
from tests.helpers.net import closed_endpoint, free_port
from tests.helpers.program import Finished, Program, run_program
from tests.helpers.stores import isolate_hub
from wyoming_hayakoe.client import WyomingClient

pytestmark = pytest.mark.timeout(600)  # the fixtures too: minutes on a loaded machine

HUB_PAGE = "https://hub.aivis-project.com/aivm-models/"


class Cli:
    def __init__(self, library: Path, cache: Path, hub: str) -> None:
        self.where = ["--library-dir", str(library), "--cache-dir", str(cache)]
        self.hub = ["--aivishub-api", hub, "--aivishub-timeout", "10"]

    async def __call__(self, *args: str) -> Finished:
        return await run_program("library", *args, *self.where, *self.hub, timeout=240)


def _ok(done: Finished) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


def _one_line(done: Finished, status: int) -> str:
    """The exit status and the one line on stderr that says why."""
    assert done.returncode == status, (done.returncode, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("library: "), done.stderr
    assert not done.stdout
    return lines[0]


def _files(library: Path) -> set[str]:
    return {str(p.relative_to(library)) for p in library.rglob("*") if p.is_file()}


async def _names(client: WyomingClient) -> set[str]:
    info = await client.describe()
    return {v.name for p in info.tts for v in p.voices}


async def _until(
    client: WyomingClient, prog: Program, test: Callable[[set[str]], bool], timeout: float
) -> None:
    """Bounded polling of `describe` (the server's watcher looks every 2 s)."""
    end = time.monotonic() + timeout
    while not test(names := await _names(client)):
        assert time.monotonic() < end, f"describe did not change: {sorted(names)}\n{prog.log}"
        await asyncio.sleep(0.2)


async def test_add_list_remove_then_a_server_serves_and_follows(
    aivm_files, layout_root: Path, tmp_path: Path
) -> None:
    hub = await StandInHub().start()
    one = hub.add(HubModel(aivm_files.one))
    multi = hub.add(HubModel(aivm_files.multi))
    library, cache = tmp_path / "library", tmp_path / "cache"
    cli = Cli(library, cache, hub.api)
    try:
        # by file, by UUID (downloaded from the stand-in hub, progress on stderr)
        assert "Added tsukuyomi-test" in _ok(await cli("add", str(aivm_files.one)))
        done = await cli("add", multi.uuid, "--name", "duo")
        assert "Added duo" in _ok(done) and "duo-alice, duo-bob" in done.stdout.decode()
        assert "Downloading futari" in done.stderr and "KB" in done.stderr
        assert hub.requests == [
            f"/v1/aivm-models/{multi.uuid}",
            f"/v1/aivm-models/{multi.uuid}/download",
        ]
        installed = _files(library)

        # list, as text and as JSON
        lines = _ok(await cli("list")).splitlines()
        assert lines[0].split() == ["NAME", "VOICES", "VERSION", "SOURCE", "SIZE"]
        rows = {line.split()[0]: line.split() for line in lines[1:]}
        assert rows["duo"][1:4] == ["duo-alice,duo-bob", multi.version, multi.uuid]
        assert rows["tsukuyomi-test"][3] == "upload:tsukuyomi.aivmx"
        assert rows["duo"][-1] == "MB"
        listing = json.loads(_ok(await cli("list", "--json")))
        assert listing["folder"] == str(library)
        entries = {e["name"]: e for e in listing["installed"]}
        assert set(entries) == {"tsukuyomi-test", "duo"}
        assert entries["duo"]["kind"] == "aivishub" and entries["duo"]["uuid"] == multi.uuid
        assert entries["duo"]["size"] == aivm_files.multi.stat().st_size
        assert (library / entries["duo"]["file"]).is_file()

        # refusals (2) and failures (1): one line each, nothing left behind
        not_aivm = tmp_path / "plain.aivmx"
        not_aivm.write_bytes(b"\x00" * 5000)
        line = _one_line(await cli("add", HUB_PAGE + one.uuid), 1)
        assert "already has tsukuyomi-test" in line
        line = _one_line(await cli("add", "http://192.168.1.1/voice.aivmx"), 2)
        assert "AivisHub" in line
        assert "name" in _one_line(await cli("add", str(aivm_files.one), "--name", "a:b"), 2)
        missing = tmp_path / "missing.aivmx"
        assert "no such file" in _one_line(await cli("add", str(missing)), 1)
        assert "plain.aivmx" in _one_line(await cli("add", str(not_aivm)), 1)
        line = _one_line(await cli("add", "99999999-9999-9999-9999-999999999999"), 1)
        assert "404" in line
        assert "not in the library" in _one_line(await cli("remove", "nobody"), 1)
        assert _files(library) == installed

        # remove: the entry and its file go
        assert "Removed tsukuyomi-test" in _ok(await cli("remove", "tsukuyomi-test"))
        listing = json.loads(_ok(await cli("list", "--json")))
        assert [e["name"] for e in listing["installed"]] == ["duo"]
        assert not any(f.startswith("tsukuyomi") for f in _files(library))

        # an .aivm (Safetensors) is copied in as it is (a server converts it when it loads it)
        assert "Added carol-voice" in _ok(await cli("add", str(aivm_files.aivm)))
        listing = json.loads(_ok(await cli("list", "--json")))
        carol = next(e for e in listing["installed"] if e["name"] == "carol-voice")
        assert carol["file"].endswith(".aivm") and carol["license"] == "ACML-NC 1.0", carol
        assert carol["kind"] == "upload" and carol["source"] == "upload:carol.aivm"
        assert "Removed carol-voice" in _ok(await cli("remove", "carol-voice"))

        # a server on the folder serves it; an add and a remove while it runs are followed
        port = free_port()
        client = WyomingClient(f"tcp://127.0.0.1:{port}", timeout=60)
        server = ["--uri", f"tcp://127.0.0.1:{port}", *cli.where, "--aivishub-api", hub.api]
        server += ["--bert-source", str(layout_root), "--threads", "1", "--no-warmup"]
        async with Program(*server, "--precision", "fp32") as prog:
            await prog.wait_ready(timeout=240)
            names = await _names(client)
            assert {"duo-alice", "duo-bob", "openjtalk-mei"} <= names
            assert "tsukuyomi-test" not in names
            _ok(await cli("add", str(aivm_files.one), "--name", "mine"))
            await _until(client, prog, lambda names: "mine" in names, timeout=180)
            spoken = await client.speak("こんにちは。", voice="mine")
            assert len(spoken.pcm) > 0
            _ok(await cli("remove", "duo-bob"))  # a voice of it names the file
            await _until(client, prog, lambda names: "duo-alice" not in names, timeout=180)
            assert "duo-bob" not in await _names(client)
            assert await prog.stop() == 0
    finally:
        await hub.stop()


async def test_add_an_hf_voice_fetches_it_into_the_cache(
    hub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``hf://`` with a name: the voice's CPU files fetched into the cache (the server then
    starts with no network), listed with no file and no size; without a name: refused (2)."""
    isolate_hub(monkeypatch)
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    library, cache = tmp_path / "library", tmp_path / "cache"
    cli = Cli(library, cache, closed_endpoint() + "/v1")
    done = await cli("add", "hf://someone/voices", "--name", "alpha")
    assert "Added alpha" in _ok(done)
    assert "Downloaded hf://someone/voices: onnx/speakers/alpha" in done.stderr
    assert list(cache.rglob("onnx/speakers/alpha/synthesizer.onnx"))
    assert not list(cache.rglob("onnx/speakers/beta"))
    (entry,) = json.loads(_ok(await cli("list", "--json")))["installed"]
    assert entry["kind"] == "hf" and entry["load_source"] == "hf://someone/voices"
    assert entry["file"] == "" and entry["voices"] == ["alpha"]
    assert _ok(await cli("list")).splitlines()[1].split()[-1] == "-"
    assert "name" in _one_line(await cli("add", "hf://someone/voices"), 2)
    assert "already has alpha" in _one_line(
        await cli("add", "hf://someone/voices", "--name", "Alpha"), 1
    )
    assert "Removed alpha" in _ok(await cli("remove", "alpha"))
