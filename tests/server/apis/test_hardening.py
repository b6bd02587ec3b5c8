"""The engine APIs on bad input: every refusal in its documented JSON shape with
``Content-Type: application/json`` exactly, the server answering normally after; the token."""

from __future__ import annotations

import aiohttp
import pytest

from engine import EMBEDDED_VOICE_NAME
from wyoming_hayakoe.apis.errors import MAX_BODY
from wyoming_hayakoe.apis.options import EngineApiSettings

openai = pytest.importorskip("openai")


async def _base(start_server, **fields) -> str:
    server = await start_server(engine_api=EngineApiSettings(port=0, **fields))
    assert server.engine_api is not None
    return f"http://127.0.0.1:{server.engine_api.port}"


BAD_VOICEVOX = [
    ("POST", "/audio_query", {"text": "あ"}, None, 422, ["query", "speaker"]),
    ("POST", "/audio_query", {"speaker": "x", "text": "あ"}, None, 422, ["query", "speaker"]),
    ("POST", "/audio_query", {"speaker": "SID"}, None, 422, ["query", "text"]),
    ("POST", "/synthesis", {"speaker": "SID"}, b"{not json", 422, ["body"]),
    ("POST", "/synthesis", {"speaker": "SID"}, b"[" * 100 + b"]" * 100, 422, ["body"]),
    ("POST", "/synthesis", {"speaker": "SID"}, b"\xff\xfe", 422, ["body"]),
    ("POST", "/synthesis", {"speaker": "SID"}, b"[]", 422, ["body"]),
    (
        "POST",
        "/synthesis",
        {"speaker": "SID"},
        b'{"accent_phrases": [{"moras": [{"text": "Q"}], "accent": 1}]}',
        422,
        ["body", "accent_phrases", 0, "moras", 0, "text"],
    ),
    (
        "POST",
        "/synthesis",
        {"speaker": "SID"},
        b'{"accent_phrases": [], "outputSamplingRate": 12345}',
        422,
        ["body", "outputSamplingRate"],
    ),
    (
        "POST",
        "/synthesis",
        {"speaker": "SID"},
        b'{"accent_phrases": [], "volumeScale": "loud"}',
        422,
        ["body", "volumeScale"],
    ),
    ("POST", "/connect_waves", None, b'["not base64!"]', 422, ["body", 0]),
    ("POST", "/user_dict_word", {"surface": "x"}, None, 422, ["query", "pronunciation"]),
]


@pytest.mark.parametrize("case", BAD_VOICEVOX, ids=lambda c: f"{c[1]}:{c[-1][-1]}")
async def test_voicevox_refusals_are_fastapi_shaped(start_server, case):
    method, path, params, body, status, loc = case
    base = await _base(start_server)
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{base}/speakers") as r:
            sid = str((await r.json())[0]["styles"][0]["id"])
        params = {k: (sid if v == "SID" else v) for k, v in (params or {}).items()}
        headers = {"Content-Type": "application/json"} if body is not None else {}
        async with s.request(method, base + path, params=params, data=body, headers=headers) as r:
            assert r.status == status, await r.text()
            assert r.headers["Content-Type"] == "application/json"
            detail = (await r.json())["detail"]
            assert detail[0]["loc"] == loc and detail[0]["msg"] and detail[0]["type"]
            if params.get("speaker") is None and path == "/audio_query":
                assert detail[0]["type"] == "missing"
        async with s.post(f"{base}/audio_query", params={"speaker": sid, "text": "あ"}) as r:
            assert r.status == 200  # the server goes on


async def test_sizes_and_paths(start_server):
    base = await _base(start_server)
    async with aiohttp.ClientSession() as s:
        async with s.post(f"{base}/synthesis", data=b"x" * (MAX_BODY + 10)) as r:
            assert r.status == 413
            assert isinstance((await r.json())["detail"], str)
        async with s.get(f"{base}/no_such_path") as r:
            assert r.status == 404 and (await r.json())["detail"] == "Not Found"
        async with s.get(f"{base}/synthesis") as r:
            assert r.status == 405
        async with s.post(f"{base}/v1/audio/speech", data=b"{") as r:
            assert r.status == 400
            error = (await r.json())["error"]
            assert error["type"] == "invalid_request_error" and error["message"]


async def test_token_is_the_api_key(start_server):
    base = await _base(start_server, token="s3cret")
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{base}/speakers") as r:
            assert r.status == 401
        async with s.get(f"{base}/speakers", headers={"Authorization": "Bearer s3cret"}) as r:
            assert r.status == 200
    wrong = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="nope", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        await wrong.models.list()
    await wrong.close()
    right = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="s3cret", max_retries=0)
    speech = await right.audio.speech.create(
        model="tts-1", voice=EMBEDDED_VOICE_NAME, input="はい。", response_format="wav"
    )
    assert speech.content[:4] == b"RIFF"
    await right.close()


def test_settings_refuse_an_open_bind_without_a_token(capsys):
    from wyoming_hayakoe.settings import parse_settings

    with pytest.raises(SystemExit):
        parse_settings(["--engine-api-port", "10101", "--engine-api-host", "0.0.0.0"])
    assert "need --engine-api-token" in capsys.readouterr().err
    s = parse_settings(["--engine-api-port", "10101"])
    assert s.engine_api is not None and (s.engine_api.host, s.engine_api.port) == (
        "127.0.0.1",
        10101,
    )
    assert parse_settings([]).engine_api is None


