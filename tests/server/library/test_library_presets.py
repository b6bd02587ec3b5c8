"""Defect 5 of issue 46, through the real program: a voice of the library named by
``--default-voice`` and by a preset. The server starts (no "unknown voice"), a Wyoming
``synthesize`` with no voice and one naming the preset are both spoken by the library's
voice (the server's log names who spoke each). Issue 54 finding 13: a preset of a library
voice whose file is gone waits for it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from aiohttp import web

from tests.helpers.net import closed_endpoint, free_port
from tests.helpers.program import Program, run_program
from tests.server.library.test_library_server import Page, _server_args
from wyoming_hayakoe.client import WyomingClient
from wyoming_hayakoe.library.state import read_state

pytestmark = pytest.mark.timeout(600)


async def _spoken(prog: Program, count: int) -> str:
    """VOICE/STYLE of the server's `count`-th "Spoke N characters with VOICE/STYLE for ..."
    line (logged just after ``audio-stop`` is sent: awaited, bounded)."""
    end = time.monotonic() + 30
    while len(lines := [line for line in prog.lines if " Spoke " in line]) < count:
        assert time.monotonic() < end, prog.log
        await asyncio.sleep(0.05)
    return lines[count - 1].split(" with ", 1)[1].split(" for ", 1)[0]


TEXT = "こんにちは。"


async def test_defect5_a_library_voice_is_the_default_voice_and_a_presets(
    aivm_files, layout_root: Path, tmp_path: Path
) -> None:
    library, cache = tmp_path / "library", tmp_path / "cache"
    added = await run_program(
        "library",
        "add",
        str(aivm_files.one),
        "--library-dir",
        str(library),
        "--cache-dir",
        str(cache),
        timeout=240,
    )
    assert added.returncode == 0, added.stderr
    assert [e.name for e in read_state(library).entries] == ["tsukuyomi-test"]
    port, http = free_port(), free_port()
    args = _server_args(port, http, closed_endpoint(), library, cache, layout_root)
    args += ["--voice", "openjtalk-mei", "--default-voice", "tsukuyomi-test"]
    args += ["--preset", "alarm=Tsukuyomi-Test:happy"]
    client = WyomingClient(f"tcp://127.0.0.1:{port}", timeout=120)
    async with Program(*args) as prog:
        await prog.wait_ready(timeout=300)
        info = await client.describe()
        names = {v.name for p in info.tts for v in p.voices}
        assert {"tsukuyomi-test", "alarm", "openjtalk-mei"} <= names, names
        spoken = {}
        for count, asked in enumerate((None, "alarm", "openjtalk-mei"), 1):
            audio = await client.speak(TEXT, asked)
            assert audio.pcm, prog.log
            spoken[asked] = await _spoken(prog, count)
        assert spoken[None] == "tsukuyomi-test/ノーマル", prog.log
        assert spoken["alarm"] == "tsukuyomi-test/Happy", prog.log
        assert spoken["openjtalk-mei"].startswith("openjtalk-mei/"), prog.log
        assert "unknown voice" not in prog.log.lower(), prog.log
        assert await prog.stop() == 0, prog.log


class _Hub:
    """A stand-in Hugging Face endpoint on loopback that answers 404 and notes each path
    asked (nothing may be asked of it)."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> _Hub:
        async def note(request: web.Request) -> web.Response:
            self.paths.append(request.path)
            return web.Response(status=404)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", note)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


async def test_a_preset_of_a_library_voice_whose_file_is_gone_waits_for_it(
    aivm_files, layout_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 54 finding 13: the server starts (it stopped with "unknown voice"), warns
    naming the preset and its voice, never asks Hugging Face for the library's voice; a
    request for the preset is told which voice is missing (the page refuses it; Wyoming
    speaks it with the default voice), and once the voice is back the preset speaks."""
    library, cache = tmp_path / "library", tmp_path / "cache"
    added = await run_program(
        "library", "add", str(aivm_files.one),
        "--library-dir", str(library), "--cache-dir", str(cache),
        timeout=240,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    (entry,) = read_state(library).entries
    (library / entry.file).unlink()  # the file is gone, the state still lists the voice
    port, http = free_port(), free_port()
    args = _server_args(port, http, closed_endpoint(), library, cache, layout_root)
    args += ["--voice", "openjtalk-mei", "--preset", "alarm=tsukuyomi-test:happy"]
    client = WyomingClient(f"tcp://127.0.0.1:{port}", timeout=120)
    page = Page(http)
    async with _Hub() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        async with Program(*args) as prog:
            await prog.wait_ready(timeout=300)
            warned = [line for line in prog.lines if "Preset alarm" in line]
            assert warned and "tsukuyomi-test" in warned[0], prog.log
            assert "WARNING" in warned[0], warned[0]
            info = await client.describe()
            names = {v.name for p in info.tts for v in p.voices}
            assert "alarm" not in names and "openjtalk-mei" in names, names
            # the page refuses it, naming the missing voice
            status, answer = await page.post("/api/speak", {"text": TEXT, "voice": "alarm"})
            assert (status, answer["code"]) == (400, "unknown_voice"), answer
            assert "'tsukuyomi-test'" in answer["error"] and "missing" in answer["error"]
            # Wyoming speaks it with the default voice, the warning naming the voice
            audio = await client.speak(TEXT, "alarm")
            assert audio.pcm
            assert (await _spoken(prog, 1)).startswith("openjtalk-mei/"), prog.log
            assert any(
                "alarm" in line and "'tsukuyomi-test' is missing" in line for line in prog.lines
            ), prog.log
            # the voice back in the library: the preset speaks with it
            status, answer = await page.post("/api/library/remove", {"name": "tsukuyomi-test"})
            assert status == 200, answer
            job = await page.finished(*await page.upload(aivm_files.one))
            assert (job["state"], job["voices"]) == ("ready", ["tsukuyomi-test"]), job
            audio = await client.speak(TEXT, "alarm")
            assert audio.pcm
            assert await _spoken(prog, 2) == "tsukuyomi-test/Happy", prog.log
            info = await client.describe()
            assert "alarm" in {v.name for p in info.tts for v in p.voices}
            assert await prog.stop() == 0, prog.log
        assert hub.paths == [], hub.paths  # the library's voice was never asked of the Hub
        assert "Cannot serve" not in prog.log, prog.log
