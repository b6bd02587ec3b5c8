"""AivisHub voices through the real program: `--voice-dir` serves a folder holding a
one-speaker three-style `.aivmx`, a two-speaker `.aivmx` and an `.aivm` (plus a damaged
file, named in the log and left out), `--voice NAME=file://...aivmx` a file by name;
`describe` lists every speaker and style with the license, and each voice speaks over TCP."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from engine.aivm import read_metadata
from tests.helpers.net import free_port
from tests.helpers.program import Program
from wyoming_hayakoe.client import WyomingClient

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def folder(aivm_files, tmp_path: Path) -> Path:
    out = tmp_path / "aivis"
    out.mkdir()
    for f in (aivm_files.one, aivm_files.multi, aivm_files.aivm):
        shutil.copy(f, out / f.name)
    broken = out / "broken.aivmx"
    shutil.copy(aivm_files.one, broken)
    os.truncate(broken, broken.stat().st_size // 3)
    return out


async def test_a_voice_folder_is_served_with_speakers_styles_and_licenses(
    aivm_files, folder: Path, layout_root: Path, tmp_path: Path
) -> None:
    port = free_port()
    u8 = read_metadata(aivm_files.multi).manifest.uuid.replace("-", "")[:8]
    async with Program(
        "--uri",
        f"tcp://127.0.0.1:{port}",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--voice-dir",
        str(folder),
        "--voice",
        f"duo=file://{aivm_files.multi}",
        "--bert-source",
        str(layout_root),
        "--threads",
        "1",
    ) as prog:
        await prog.wait_ready(timeout=400)
        log = prog.log
        assert f"{folder / 'broken.aivmx'}: truncated" in log
        assert "AivisHub file left out" in log
        assert "license: ACML-NC 1.0" in log and "by Carol Creator" in log
        client = WyomingClient(f"tcp://127.0.0.1:{port}", timeout=60)
        info = await client.describe()
        voices = {v.name: v for p in info.tts for v in p.voices}
        main = {n for n in voices if ":" not in n}
        assert main == {
            "duo-alice",
            "duo-bob",
            "tsukuyomi-test",
            f"aivm-{u8}-alice",
            f"aivm-{u8}-bob",
            "carol-voice",
        }
        one = voices["tsukuyomi-test"]
        assert [s.name for s in one.speakers or []] == ["ノーマル", "Happy", "Sad"]
        assert "license: ACML 1.0" in one.description and "Test Creator" in one.description
        assert one.attribution.name == "Test Creator"
        assert [s.name for s in voices[f"aivm-{u8}-bob"].speakers or []] == ["Happy", "Sad"]
        assert "ふたり / Bob" in voices[f"aivm-{u8}-bob"].description
        assert "license: CC0 1.0 Universal" in voices["duo-alice"].description
        assert "license: ACML-NC 1.0" in voices["carol-voice:Calm"].description
        for name in ("tsukuyomi-test:Happy", f"aivm-{u8}-bob", "carol-voice", "duo-alice"):
            spoken = await client.speak("こんにちは。", voice=name)
            assert spoken.rate == 44100 and len(spoken.pcm) > 0.2 * 44100 * 2, name
        assert await prog.stop() == 0
    assert "Traceback" not in prog.log
