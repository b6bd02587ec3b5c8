"""A neural voice end to end: a hayakoe-layout root holding the tiny BERT (exported by
`engine.bert.export_bert`) and a small random-weight JP-Extra synthesizer whose BERT width
matches it, served through the public API (`TTS`/`Speaker`) and through the real Wyoming
server program on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.synth.export import export_model_dir
from tests.helpers.net import free_port
from tests.helpers.paths import REPO_ROOT
from tests.helpers.voices import BERT_SMALL, write_random_voice

pytestmark = pytest.mark.timeout(300)

BERT_HIDDEN = 64  # tests/data/bert_small hidden_size
TEXT = "こんにちは。今日はいい天気ですね。"


@pytest.fixture(scope="module")
def voice_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from engine.bert import export_bert

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("neural_root")
    export_bert(BERT_SMALL, root, quantize=True, check=False)
    plain = write_random_voice(root / "pytorch" / "speakers" / "tiny", bert_channels=BERT_HIDDEN)
    export_model_dir(
        plain / "config.json",
        plain / "model.safetensors",
        plain / "style_vectors.npy",
        root / "onnx" / "speakers" / "tiny",
    )
    return root


def test_public_api_speaks_with_seeds(voice_root: Path, tmp_path: Path) -> None:
    from engine import TTS

    tts = TTS(device="cpu", bert_source=str(voice_root), cache_dir=tmp_path / "cache")
    tts.load("tiny", source=str(voice_root)).prepare(warmup=True)
    speaker = tts.speakers["tiny"]
    assert speaker.styles == ["Neutral", "Happy", "Sad"] and speaker.sample_rate == 44100
    a = speaker.generate(TEXT, seed=1, style="Happy")
    b = speaker.generate(TEXT, seed=1, style="Happy")
    c = speaker.generate(TEXT, seed=2, style="Happy")
    assert a.sr == 44100 and a.data.dtype == np.int16 and a.data.size > 44100 * 0.1
    np.testing.assert_array_equal(a.data, b.data)
    assert a.data.shape != c.data.shape or not np.array_equal(a.data, c.data)
    # Whole-sentence decoding (what generate uses); sub-sentence windows:
    # tests/engine/synth/test_windowed.py
    chunks = list(speaker.stream(TEXT, seed=1, style="Happy", whole_sentences=True))
    assert len(chunks) == 2  # one per sentence
    np.testing.assert_array_equal(np.concatenate([ch.data for ch in chunks]), a.data)

    async def collect():
        return await speaker.agenerate(TEXT, seed=1, style="Happy")

    np.testing.assert_array_equal(asyncio.run(collect()).data, a.data)


async def test_wyoming_server_serves_the_neural_voice(voice_root: Path, tmp_path: Path) -> None:
    from wyoming.audio import AudioStart
    from wyoming.client import AsyncTcpClient
    from wyoming.info import Describe, Info
    from wyoming.tts import Synthesize, SynthesizeVoice

    port = free_port()
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO_ROOT),
        HAYAKOE_CACHE=str(tmp_path / "cache"),
        OMP_NUM_THREADS="1",
    )
    env.pop("HF_TOKEN", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "wyoming_hayakoe",
        "--uri",
        f"tcp://127.0.0.1:{port}",
        "--voice",
        f"tiny={voice_root}",
        "--bert-source",
        str(voice_root),
        cwd=str(tmp_path),
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    log: list[str] = []
    try:
        assert proc.stderr is not None

        async def wait_ready() -> None:
            while line := await proc.stderr.readline():
                log.append(line.decode(errors="replace"))
                if "Ready" in log[-1]:
                    return
            raise AssertionError("server exited:\n" + "".join(log))

        await asyncio.wait_for(wait_ready(), 180)
        drain = asyncio.create_task(_drain(proc.stderr, log))
        async with AsyncTcpClient("127.0.0.1", port, read_timeout=60) as client:
            await client.write_event(Describe().event())
            info = Info.from_event(await client.read_event())
            voices = [v for p in info.tts for v in p.voices]
            tiny = next(v for v in voices if v.name == "tiny")
            assert [s.name for s in tiny.speakers or []] == ["Neutral", "Happy", "Sad"]
            await client.write_event(
                Synthesize(text=TEXT, voice=SynthesizeVoice(name="tiny")).event()
            )
            events = []
            while (event := await client.read_event()).type != "audio-stop":
                events.append(event)
        start = AudioStart.from_event(events[0])
        assert (start.rate, start.width, start.channels) == (44100, 2, 1)
        pcm = b"".join(e.payload or b"" for e in events if e.type == "audio-chunk")
        samples = np.frombuffer(pcm, np.int16)
        assert samples.size > 44100 * 0.1 and np.abs(samples).max() > 50  # random weights: quiet
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        drain.cancel()
        assert "Traceback" not in "".join(log)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def _drain(stream: asyncio.StreamReader, log: list[str]) -> None:
    while line := await stream.readline():
        log.append(line.decode(errors="replace"))
