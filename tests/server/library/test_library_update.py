"""Updating an AivisHub voice in place, through the real program and its page's API against
the stand-in AivisHub (`tests.helpers.aivishub`): the hub publishes a newer version (the
same UUID, a higher SemVer) → the listing says ``update_available`` → ``POST
/api/library/update`` makes the new version ready beside the old: Wyoming requests for the
voice keep being answered by it while the new one downloads (held part-way by an event) and
loads, a stream begun on the old version finishes on it after the swap, then the old version
is freed and its file and derived graphs deleted. A newer version that cannot be loaded (a
graph that is no voice, a truncated file) fails its job with one sentence and leaves the
served version as it was. A hub that does not answer shows no update and logs one warning.
Also the SemVer comparison (`wyoming_hayakoe.library.semver`)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.aivishub import HubModel, StandInHub, later_version
from tests.helpers.net import free_port
from tests.helpers.program import Program
from tests.server.library.test_library_server import Page, _library_files, _server_args
from wyoming_hayakoe.client import Spoken, WyomingClient
from wyoming_hayakoe.library.semver import compare, is_newer, parse

VOICE = "tsukuyomi-test"
WAIT_S = 120


def test_semver_precedence() -> None:
    """semver.org's example order, numbers as numbers, build metadata ignored."""
    order = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1",
        "1.2.0",
        "1.10.0",
        "2.0.0",
    ]
    for older, newer in zip(order, order[1:], strict=False):
        assert compare(older, newer) == -1 and compare(newer, older) == 1, (older, newer)
        assert is_newer(newer, older) and not is_newer(older, newer)
    assert compare("1.0.0+build.5", "1.0.0") == 0
    assert compare("v1.2", "1.2.0") == 0
    assert not is_newer("1.0.0", "1.0.0")
    for bad in ("", "latest", "1.0.0.0", "01.0.0", "1.0.0-01", "1..0"):
        assert parse(bad) is None, bad
        assert not is_newer(bad, "1.0.0") and not is_newer("1.0.0", bad)


