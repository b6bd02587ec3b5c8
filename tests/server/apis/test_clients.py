"""The apps people point at the engine APIs, replayed call for call against a real server on
loopback, written from each app's published behaviour (its requests, headers and parsing),
not copied:

- Home Assistant's VOICEVOX TTS integration (HACS ``voicevox_tts`` 1.1.0): its config flow
  (``GET /speakers``, its option list), its setup (``GET /`` + ``raise_for_status``), and its
  ``async_get_tts_audio`` (``POST /audio_query`` → ``volumeScale``/``pitchScale``/
  ``speedScale`` set → ``POST /synthesis`` → the body handed to HA as a WAV) over the whole
  range of each option it offers;
- Open WebUI (its audio router): ``GET {base}/audio/models`` and ``{base}/audio/voices``
  without a token, parsed as it parses them (``data["models"]``, ``{v["id"]: v["name"]}``,
  its fallback to OpenAI's six names when either fails), ``POST {base}/audio/speech`` with
  ``{"input", "voice", "model"}`` and the API key, the answer saved as an MP3;
- Home Assistant's OpenAI TTS integration (HACS ``openai_tts`` 3.7): its key check (``"input":
  "."``, ``"voice": "alloy"``, any status ≥ 400 is "cannot connect") and its request
  (``response_format`` mp3, ``speed``, OpenAI's voice names only).
"""

from __future__ import annotations

import asyncio
import io
import logging
import wave
from pathlib import Path

import aiohttp
import numpy as np
import pytest

from engine import EMBEDDED_VOICE_NAME, TTS, EngineOptions
from wyoming_hayakoe.apis.openai_voices import OPENAI_VOICE_NAMES
from wyoming_hayakoe.apis.options import EngineApiSettings

av = pytest.importorskip("av")

TEXT = "こんにちは。今日は良い天気です。"
TOKEN = "not-a-real-token"
STYLE = f"{EMBEDDED_VOICE_NAME}:High"


async def _base(start_server, **fields) -> str:
    server = await start_server(engine_api=EngineApiSettings(port=0, **fields))
    assert server.engine_api is not None
    return f"http://127.0.0.1:{server.engine_api.port}"


def _wav(data: bytes) -> tuple[int, np.ndarray]:
    with wave.open(io.BytesIO(data)) as w:
        assert w.getsampwidth() == 2
        return w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), np.int16)


def _mp3_seconds(data: bytes) -> float:
    with av.open(io.BytesIO(data)) as container:
        frames = list(container.decode(audio=0))
    return sum(f.samples for f in frames) / frames[0].sample_rate


# -- Home Assistant's VOICEVOX TTS integration ---------------------------------------------


