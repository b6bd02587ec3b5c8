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
