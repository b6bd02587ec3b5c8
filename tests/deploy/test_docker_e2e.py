"""The images' life cycle without Docker: bake voices at "build time", then serve them with
the store gone and the network switched off, and speak.

1. A hayakoe-layout root with small models (test BERT exported to int8 ONNX, a random
   synthesizer) is uploaded to an S3 store (moto on loopback).
2. docker/bake-voices.sh — the script the voices stage runs — downloads it with the real
   `wyoming-hayakoe download`, credentials from a secret file as BuildKit would mount it.
3. The store is stopped. docker/entrypoint.sh — the images' entry point — starts the real
   server from the cache, with the runtime environment of the images (HAYAKOE_OFFLINE,
   HF_HUB_OFFLINE, and the build-time AWS_ENDPOINT_URL_S3, since S3 caches are kept per
   endpoint) or with only HF_HUB_OFFLINE and the dead endpoint still configured.
4. docker/healthcheck.py turns healthy; a Wyoming client asks `describe` and `synthesize`
   and gets audible audio from the baked voice.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")
boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto.server")

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeVoice

from tests.helpers.net import free_port
from tests.helpers.paths import REPO_ROOT
from tests.helpers.stores import moto_server
from tests.helpers.voices import LAYOUT_VOICE

pytestmark = pytest.mark.slow

DOCKER = REPO_ROOT / "docker"
VOICE = LAYOUT_VOICE
TEXT = "こんにちは。今日はいい天気ですね。"


@pytest.fixture(scope="module", autouse=True)
def console_script(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The scripts run `wyoming-hayakoe` from PATH. Use the installed console script (as in
    the images and CI); where the project is not installed, a shim that runs the module."""
    global _BIN
    _BIN = Path(sys.executable).parent
    if not (_BIN / "wyoming-hayakoe").exists():
        _BIN = tmp_path_factory.mktemp("bin")
        shim = _BIN / "wyoming-hayakoe"
        shim.write_text(
            f'#!/bin/sh\nPYTHONPATH="{REPO_ROOT}${{PYTHONPATH:+:$PYTHONPATH}}" '
            f'exec "{sys.executable}" -m wyoming_hayakoe "$@"\n'
        )
        shim.chmod(0o755)


_BIN = Path(sys.executable).parent


def _clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "HF_", "HAYAKOE_", "VOICES", "BERT_SOURCE"))
    }
    env["PATH"] = os.pathsep.join(
        [str(_BIN), str(Path(sys.executable).parent), env.get("PATH", "")]
    )
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env.update(extra)
    return env