class HaVoicevox:
    """What ``voicevox_tts`` 1.1.0 sends: plain aiohttp, no token, a 5 s timeout on checks."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session, self.base = session, base

    async def config_flow(self) -> dict[str, str]:
        """``async_step_user``: the speaker list its form offers, ``{str(id): label}``."""
        async with self.session.get(f"{self.base}/speakers", timeout=5) as response:
            response.raise_for_status()
            speakers = await response.json()
        return {
            str(style["id"]): f"{speaker['name']}: {style['name']} (ID: {style['id']})"
            for speaker in speakers
            for style in speaker["styles"]
        }

    async def setup(self) -> None:
        """``async_setup_entry`` (and the reconfigure step): ``GET /``, ``raise_for_status``."""
        async with self.session.get(f"{self.base}/", timeout=5) as response:
            response.raise_for_status()

    async def tts(self, message: str, speaker: int, volume: float, pitch: float, speed: float):
        """``async_get_tts_audio``: whatever /synthesis answers is handed to HA as a WAV."""
        params = {"text": message, "speaker": speaker}
        async with self.session.post(f"{self.base}/audio_query", params=params) as response:
            query = await response.json()
            query["volumeScale"] = volume
            query["pitchScale"] = pitch
            query["speedScale"] = speed
        async with self.session.post(
            f"{self.base}/synthesis", params={"speaker": speaker}, json=query
        ) as response:
            return "wav", await response.read()


async def test_ha_voicevox_sets_up_lists_voices_and_speaks(start_server):
    base = await _base(start_server)
    async with aiohttp.ClientSession() as session:
        ha = HaVoicevox(session, base)
        options = await ha.config_flow()
        await ha.setup()  # was a 404: ConfigEntryNotReady
        label = next(v for v in options.values() if v.startswith(f"{EMBEDDED_VOICE_NAME}: "))
        assert label.endswith(")") and "(ID: " in label
        speaker = int(next(k for k, v in options.items() if v == label))
        kind, data = await ha.tts("こんにちは。", speaker, 1.0, 0.0, 1.0)
    rate, samples = _wav(data)
    assert kind == "wav" and rate > 8000 and np.abs(samples).max() > 1000


@pytest.mark.parametrize(
    ("volume", "speed"),
    [(0.5, 1.0), (20.0, 1.0), (1.0, 0.5), (1.0, 3.0), (20.0, 3.0), (0.5, 0.5)],
    ids=lambda v: str(v),
)
async def test_ha_voicevox_every_volume_and_speed_it_offers_is_a_wav(start_server, volume, speed):
    """Its form: volume 0.5-20.0, speed 0.5-3.0 (voluptuous ranges); the ends of each."""
    base = await _base(start_server)
    async with aiohttp.ClientSession() as session:
        ha = HaVoicevox(session, base)
        speaker = int(next(iter(await ha.config_flow())))
        _, normal = await ha.tts("こんにちは。", speaker, 1.0, 0.0, 1.0)
        _, data = await ha.tts("こんにちは。", speaker, volume, 0.0, speed)
    _, reference = _wav(normal)
    _, samples = _wav(data)  # a 422 body here was handed to HA as if it were audio
    ratio = samples.size / reference.size  # the embedded HTS voice keeps a floor per phoneme
    assert (ratio < 0.75) if speed > 1 else (ratio > 1.5) if speed < 1 else (0.9 < ratio < 1.1)
    loudness = np.sqrt(np.mean(samples.astype(float) ** 2))
    reference_loudness = np.sqrt(np.mean(reference.astype(float) ** 2))
    if volume < 1:
        assert loudness < 0.7 * reference_loudness
    elif volume > 1:
        assert loudness > 1.5 * reference_loudness
        assert np.abs(samples).max() < 32767  # limited, not clipped


@pytest.fixture(scope="module")
def neural_tts(aivm_files, layout_root: Path, tmp_path_factory: pytest.TempPathFactory):
    tts = TTS(
        "cpu",
        cache_dir=tmp_path_factory.mktemp("cache"),
        bert_source=str(layout_root),
        options=EngineOptions(threads=1, precision="fp32"),
    )
    tts.load("one", source=str(aivm_files.one))
    yield tts.prepare()
    tts.close()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("pitch", [-0.15, 0.15])
async def test_ha_voicevox_pitch_range_on_a_neural_voice_is_a_wav(start_server, neural_tts, pitch):
    server = await start_server(dict(neural_tts.speakers), engine_api=EngineApiSettings(port=0))
    base = f"http://127.0.0.1:{server.engine_api.port}"
    async with aiohttp.ClientSession() as session:
        ha = HaVoicevox(session, base)
        speaker = int(next(iter(await ha.config_flow())))
        _, data = await ha.tts("こんにちは。", speaker, 1.0, pitch, 1.0)
    _wav(data)  # was a 422 body


async def test_ha_voicevox_gets_the_portal_without_a_token_but_nothing_else(start_server):
    """With a token (the add-on's engine API) the integration, which sends none, passes its
    setup check but cannot list voices: its form says so rather than failing later."""
    base = await _base(start_server, token=TOKEN)
    async with aiohttp.ClientSession() as session:
        ha = HaVoicevox(session, base)
        await ha.setup()
        with pytest.raises(aiohttp.ClientResponseError) as caught:
            await ha.config_flow()
    assert caught.value.status == 401


async def test_portal_page_names_the_engine_and_links_what_it_serves(start_server):
    from engine import __version__

    base = await _base(start_server)
    async with aiohttp.ClientSession() as session:
        async with session.get(base + "/") as response:
            assert response.status == 200
            assert response.content_type == "text/html"
            page = await response.text()
        async with session.head(base + "/") as response:
            assert response.status == 200
        async with session.get(base + "/", headers={"Host": "evil.example"}) as response:
            assert response.status == 403  # the Host rule stays
    assert f"wyoming-hayakoe {__version__}" in page
    for path in ("/speakers", "/v1/audio/voices", "/v1/audio/models", "/version"):
        assert f'href="{path}"' in page
    base = await _base(start_server, token=TOKEN)
    async with aiohttp.ClientSession() as session:
        async with session.get(base + "/") as response:
            anonymous = await response.text()
        async with session.post(base + "/") as response:
            assert response.status == 401  # only GET/HEAD of the page is public
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with session.get(base + "/", headers=auth) as response:
            assert __version__ in await response.text()
    assert response.status == 200 and __version__ not in anonymous and "Bearer" in anonymous


# -- Open WebUI ------------------------------------------------------------------------------


class OpenWebUI:
    """Open WebUI's audio router with ``TTS_ENGINE=openai`` and a custom base URL."""

    SIX = {n: n for n in ("alloy", "echo", "fable", "onyx", "nova", "shimmer")}

    def __init__(self, session: aiohttp.ClientSession, base_url: str, key: str) -> None:
        self.session, self.base_url, self.key = session, base_url, key

    async def models(self) -> list[dict]:
        try:  # requests.get(f"{base}/audio/models"): no headers
            async with self.session.get(f"{self.base_url}/audio/models") as response:
                response.raise_for_status()
                return (await response.json()).get("models", [])
        except Exception:
            return [{"id": "tts-1"}, {"id": "tts-1-hd"}]

    async def voices(self) -> dict[str, str]:
        try:  # requests.get(f"{base}/audio/voices"): no headers
            async with self.session.get(f"{self.base_url}/audio/voices") as response:
                response.raise_for_status()
                data = await response.json()
                return {voice["id"]: voice["name"] for voice in data.get("voices", [])}
        except Exception:
            return dict(self.SIX)

    async def speech(self, text: str, voice: str, model: str) -> bytes:
        payload = {"input": text, "voice": voice, "model": model}
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.key}"}
        async with self.session.post(
            f"{self.base_url}/audio/speech", json=payload, headers=headers
        ) as response:
            response.raise_for_status()
            return await response.read()  # written to the cache as NAME.mp3


