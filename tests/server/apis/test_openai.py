"""OpenAI's speech API on a real server on loopback, driven by the `openai` SDK (PyPI)
with `base_url`: every response_format decoded back (PyAV), streaming, voices, models."""

from __future__ import annotations

import io

import numpy as np
import pytest

from engine import EMBEDDED_VOICE_NAME
from wyoming_hayakoe.apis.options import EngineApiSettings

openai = pytest.importorskip("openai")
av = pytest.importorskip("av")

TEXT = "こんにちは。今日は良い天気です。"


@pytest.fixture
async def client(start_server):
    server = await start_server(engine_api=EngineApiSettings(port=0))
    assert server.engine_api is not None
    c = openai.AsyncOpenAI(
        base_url=f"http://127.0.0.1:{server.engine_api.port}/v1", api_key="unused", max_retries=0
    )
    yield c
    await c.close()


def _decoded_seconds(data: bytes, fmt: str) -> tuple[float, int]:
    if fmt == "pcm":
        return len(data) / 2 / 24000, 24000
    with av.open(io.BytesIO(data)) as container:
        frames = list(container.decode(audio=0))
    rate = frames[0].sample_rate
    return sum(f.samples for f in frames) / rate, rate


@pytest.mark.parametrize("fmt", ["mp3", "opus", "aac", "flac", "wav", "pcm"])
async def test_every_format_decodes_back(client, fmt: str):
    response = await client.audio.speech.create(
        model="tts-1", voice=EMBEDDED_VOICE_NAME, input=TEXT, response_format=fmt
    )
    seconds, rate = _decoded_seconds(response.content, fmt)
    assert 1.0 < seconds < 10.0
    if fmt in ("wav", "pcm", "flac", "mp3", "aac"):
        assert rate == 24000
    if fmt == "pcm":
        samples = np.frombuffer(response.content, np.int16)
        assert np.abs(samples).max() > 1000  # speech, not silence


async def test_streaming_chunks_and_speed(client):
    async with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice=EMBEDDED_VOICE_NAME, input=TEXT, response_format="pcm"
    ) as response:
        assert response.headers.get("transfer-encoding") == "chunked"
        chunks = [c async for c in response.iter_bytes() if c]
    normal = sum(map(len, chunks))
    fast = await client.audio.speech.create(
        model="tts-1", voice=EMBEDDED_VOICE_NAME, input=TEXT, response_format="pcm", speed=2.0
    )
    assert 0.4 * normal < len(fast.content) < 0.85 * normal  # pauses do not scale fully


async def test_unknown_voice_lists_them_once(client):
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.speech.create(model="tts-1", voice="nobody", input=TEXT)
    message = caught.value.body["message"]  # type: ignore[index]
    assert "'nobody'" in message and message.count(f"{EMBEDDED_VOICE_NAME}:Neutral") == 1
    with pytest.raises(openai.BadRequestError):
        await client.audio.speech.create(
            model="tts-1", voice=EMBEDDED_VOICE_NAME, input=TEXT, speed=9.0
        )


async def test_voices_and_models(client):
    models = await client.models.list()
    assert "tts-1" in [m.id for m in models.data]
    voices = await client.get("/audio/voices", cast_to=object)
    listed = {v["id"]: v["name"] for v in voices["voices"]}  # Open WebUI reads them so
    assert listed[EMBEDDED_VOICE_NAME] == EMBEDDED_VOICE_NAME
    assert listed[f"{EMBEDDED_VOICE_NAME}:Neutral"] == f"{EMBEDDED_VOICE_NAME} (Neutral)"
    assert voices["default"] == EMBEDDED_VOICE_NAME
    assert voices["openai_voices"]["alloy"] == EMBEDDED_VOICE_NAME
    assert len(voices["openai_voices"]) == 13