def _bake(layout_root: Path, work: Path, device: str) -> tuple[Path, str, str]:
    """Run bake-voices.sh for `device` against an S3 store holding `layout_root`, then stop
    the store. Returns (cache, source URI, the dead endpoint)."""
    secrets = work / "secrets"
    secrets.mkdir(exist_ok=True)
    (secrets / "aws").write_text(
        "[default]\naws_access_key_id = testing\naws_secret_access_key = testing-secret-key\n"
    )
    cache = work / "cache"
    with moto_server() as endpoint:
        bucket = f"voices-{uuid.uuid4().hex[:10]}"
        s3 = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing-secret-key",
        )
        s3.create_bucket(Bucket=bucket)
        for path in sorted(layout_root.rglob("*")):
            if path.is_file():
                s3.upload_file(
                    str(path), bucket, f"hayakoe/{path.relative_to(layout_root).as_posix()}"
                )
        source = f"s3://{bucket}/hayakoe"
        proc = subprocess.run(
            [str(DOCKER / "bake-voices.sh")],
            env=_clean_env(
                VOICES=f"{VOICE}={source}",
                BERT_SOURCE=source,
                DEVICE=device,
                HAYAKOE_CACHE=str(cache),
                HAYAKOE_SECRETS_DIR=str(secrets),
                AWS_ENDPOINT_URL_S3=endpoint,
                AWS_DEFAULT_REGION="us-east-1",
            ),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert not any(
        "testing-secret-key" in p.read_text(errors="ignore")
        for p in cache.rglob("*")
        if p.is_file() and p.stat().st_size < 1 << 20
    )
    return cache, source, endpoint


def _files(cache: Path) -> list[str]:
    return [p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file()]


@pytest.fixture(scope="module")
def baked(
    layout_root: Path, tmp_path_factory: pytest.TempPathFactory, console_script: None
) -> tuple[Path, str, str]:
    """The CPU images' voices stage."""
    cache, source, endpoint = _bake(layout_root, tmp_path_factory.mktemp("bake"), "cpu")
    files = _files(cache)
    assert any(f.endswith("onnx/bert/q8/bert_q8.onnx") for f in files), files
    assert any(f.endswith(f"onnx/speakers/{VOICE}/synthesizer.onnx") for f in files), files
    assert not any("/pytorch/" in f for f in files), "the cpu image bakes only ONNX files"
    return cache, source, endpoint


def test_cuda_variant_bakes_the_pytorch_files_without_a_gpu(layout_root, tmp_path, console_script):
    """The CUDA image's voices stage runs on a build machine with no GPU."""
    cache, _, _ = _bake(layout_root, tmp_path, "cuda")
    files = _files(cache)
    assert any(f.endswith("pytorch/bert/fp32/model.safetensors") for f in files), files
    assert any(f.endswith(f"pytorch/speakers/{VOICE}/model.safetensors") for f in files), files
    assert any(f.endswith("bert/tokenizer/vocab.txt") for f in files), files
    assert not any("/onnx/" in f for f in files), "the cuda image bakes only PyTorch files"


async def _speak(port: int) -> tuple[Info, np.ndarray, int]:
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Describe().event())
        while True:
            event = await asyncio.wait_for(client.read_event(), 30)
            assert event is not None
            if Info.is_type(event.type):
                info = Info.from_event(event)
                break
        await client.write_event(Synthesize(text=TEXT, voice=SynthesizeVoice(name=VOICE)).event())
        chunks: list[bytes] = []
        rate = 0
        while True:
            event = await asyncio.wait_for(client.read_event(), 120)
            assert event is not None, "the server closed the connection mid-synthesis"
            if AudioStart.is_type(event.type):
                start = AudioStart.from_event(event)
                rate = start.rate
                assert start.width == 2 and start.channels == 1
            elif AudioChunk.is_type(event.type):
                chunks.append(AudioChunk.from_event(event).audio)
            elif AudioStop.is_type(event.type):
                break
    return info, np.frombuffer(b"".join(chunks), dtype=np.int16), rate


@pytest.mark.parametrize(
    "offline_env",
    [
        {"HAYAKOE_OFFLINE": "1", "HF_HUB_OFFLINE": "1"},  # what the images set
        {"HF_HUB_OFFLINE": "1"},  # only the Hub switched off: S3's endpoint is simply gone
    ],
    ids=["image-env", "store-gone"],
)
def test_baked_voice_speaks_with_no_network(baked, tmp_path, offline_env):
    cache, source, dead_endpoint = baked
    run_cache = tmp_path / "cache"
    shutil.copytree(cache, run_cache)  # the image's copy; each run starts from the baked state
    port = free_port()
    env = _clean_env(
        HAYAKOE_URI=f"tcp://127.0.0.1:{port}",
        HAYAKOE_DEVICE="cpu",
        HAYAKOE_CACHE=str(run_cache),
        HAYAKOE_VOICES=f"{VOICE}={source}",
        AWS_ENDPOINT_URL_S3=dead_endpoint,
        AWS_DEFAULT_REGION="us-east-1",
        OMP_NUM_THREADS="1",
        **offline_env,
    )
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [str(DOCKER / "entrypoint.sh"), "--bert-source", source, "--no-warmup"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, (tmp_path / "server.log").read_text()[-4000:]
            check = subprocess.run(
                [sys.executable, str(DOCKER / "healthcheck.py"), "--timeout", "5"],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            if check.returncode == 0:
                break
            assert time.monotonic() < deadline, (
                check.stderr + (tmp_path / "server.log").read_text()[-4000:]
            )
            time.sleep(1)
        info, audio, rate = asyncio.run(_speak(port))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
        log.close()
    names = [v.name for p in info.tts for v in p.voices]
    assert VOICE in names
    assert rate > 0 and audio.size > rate // 10, f"{audio.size} samples at {rate} Hz"
    assert np.abs(audio).max() > 100, "the voice must be audible"
    server_log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in server_log, server_log[-4000:]