async def test_open_webui_lists_our_voices_and_speaks_with_the_one_picked(start_server):
    base = await _base(start_server)
    async with aiohttp.ClientSession() as session:
        webui = OpenWebUI(session, base + "/v1", "unused")
        models = await webui.models()
        voices = await webui.voices()
        assert [m["id"] for m in models][:2] == ["tts-1", "tts-1-hd"]
        assert "hayakoe" in [m["id"] for m in models]
        assert voices[EMBEDDED_VOICE_NAME] == EMBEDDED_VOICE_NAME  # not the fallback six
        assert voices[STYLE] == f"{EMBEDDED_VOICE_NAME} (High)"
        picked = await webui.speech(TEXT, STYLE, models[0]["id"])
        other = await webui.speech(TEXT, f"{EMBEDDED_VOICE_NAME}:Low", models[0]["id"])
    assert 1.0 < _mp3_seconds(picked) < 10.0
    assert picked != other  # the voice picked is the one heard


async def test_open_webui_with_a_token_falls_back_to_openai_names_and_they_speak(start_server):
    """Open WebUI asks for voices and models without its key: with a token both are 401, it
    offers OpenAI's six names, and each of them speaks (the default voice)."""
    base = await _base(start_server, token=TOKEN)
    async with aiohttp.ClientSession() as session:
        webui = OpenWebUI(session, base + "/v1", TOKEN)
        voices = await webui.voices()
        models = await webui.models()
        assert voices == OpenWebUI.SIX and models[0]["id"] == "tts-1"
        for voice in voices:
            assert _mp3_seconds(await webui.speech("こんにちは。", voice, "tts-1")) > 0.3


# -- OpenAI's voice names ------------------------------------------------------------------


async def _pcm(session: aiohttp.ClientSession, base: str, voice: str) -> bytes:
    body = {"model": "tts-1", "voice": voice, "input": TEXT, "response_format": "pcm"}
    async with session.post(base + "/v1/audio/speech", json=body) as response:
        assert response.status == 200, await response.text()
        return await response.read()


async def test_alloy_speaks_with_the_mapped_voice_and_the_others_with_the_default(start_server):
    base = await _base(start_server, openai_voices=(("alloy", STYLE),))
    async with aiohttp.ClientSession() as session:
        mapped = await _pcm(session, base, STYLE)
        default = await _pcm(session, base, EMBEDDED_VOICE_NAME)
        assert mapped != default
        assert await _pcm(session, base, "alloy") == mapped
        assert await _pcm(session, base, "ALLOY") == mapped
        for name in ("cedar", "marin", "shimmer"):
            assert await _pcm(session, base, name) == default
        async with session.get(base + "/v1/audio/voices") as response:
            listed = await response.json()
    assert set(listed["openai_voices"]) == set(OPENAI_VOICE_NAMES)
    assert listed["openai_voices"]["alloy"] == STYLE
    assert listed["openai_voices"]["echo"] == EMBEDDED_VOICE_NAME


# -- Home Assistant's OpenAI TTS integration -------------------------------------------------


async def test_ha_openai_tts_key_check_and_request(start_server):
    base = await _base(start_server, token=TOKEN)
    url = base + "/v1/audio/speech"  # it takes the full endpoint URL
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession() as session:
        check = {"model": "tts-1", "input": ".", "voice": "alloy", "response_format": "mp3"}
        async with session.post(url, json=check, headers=headers) as response:
            assert response.status < 400, await response.text()  # else "cannot connect"
        body = {
            "model": "tts-1",
            "input": TEXT,
            "voice": "shimmer",  # its default; it offers only OpenAI's names
            "response_format": "mp3",
            "speed": 1.25,
        }
        async with session.post(url, json=body, headers=headers) as response:
            assert response.status == 200
            assert response.headers["Content-Type"] == "audio/mpeg"
            data = await response.read()
    assert 0.8 < _mp3_seconds(data) < 10.0


# -- raw UTF-8 in a URL ---------------------------------------------------------------------


async def test_raw_utf8_in_the_url_is_a_400_and_one_warning_line(start_server, caplog):
    base = await _base(start_server)
    port = int(base.rsplit(":", 1)[1])
    caplog.set_level(logging.DEBUG)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = "POST /audio_query?speaker=1&text=こんにちは HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    writer.write((request + "Content-Length: 0\r\n\r\n").encode())
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 20)
    writer.close()
    assert answer.split(b" ", 2)[1] == b"400", answer[:100]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]
    said = [r for r in caplog.records if "could not be parsed" in r.getMessage()]
    assert len(said) == 1 and said[0].exc_info is None
    assert "--data-urlencode" in said[0].getMessage()