def _not_a_voice(aivm_files: Any, out: Path, version: str) -> Path:
    """A later version whose metadata reads well and whose graph is no voice: it fails only
    when loaded."""
    import onnx
    from onnx import TensorProto, helper

    from tests.helpers.aivm import write_aivmx

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "not-a-voice",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    plain = out.with_suffix(".onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), plain)
    spec = dataclasses.replace(aivm_files.one_spec, version=version)
    return write_aivmx(plain, out, aivm_files.configs["one"], aivm_files.vectors, spec)


async def _entry(page: Page, query: str = "") -> dict[str, Any]:
    status, listing = await page.get("/api/library" + query)
    assert status == 200, listing
    (entry,) = [e for e in listing["installed"] if e["name"] == VOICE]
    return entry


async def _checked(page: Page, done: Any, timeout: float = 30) -> dict[str, Any]:
    """The entry once ``?check=1`` shows what `done` waits for (the page's checks are
    throttled to one every few seconds: asked again until then, bounded)."""
    end = time.monotonic() + timeout
    while True:
        entry = await _entry(page, "?check=1")
        if done(entry) or time.monotonic() > end:
            return entry
        await asyncio.sleep(0.25)


async def _job(page: Page, job_id: str) -> dict[str, Any]:
    status, job = await page.get(f"/api/library/jobs/{job_id}")
    assert status == 200, job
    return job


def _voice_names(info: Any) -> dict[str, str | None]:
    return {v.name: v.version for p in info.tts for v in p.voices}


class Speech:
    """Wyoming requests for the test voice, each checked to be answered by it (a request for
    a voice that is not served falls back to the default voice, at that voice's rate)."""

    def __init__(self, client: WyomingClient, rate: int, prog: Program) -> None:
        self.client = client
        self.rate = rate
        self.prog = prog
        self.states: list[str] = []
        """The job's state when each request was sent."""

    async def say(self, state: str = "") -> Spoken:
        self.states.append(state)
        spoken = await self.client.speak("はい。", voice=VOICE)
        assert spoken.rate == self.rate and len(spoken.pcm) > 0, (state, spoken.rate)
        assert "using openjtalk-mei" not in self.prog.log, self.prog.log
        return spoken


async def _held_stream(client: WyomingClient, begun: asyncio.Event, go_on: asyncio.Event) -> Spoken:
    """A stream on the test voice whose text stops after its first sentence until `go_on`."""

    async def deltas() -> AsyncIterator[str]:
        yield "こんにちは。"
        begun.set()
        await go_on.wait()
        yield "またね。"

    return await client.speak_streamed(deltas(), voice=VOICE)


async def test_update_is_made_ready_beside_the_old_and_a_broken_one_changes_nothing(
    aivm_files, layout_root: Path, tmp_path: Path
) -> None:
    v2_file = later_version(aivm_files, tmp_path / "v2.aivmx", "1.1.0")
    broken_file = _not_a_voice(aivm_files, tmp_path / "v3.aivmx", "1.2.0")
    truncated = tmp_path / "v4.aivmx"
    truncated.write_bytes(
        later_version(aivm_files, tmp_path / "v4-whole.aivmx", "1.3.0").read_bytes()[:4000]
    )

    hub = await StandInHub().start()
    v1 = hub.add(HubModel(aivm_files.one))
    assert v1.version == "1.0.0"
    library, cache = tmp_path / "library", tmp_path / "cache"
    port, http = free_port(), free_port()
    args = _server_args(port, http, hub.api, library, cache, layout_root)
    # the held download must outlast the read timeout; the drain waits for the held stream
    args += ["--aivishub-timeout", "30", "--drain-timeout", "60"]
    client = WyomingClient(f"tcp://127.0.0.1:{port}", timeout=60)
    page = Page(http)
    try:
        async with Program(*args) as prog:
            await prog.wait_ready(timeout=WAIT_S)
            job = await page.finished(*await page.post("/api/library/install", {"source": v1.uuid}))
            assert job["state"] == "ready" and job["voices"] == [VOICE], job
            entry = await _entry(page)
            assert entry["version"] == "1.0.0" and entry["latest_version"] == "1.0.0"
            assert entry["update_available"] is False
            before = _voice_names(await client.describe())
            assert before[VOICE] == "1.0.0"
            old_file = library / entry["file"]
            old_cache = _cache_entries(old_file, cache)
            assert old_cache
            rate = (await client.speak("はい。", voice=VOICE)).rate
            assert rate != (await client.speak("はい。", voice="openjtalk-mei")).rate
            speech = Speech(client, rate, prog)

            # the hub publishes 1.1.0: the page is told when it asks
            gate = asyncio.Event()
            v2 = hub.add(HubModel(v2_file, hold=gate))
            assert v2.uuid == v1.uuid
            entry = await _checked(page, lambda e: e["latest_version"] == "1.1.0")
            assert entry["update_available"] is True and entry["latest_version"] == "1.1.0"
            assert entry["version"] == "1.0.0"

            # a stream begun on 1.0.0, held open across the update
            begun, go_on = asyncio.Event(), asyncio.Event()
            stream = asyncio.create_task(_held_stream(client, begun, go_on))
            await asyncio.wait_for(begun.wait(), WAIT_S)

            status, answer = await page.post("/api/library/update", {"name": VOICE})
            assert status == 202, answer
            job_id = answer["job"]
            await asyncio.wait_for(v2.reached.wait(), WAIT_S)  # half downloaded, held
            assert (await _job(page, job_id))["state"] == "downloading"
            await speech.say("downloading")
            gate.set()
            # requests while the new version is checked and loaded, until the swap
            end = time.monotonic() + WAIT_S
            while (await _entry(page))["version"] != "1.1.0":
                state = (await _job(page, job_id))["state"]
                assert state not in ("failed", "cancelled", "ready"), await _job(page, job_id)
                await speech.say(state)
                assert time.monotonic() < end, "the new version was never served"
            assert "loading" in speech.states, speech.states
            # swapped: new requests get 1.1.0; the job waits for the stream still on 1.0.0
            after = _voice_names(await client.describe())
            assert set(after) == set(before) and after[VOICE] == "1.1.0"
            await speech.say("swapped")
            assert (await _job(page, job_id))["state"] == "loading"
            assert not stream.done() and old_file.exists()
            go_on.set()
            held = await asyncio.wait_for(stream, WAIT_S)
            assert held.rate == rate and held.seconds > 0.5, held.seconds
            job = await page.finished(202, {"job": job_id}, timeout=WAIT_S)
            assert job["state"] == "ready" and job["voices"] == [VOICE], job
            assert job["action"] == "update"

            entry = await _entry(page)
            assert entry["version"] == "1.1.0" and entry["update_available"] is False
            new_file = library / entry["file"]
            assert new_file.exists() and not old_file.exists()
            kept = set(_cache_entries(new_file, cache))  # the old version's folders are gone
            made = {*(cache / "aivm").iterdir(), *(cache / "derived").glob("synthesizer-*")}
            assert kept and made == kept and not any(p.exists() for p in old_cache), kept
            state = json.loads((library / "library.json").read_text())
            assert [(e["name"], e["version"]) for e in state["voices"]] == [(VOICE, "1.1.0")]
            served = _library_files(library)

            # 1.2.0 reads as a voice and cannot be loaded; 1.3.0 is cut short
            for bad, version, words in (
                (broken_file, "1.2.0", ("1.2.0", "cannot be loaded", "1.1.0 still serves")),
                (truncated, "1.3.0", ("1.3.0",)),
            ):
                hub.add(HubModel(bad, uuid=v1.uuid, version=version))
                entry = await _checked(page, lambda e, v=version: e["latest_version"] == v)
                assert entry["update_available"] is True and entry["latest_version"] == version
                job = await page.finished(
                    *await page.post("/api/library/update", {"name": VOICE}), timeout=WAIT_S
                )
                assert job["state"] == "failed", job
                for word in words:
                    assert word in job["error"], job
                assert "\n" not in job["error"]
                entry = await _entry(page)
                assert entry["version"] == "1.1.0", entry
                assert _library_files(library) == served
                assert _voice_names(await client.describe())[VOICE] == "1.1.0"
                await speech.say("after a failed update")

            # a hub that does not answer: no update shown, one warning for the check
            await hub.stop()
            lines = len(prog.lines)
            entry = await _checked(page, lambda e: e["latest_version"] is None)
            assert entry["update_available"] is False and entry["latest_version"] is None
            warnings = [line for line in prog.lines[lines:] if "WARNING" in line]
            assert len(warnings) == 1 and "update check" in warnings[0], warnings
            assert "Traceback" not in prog.log, prog.log
            await prog.stop()
    finally:
        await hub.stop()


def _cache_entries(file: Path, cache: Path) -> list[Path]:
    """The cache folders made from the library's `file` (its voice folder, derived graphs)."""
    from engine.aivm.manifest import read_metadata
    from engine.aivm.store import cache_entries

    return cache_entries(read_metadata(file), cache)


pytestmark = pytest.mark.timeout(300)
