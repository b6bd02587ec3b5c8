"""The VOICEVOX API on neural voices from AivisHub files (small random-weight test files
made by the real tools): AivisSpeech's style IDs, AudioQuery edits in the audio, speed."""

from __future__ import annotations

import copy
import io
import wave
from pathlib import Path

import aiohttp
import numpy as np
import pytest

from engine import TTS, EngineOptions
from engine.aivm import read_metadata
from wyoming_hayakoe.apis.options import EngineApiSettings
from wyoming_hayakoe.apis.style_ids import aivis_style_id

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def aivis_tts(aivm_files, layout_root: Path, tmp_path_factory: pytest.TempPathFactory):
    tts = TTS(
        "cpu",
        cache_dir=tmp_path_factory.mktemp("cache"),
        bert_source=str(layout_root),
        options=EngineOptions(threads=1, precision="fp32"),
    )
    tts.load("one", source=str(aivm_files.one))
    tts.load("bob", source=f"{aivm_files.multi}#speaker=1")
    yield tts.prepare()
    tts.close()


@pytest.fixture
async def api(start_server, aivis_tts):
    server = await start_server(dict(aivis_tts.speakers), engine_api=EngineApiSettings(port=0))
    assert server.engine_api is not None
    return f"http://127.0.0.1:{server.engine_api.port}"


def _frames(data: bytes) -> int:
    with wave.open(io.BytesIO(data)) as w:
        return w.getnframes()


def _seconds(data: bytes) -> float:
    """From the first to the last sample above 2 % of the peak (the sentence's own edges
    are margins of fixed length, not speech)."""
    with wave.open(io.BytesIO(data)) as w:
        rate = w.getframerate()
        samples = np.abs(np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(float))
    loud = np.flatnonzero(samples > 0.02 * samples.max())
    return (loud[-1] - loud[0]) / rate


async def test_style_ids_are_aivisspeech_ids(api: str, aivm_files):
    async with aiohttp.ClientSession() as s, s.get(f"{api}/speakers") as r:
        speakers = {sp["name"]: sp for sp in await r.json()}
    for name, path, index in (("one", aivm_files.one, 0), ("bob", aivm_files.multi, 1)):
        manifest_speaker = read_metadata(path).manifest.speakers[index]
        listed = speakers[name]
        assert listed["speaker_uuid"] == manifest_speaker.uuid
        expected = {
            st.name: aivis_style_id(manifest_speaker.uuid, st.local_id)
            for st in manifest_speaker.styles
        }
        assert {st["name"]: st["id"] for st in listed["styles"]} == expected


async def test_edited_accent_and_speed_in_the_audio(api: str):
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{api}/speakers") as r:
            style = {sp["name"]: sp for sp in await r.json()}["one"]["styles"][0]["id"]
        params = {"text": "今日は元気ですか。", "speaker": style}
        async with s.post(f"{api}/audio_query", params=params) as r:
            query = await r.json()
        query["prePhonemeLength"] = query["postPhonemeLength"] = 0.0

        async def synth(q: dict) -> bytes:
            async with s.post(f"{api}/synthesis", params={"speaker": style}, json=q) as r:
                assert r.status == 200, await r.text()
                return await r.read()

        plain = await synth(query)
        assert await synth(query) == plain  # the same query, the same audio
        edited = copy.deepcopy(query)
        phrase = edited["accent_phrases"][0]
        phrase["accent"] = 1 if phrase["accent"] != 1 else len(phrase["moras"])
        assert await synth(edited) != plain
        fast = copy.deepcopy(query)
        fast["speedScale"] = 1.5
        # the speech 1/1.5 as long (engine.synth.exact_speed: this voice's phones last 2-3
        # frames, which rounding each up on its own made 1.3x shorter)
        assert _seconds(plain) / _seconds(await synth(fast)) == pytest.approx(1.5, rel=0.05)
        # and the whole file, its silences before and after divided by the speed too
        edges = copy.deepcopy(fast)
        edges["prePhonemeLength"], edges["postPhonemeLength"] = 0.3, 0.6
        slow = copy.deepcopy(edges)
        slow["speedScale"] = 1.0
        assert _frames(await synth(slow)) / _frames(await synth(edges)) == pytest.approx(
            1.5, rel=0.05
        )
        # pitchScale as AivisSpeech Engine means it (a factor 1 + pitchScale), resynthesized:
        # the same length, other samples (its F0 is measured in tests/engine/neural/)
        unpitched = await synth(query)
        query["pitchScale"] = 0.1
        pitched = await synth(query)
        assert _frames(pitched) == _frames(unpitched) and pitched != unpitched
        query["pitchScale"] = 1.5
        async with s.post(f"{api}/synthesis", params={"speaker": style}, json=query) as r:
            assert r.status == 422  # past AivisSpeech Engine's range
            assert (await r.json())["detail"][0]["loc"] == ["body", "pitchScale"]


async def test_speaker_info_from_the_file(api: str, aivm_files):
    import base64

    meta = read_metadata(aivm_files.one)
    uuid = meta.manifest.speakers[0].uuid
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{api}/speaker_info", params={"speaker_uuid": uuid}) as r:
            assert r.status == 200
            info = await r.json()
        async with s.get(f"{api}/speakers") as r:
            ids = [st["id"] for sp in await r.json() if sp["name"] == "one" for st in sp["styles"]]
        async with s.get(f"{api}/speaker_info", params={"speaker_uuid": "nobody"}) as r:
            assert r.status == 404
    assert info["policy"] == meta.manifest.license
    assert [st["id"] for st in info["style_infos"]] == ids
    for text in [info["portrait"], *(st["icon"] for st in info["style_infos"])]:
        base64.b64decode(text, validate=True)  # base64 without the data: prefix (or empty)
    assert info["portrait"]  # aivmlib writes a speaker icon into every file


async def test_a_voice_removed_during_a_request_finishes_it(start_server, aivis_tts, aivm_files):
    """OpenAI's streamed speech in a voice that the library removes meanwhile: the request
    ends with all its audio, then the voice is gone from both APIs."""
    import asyncio

    server = await start_server(
        dict(aivis_tts.speakers), engine_api=EngineApiSettings(port=0), default_voice="one"
    )
    server.context.catalog.follow(lambda: aivis_tts.speakers)
    assert server.engine_api is not None
    base = f"http://127.0.0.1:{server.engine_api.port}"
    text = "今日は晴れです。" * 6
    body = {"model": "tts-1", "voice": "bob", "input": text, "response_format": "pcm"}
    try:
        async with aiohttp.ClientSession() as s:
            async with s.post(f"{base}/v1/audio/speech", json=body) as r:
                assert r.status == 200
                first = await r.content.readany()
                removing = asyncio.create_task(asyncio.to_thread(aivis_tts.remove, ["bob"]))
                rest = await r.read()
                assert await removing == ["bob"]
            assert len(first) + len(rest) > 24000 * 2  # more than a second of 24 kHz audio
            async with s.post(f"{base}/v1/audio/speech", json=body) as r:
                assert r.status == 400 and "bob" in (await r.json())["error"]["message"]
            async with s.get(f"{base}/speakers") as r:
                assert "bob" not in [sp["name"] for sp in await r.json()]
    finally:
        if "bob" not in aivis_tts.speakers:
            aivis_tts.add([("bob", f"{aivm_files.multi}#speaker=1")])
