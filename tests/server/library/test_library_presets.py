"""Defect 5 of issue 46, through the real program: a voice of the library named by
``--default-voice`` and by a preset. The server starts (no "unknown voice"), a Wyoming
``synthesize`` with no voice and one naming the preset are both spoken by the library's
voice (the server's log names who spoke each)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.helpers.net import closed_endpoint, free_port
from tests.helpers.program import Program, run_program
from tests.server.library.test_library_server import _server_args
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
