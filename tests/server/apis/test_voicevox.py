"""The VOICEVOX / AivisSpeech engine API on a real server on loopback, driven by
`voicevox-client` (PyPI, tuna2134's aiohttp client; it parses a body as JSON only when the
Content-Type is exactly application/json) and by plain requests where it has no method."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import aiohttp
import numpy as np
import pytest

from engine.text import clear_user_dictionary, unwatch_user_dictionaries, watch_user_dictionaries
from wyoming_hayakoe.apis.options import EngineApiSettings
from wyoming_hayakoe.apis.style_ids import aivis_style_id
from wyoming_hayakoe.web.dictionary import ensure_dictionary_file
from wyoming_hayakoe.web.options import HttpSettings

vvclient = pytest.importorskip("vvclient")
from vvclient.http import Route  # noqa: E402


@pytest.fixture(autouse=True)
def _clean_dictionary():
    clear_user_dictionary()
    yield
    unwatch_user_dictionaries()
    clear_user_dictionary()


@pytest.fixture
async def api(start_server, tmp_path: Path):
    path = tmp_path / "dictionary.csv"
    ensure_dictionary_file(path)
    watch_user_dictionaries((path,))  # as the program does for --http-dict
    server = await start_server(
        engine_api=EngineApiSettings(port=0),
        http=HttpSettings(port=0, dictionary=path),
        user_dicts=(path,),
    )
    assert server.engine_api is not None
    return f"http://127.0.0.1:{server.engine_api.port}"


def _wav(data: bytes) -> tuple[int, int, int]:
    with wave.open(io.BytesIO(data)) as w:
        return w.getframerate(), w.getnchannels(), w.getnframes()


def test_aivisspeech_style_ids_from_its_sources():
    """Anneli (AivisSpeech's default model): speaker e756b8e4-…, styles 888753760…65 as
    AivisSpeech Engine lists them (its /speakers; the IDs its README and clients use)."""
    uuid = "e756b8e4-b606-4e15-99b1-3f9c6a1b2317"
    assert [aivis_style_id(uuid, i) for i in range(6)] == list(range(888753760, 888753766))
    assert all(
        0 <= aivis_style_id(f"ffffffff-0000-0000-0000-{i:012d}", 31) < 2**31 for i in range(50)
    )


def _speech_s(data: bytes) -> float:
    """Seconds from the first to the last sample above 2 % of the peak (either channel)."""
    with wave.open(io.BytesIO(data)) as w:
        rate, channels = w.getframerate(), w.getnchannels()
        samples = np.frombuffer(w.readframes(w.getnframes()), np.int16)
    level = np.abs(samples.reshape(-1, channels).astype(float)).max(axis=1)
    loud = np.flatnonzero(level > 0.02 * level.max())
    return float(loud[-1] - loud[0]) / rate


async def test_query_edit_synthesize_with_voicevox_client(api: str):
    async with vvclient.Client(api) as client:
        assert isinstance(await client.fetch_engine_version(), str)
        speakers = await client.http.request(Route("GET", "/speakers"))
        style = speakers[0]["styles"][0]["id"]
        await client.init_speaker(style)
        assert await client.is_inited_speaker(style) is True
        query = await client.create_audio_query("こんにちは、元気ですか？", style)
        phrases = query.data["accent_phrases"]
        assert [m["text"] for m in phrases[0]["moras"]] == ["コ", "ン", "ニ", "チ", "ワ"]
        assert phrases[0]["pause_mora"] is not None and phrases[1]["is_interrogative"] is True
        plain = await query.synthesis(style)
        rate, channels, frames = _wav(plain)
        assert channels == 1 and frames > rate * 0.5
        assert await query.synthesis(style) == plain  # same query, same audio
        query.data["speedScale"] = 1.5
        query.data["outputStereo"] = True
        query.data["outputSamplingRate"] = 24000
        fast = await query.synthesis(style)
        rate2, channels2, frames2 = _wav(fast)
        assert (rate2, channels2) == (24000, 2)
        # the engine's speed=1.5, the silences before and after divided by it too; this HTS
        # voice gives 1.43x: its engine keeps every state of a phoneme at least one 5 ms
        # frame long (neural voices: 1.5x, test_voicevox_neural)
        assert 1.38 < _speech_s(plain) / _speech_s(fast) < 1.55
        assert 1.38 < (frames / rate) / (frames2 / rate2) < 1.55


async def test_out_of_range_is_422_naming_the_field(api: str):
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{api}/speakers") as r:
            assert r.headers["Content-Type"] == "application/json"
            style = (await r.json())[0]["styles"][0]["id"]
        async with s.post(f"{api}/audio_query", params={"text": "あ", "speaker": style}) as r:
            query = await r.json()
        query["speedScale"] = 9
        async with s.post(f"{api}/synthesis", params={"speaker": style}, json=query) as r:
            assert r.status == 422
            assert r.headers["Content-Type"] == "application/json"
            detail = (await r.json())["detail"]
            assert detail[0]["loc"] == ["body", "speedScale"]
        query["speedScale"] = 1.0
        query["accent_phrases"][0]["accent"] = 7
        async with s.post(f"{api}/synthesis", params={"speaker": style}, json=query) as r:
            assert r.status == 422
            assert (await r.json())["detail"][0]["loc"] == ["body", "accent_phrases", 0, "accent"]
        async with s.post(f"{api}/synthesis", params={"speaker": 1 << 30}, json=query) as r:
            assert r.status in (404, 422)
        async with s.post(f"{api}/synthesis_morphing") as r:
            assert r.status == 501 and "synthesis_morphing" in (await r.json())["detail"]
        async with s.get(f"{api}/speakers", headers={"Host": "evil.example"}) as r:
            assert r.status == 403
        async with s.post(
            f"{api}/initialize_speaker",
            params={"speaker": style},
            headers={"Origin": "http://evil.example"},
        ) as r:
            assert r.status == 403


async def test_query_reads_as_wyoming_speaks(api: str):
    """Numbers and Latin words rewritten, every mora katakana, sentence ends as ``。``
    pauses (the voice renders them as a text's sentences), and the query speaks."""
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{api}/speakers") as r:
            style = (await r.json())[0]["styles"][0]["id"]
        params = {"text": "今日は3月5日です。Wi-Fiは遅い。", "speaker": style}
        async with s.post(f"{api}/audio_query", params=params) as r:
            query = await r.json()
        phrases = query["accent_phrases"]
        reading = "".join(m["text"] for p in phrases for m in p["moras"])
        assert "サンガツ" in reading and "ワイファイ" in reading
        pauses = [p["pause_mora"]["text"] for p in phrases if p["pause_mora"]]
        assert pauses == ["。"]  # between the two sentences; none after the last
        async with s.post(f"{api}/synthesis", params={"speaker": style}, json=query) as r:
            assert r.status == 200
            rate, _, frames = _wav(await r.read())
            assert frames > rate


async def test_pause_length_between_sentences(api: str):
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{api}/speakers") as r:
            style = (await r.json())[0]["styles"][0]["id"]
        params = {"text": "はい。いいえ。", "speaker": style}
        async with s.post(f"{api}/audio_query", params=params) as r:
            query = await r.json()
        lengths = {}
        for pause in (0.0, 1.5):
            query["pauseLength"] = pause
            async with s.post(f"{api}/synthesis", params={"speaker": style}, json=query) as r:
                rate, _, frames = _wav(await r.read())
                lengths[pause] = frames / rate
        assert lengths[1.5] - lengths[0.0] == pytest.approx(1.5, abs=0.05)


async def test_kana_and_mora_data(api: str):
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{api}/speakers") as r:
            style = (await r.json())[0]["styles"][0]["id"]
        params = {"text": "コンニチワ'、ゲ'ンキデスカ？", "speaker": style, "is_kana": "true"}
        async with s.post(f"{api}/accent_phrases", params=params) as r:
            phrases = await r.json()
        assert [p["accent"] for p in phrases] == [5, 1]
        async with s.post(f"{api}/validate_kana", params={"text": "コンニチワ"}) as r:
            assert r.status == 400  # no accent mark
        phrases[1]["accent"] = 3
        async with s.post(f"{api}/mora_data", params={"speaker": style}, json=phrases) as r:
            again = await r.json()
        pitches = [m["pitch"] > 5.6 for m in again[1]["moras"]]
        assert pitches[:4] == [False, True, True, False]


async def test_user_dictionary_word_added_and_used(api: str):
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{api}/speakers") as r:
            style = (await r.json())[0]["styles"][0]["id"]
        word = {"surface": "早声", "pronunciation": "ハヤコエ", "accent_type": "1"}
        async with s.post(f"{api}/user_dict_word", params=word) as r:
            assert r.status == 200
            word_uuid = await r.json()
        async with s.get(f"{api}/user_dict") as r:
            assert (await r.json())[word_uuid]["pronunciation"] == "ハヤコエ"
        async with s.post(f"{api}/audio_query", params={"text": "早声", "speaker": style}) as r:
            query = await r.json()
        morae = [m["text"] for p in query["accent_phrases"] for m in p["moras"]]
        assert morae == ["ハ", "ヤ", "コ", "エ"]
        assert query["accent_phrases"][0]["accent"] == 1
        async with s.delete(f"{api}/user_dict_word/{word_uuid}") as r:
            assert r.status == 204
        async with s.get(f"{api}/user_dict") as r:
            assert word_uuid not in await r.json()
