"""A voice damaged on disk, through the real program: a truncated synthesizer.onnx is named
in the log, that voice is left out and the others are served; with no voice left, the
server does not start."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeVoice

from engine import EMBEDDED_VOICE_NAME
from engine.layout import SYNTHESIZER_FILE, speaker_prefix
from tests.helpers.net import free_port
from tests.helpers.program import Program
from tests.helpers.voices import build_layout_root

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(root, the truncated file): the small test voice `tiny` with half its synthesizer."""
    root = build_layout_root(tmp_path_factory.mktemp("damaged"), "tiny")
    synth = root / speaker_prefix("tiny", "onnx") / SYNTHESIZER_FILE
    os.truncate(synth, synth.stat().st_size // 2)
    return root, synth


async def test_a_truncated_voice_is_named_left_out_and_the_others_served(damaged, tmp_path) -> None:
    root, synth = damaged
    port = free_port()
    async with Program(
        "--uri",
        f"tcp://127.0.0.1:{port}",
        "--cache-dir",
        str(tmp_path),
        "--voice",
        f"tiny={root}",
        "--voice",
        EMBEDDED_VOICE_NAME,
        "--bert-source",
        str(root),
    ) as prog:
        await prog.wait_ready()
        assert f"{synth} is damaged or incomplete" in prog.log
        assert "Voice tiny cannot be used and is left out" in prog.log
        assert f"requests that name no voice get {EMBEDDED_VOICE_NAME}" in prog.log
        async with AsyncTcpClient("127.0.0.1", port, read_timeout=60) as client:
            await client.write_event(Describe().event())
            info = Info.from_event(await client.read_event())
            names = {v.name.split(":")[0] for p in info.tts for v in p.voices}
            assert names == {EMBEDDED_VOICE_NAME}
            await client.write_event(
                Synthesize(text="はい。", voice=SynthesizeVoice(name="tiny")).event()
            )
            types = []
            while (event := await client.read_event()).type != "audio-stop":
                types.append(event.type)
            assert types[0] == "audio-start" and "audio-chunk" in types  # the default voice speaks
        assert await prog.stop() == 0
    assert "Traceback" not in prog.log


async def test_with_no_voice_left_the_server_does_not_start(damaged, tmp_path) -> None:
    root, synth = damaged
    async with Program(
        "--uri",
        f"tcp://127.0.0.1:{free_port()}",
        "--cache-dir",
        str(tmp_path),
        "--voice",
        f"tiny={root}",
        "--bert-source",
        str(root),
    ) as prog:
        code = await prog.proc.wait()
        await prog._reader
    assert code == 1
    assert f"Cannot serve: {synth} is damaged or incomplete" in prog.log or (
        "Cannot serve" in prog.log and str(synth) in prog.log
    )
    assert "Traceback" not in prog.log