async def test_local_apps_may_call_from_the_browser_others_may_not(start_server):
    """A page on this machine (an AITuber app on localhost:3000) gets CORS answers, as from
    AivisSpeech Engine; a page from elsewhere gets none and its writes are refused."""
    base = await _base(start_server, token="s3cret")
    local = {"Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site"}
    async with aiohttp.ClientSession() as s:
        preflight = {**local, "Access-Control-Request-Method": "POST"}
        async with s.options(f"{base}/audio_query", headers=preflight) as r:
            assert r.status == 204
            assert r.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
            assert "Authorization" in r.headers["Access-Control-Allow-Headers"]
        auth = {"Authorization": "Bearer s3cret"}
        async with s.get(f"{base}/speakers", headers={**local, **auth}) as r:
            assert r.status == 200
            assert r.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
            sid = (await r.json())[0]["styles"][0]["id"]
        params = {"speaker": sid, "text": "はい"}
        async with s.post(f"{base}/audio_query", params=params, headers={**local, **auth}) as r:
            assert r.status == 200
        elsewhere = {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", **auth}
        async with s.post(f"{base}/audio_query", params=params, headers=elsewhere) as r:
            assert r.status == 403
            assert "Access-Control-Allow-Origin" not in r.headers
        async with s.options(
            f"{base}/audio_query", headers={"Origin": "https://evil.example"}
        ) as r:
            assert r.status == 401 and "Access-Control-Allow-Origin" not in r.headers


def _wav(
    rate: int = 24000,
    channels: int = 1,
    bits: int = 16,
    frames: int = 4,
    claimed: int | None = None,
) -> str:
    """A base64 PCM WAV with the header fields given (`claimed`: the data chunk's size
    field, when it is to lie about the bytes that follow)."""
    import base64
    import struct

    block = channels * bits // 8
    data = bytes(range(256)) * (frames * block // 256 + 1)
    data = data[: frames * block]
    size = len(data) if claimed is None else claimed
    head = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt "
    head += struct.pack("<IHHIIHH", 16, 1, channels, rate, (rate * block) % 2**32, block, bits)
    return base64.b64encode(head + b"data" + struct.pack("<I", size) + data).decode()


BAD_WAVS = {
    "rate 4e9": ([_wav(rate=4_000_000_000)], 0, "4000000000"),
    "rate 0": ([_wav(rate=0)], 0, "rate"),
    "1000 channels": ([_wav(channels=1000)], 0, "1000 channels"),
    "3 channels": ([_wav(channels=3)], 0, "3 channels"),
    "8-bit": ([_wav(bits=8)], 0, "8-bit"),
    "second of two": ([_wav(), _wav(rate=500_000)], 1, "500000"),
    "data cut short": ([_wav(), _wav(frames=10, claimed=400)], 1, "400 bytes"),
}


@pytest.mark.parametrize("case", BAD_WAVS.values(), ids=BAD_WAVS.keys())
async def test_connect_waves_refuses_a_bad_header_naming_the_item(start_server, case):
    """A header the answer could not carry (a rate past 32 bits was a 500; a rate of 0 or
    1000 channels answered a broken WAV) is a 422 naming the item; the server goes on."""
    waves, index, said = case
    base = await _base(start_server)
    async with aiohttp.ClientSession() as s:
        async with s.post(f"{base}/connect_waves", json=waves) as r:
            assert r.status == 422, await r.text()
            assert r.headers["Content-Type"] == "application/json"
            (detail,) = (await r.json())["detail"]
        assert detail["loc"] == ["body", index] and said in detail["msg"], detail
        async with s.post(f"{base}/connect_waves", json=[_wav(), _wav()]) as r:
            assert r.status == 200  # the server goes on


async def test_connect_waves_joins_and_bounds_its_answer(start_server, monkeypatch):
    """Two stereo WAVs joined are one stereo WAV of both their frames; past
    `MAX_JOINED_BYTES` of samples the request is a 422 naming the WAV that passed it."""
    import io
    import wave

    from wyoming_hayakoe.apis import voicevox

    base = await _base(start_server)
    async with aiohttp.ClientSession() as s:
        waves = [_wav(rate=48000, channels=2, frames=100), _wav(rate=48000, channels=2, frames=50)]
        async with s.post(f"{base}/connect_waves", json=waves) as r:
            assert r.status == 200, await r.text()
            with wave.open(io.BytesIO(await r.read())) as w:
                assert (w.getframerate(), w.getnchannels(), w.getnframes()) == (48000, 2, 150)
        monkeypatch.setattr(voicevox, "MAX_JOINED_BYTES", 1000)
        waves = [_wav(frames=200), _wav(frames=200), _wav(frames=200)]  # 400 bytes each
        async with s.post(f"{base}/connect_waves", json=waves) as r:
            assert r.status == 422, await r.text()
            (detail,) = (await r.json())["detail"]
        assert detail["loc"] == ["body", 2] and "1000" in detail["msg"], detail
        async with s.post(f"{base}/connect_waves", json=waves[:2]) as r:
            assert r.status == 200
            assert len(await r.read()) == 44 + 800
