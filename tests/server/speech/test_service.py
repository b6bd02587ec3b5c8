"""The one way in (`wyoming_hayakoe.speech`): every door reaches the engine's synthesis only
through `SpeechService.open`, once each; the same options give the same samples through
Wyoming, the page and OpenAI's speech API; the bounds hold on each door."""

from __future__ import annotations

import ast
from pathlib import Path

import aiohttp
import numpy as np
import pytest
from wyoming.tts import Synthesize, SynthesizeVoice

from engine import EMBEDDED_VOICE_NAME, OutputOptions
from engine.text.accents import AccentPhrase
from engine.text.from_phrases import PhrasedText
from wyoming_hayakoe.admission import Admission
from wyoming_hayakoe.apis.options import EngineApiSettings
from wyoming_hayakoe.info import VoiceCatalog
from wyoming_hayakoe.presets import parse_presets, resolve_presets
from wyoming_hayakoe.speech import (
    Busy,
    OutputTooLong,
    Problem,
    RequestBounds,
    SpeechOptions,
    SpeechRequest,
    SpeechService,
    TooLarge,
    UnknownVoice,
)
from wyoming_hayakoe.web.options import HttpSettings

PACKAGE = Path(__file__).resolve().parents[3] / "wyoming_hayakoe"
DOORS = {
    "handler.py": "Wyoming",
    "web/api.py": "the page",
    "apis/voicevox.py": "the VOICEVOX engine API",
    "apis/openai.py": "OpenAI's speech API",
    "commands/say.py": "say",
}
SYNTHESIS = {"astream", "agenerate", "generate", "stream"}
TEXT = "はい、こんにちは。今日は良い天気です。"


def _calls(path: Path) -> list[ast.Call]:
    tree = ast.parse(path.read_text("utf-8"))
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)]


def _receiver(call: ast.Call) -> str:
    assert isinstance(call.func, ast.Attribute)
    return ast.unparse(call.func.value)


def test_each_door_opens_requests_in_one_place() -> None:
    for door, name in DOORS.items():
        opens = [
            c
            for c in _calls(PACKAGE / door)
            if isinstance(c.func, ast.Attribute)
            and c.func.attr == "open"
            and _receiver(c).endswith("service")
        ]
        assert len(opens) == 1, f"{name} ({door}) opens requests in {len(opens)} places"


def test_only_the_service_calls_a_speakers_synthesis() -> None:
    """A speaker's `astream`/`agenerate`/`generate`/`stream` is called in
    `speech/service.py` only: a door that called the engine itself would skip the bounds."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "speech" / "service.py":
            continue
        for call in _calls(path):
            if not (isinstance(call.func, ast.Attribute) and call.func.attr in SYNTHESIS):
                continue
            receiver = _receiver(call)
            if "speaker" in receiver.lower() or call.func.attr in ("astream", "agenerate"):
                found.append(f"{path.relative_to(PACKAGE)}:{call.lineno} {ast.unparse(call)[:60]}")
    assert not found, "synthesis outside the request service:\n" + "\n".join(found)


# -- the service on the embedded voice --------------------------------------------------------


@pytest.fixture
def service(embedded_speakers) -> SpeechService:
    presets = resolve_presets(
        parse_presets([f"fast={EMBEDDED_VOICE_NAME},speed=1.5"]), embedded_speakers
    )
    catalog = VoiceCatalog(embedded_speakers, EMBEDDED_VOICE_NAME, presets=presets)
    bounds = RequestBounds(max_text_length=40, max_audio_seconds=3.0, max_queries=2)
    return SpeechService(catalog, Admission(max_queue=0), bounds)


async def test_options_are_factors_over_the_presets(service: SpeechService) -> None:
    with service.open(SpeechRequest("はい。", "fast", options=SpeechOptions(speed=2.0))) as s:
        assert s.keywords["speed"] == 3.0  # 1.5 (the preset) x 2 (the request)
    with service.open(SpeechRequest("はい。", "fast")) as s:
        assert s.keywords["speed"] == 1.5
    with service.open(SpeechRequest("はい。")) as s:
        assert "speed" not in s.keywords  # a factor of 1 leaves the voice's own value


async def test_the_bounds_hold_before_any_work(service: SpeechService) -> None:
    with pytest.raises(TooLarge) as found:
        service.open(SpeechRequest("あ" * 41))
    assert found.value.problem is Problem.TEXT_TOO_LONG and found.value.field == "text"
    # silences alone past the audio bound: refused before any synthesis
    slow = SpeechOptions(speed=0.25, lead_silence=1.0)
    with pytest.raises(TooLarge) as found:
        service.open(SpeechRequest("はい。", options=slow))
    assert found.value.problem is Problem.AUDIO_TOO_LONG
    # a reading of many morae at the fastest rate still passes the budget: refused
    phrases = PhrasedText([AccentPhrase(("ア",) * 20, 1)] * 5)
    with pytest.raises(TooLarge):
        service.open(SpeechRequest(phrases, options=SpeechOptions(speed=0.5)))
    with pytest.raises(UnknownVoice) as unknown:
        service.open(SpeechRequest("はい。", "nobody"))
    assert EMBEDDED_VOICE_NAME in unknown.value.available
    with pytest.raises(TooLarge) as found:
        service.check_queries(3)
    assert found.value.problem is Problem.TOO_MANY_QUERIES
    assert service.admission.in_flight == 0  # nothing refused kept a place in the queue


async def test_audio_stops_at_the_bound_and_frees_the_voice(service: SpeechService) -> None:
    speech = service.open(SpeechRequest("こんにちは。" * 6))
    got = []
    with speech, pytest.raises(OutputTooLong):
        async for chunk in speech.stream():
            got.append(chunk)
    seconds = sum(c.duration for c in got)
    assert 2.5 < seconds <= 3.0 + 1e-6  # cut at the bound, not a sentence later
    assert service.admission.in_flight == 0
    assert not service.catalog.speakers[EMBEDDED_VOICE_NAME].lock.locked()


async def test_a_full_queue_is_busy(service: SpeechService) -> None:
    with service.open(SpeechRequest("はい。")):
        with pytest.raises(Busy) as busy:
            service.open(SpeechRequest("はい。"))
        assert busy.value.problem is Problem.BUSY


# -- the same audio through every door ---------------------------------------------------------


async def test_the_same_options_give_the_same_samples_on_every_door(start_server, wy) -> None:
    """A preset at 24 kHz (OpenAI's rate) with speed 1.5, asked for through Wyoming, the page
    and OpenAI; and the same speed as the request's factor over a 24 kHz preset (page,
    OpenAI): every answer equal to the sample."""
    presets = parse_presets(
        [
            f"fast24={EMBEDDED_VOICE_NAME},speed=1.5,output_rate=24000",
            f"base24={EMBEDDED_VOICE_NAME},output_rate=24000",
        ]
    )
    server = await start_server(
        presets=presets,
        http=HttpSettings(port=0),
        engine_api=EngineApiSettings(port=0),
    )
    async with wy.client(server) as client:
        await client.write_event(Synthesize(text=TEXT, voice=SynthesizeVoice("fast24")).event())
        events = await wy.read_until(client, "audio-stop")
    wyoming = np.frombuffer(wy.pcm(events), np.int16)
    assert events[0].data["rate"] == 24000 and wyoming.size > 24000

    assert server.web is not None and server.engine_api is not None
    page = f"http://127.0.0.1:{server.web.port}"
    api = f"http://127.0.0.1:{server.engine_api.port}"
    answers = {}
    async with aiohttp.ClientSession() as http:
        for voice, speed in (("fast24", None), ("base24", 1.5)):
            body = {"text": TEXT, "voice": voice}
            if speed is not None:
                body["speed"] = speed
            async with http.post(f"{page}/api/speak", json=body) as r:
                assert r.status == 200, await r.text()
                assert r.headers["X-Sample-Rate"] == "24000"
                answers[f"page {voice}"] = await r.read()
            speech = {"model": "tts-1", "voice": voice, "input": TEXT, "response_format": "pcm"}
            if speed is not None:
                speech["speed"] = speed
            async with http.post(f"{api}/v1/audio/speech", json=speech) as r:
                assert r.status == 200, await r.text()
                answers[f"openai {voice}"] = await r.read()
    for door, pcm in answers.items():
        samples = np.frombuffer(pcm, np.int16)
        assert samples.shape == wyoming.shape, door
        assert np.array_equal(samples, wyoming), door


async def test_wyoming_refuses_a_text_past_the_bound_and_goes_on(start_server, wy) -> None:
    server = await start_server(max_text_length=20)
    async with wy.client(server) as client:
        await client.write_event(Synthesize(text="あ" * 21).event())
        error = (await wy.read_until(client, "error"))[-1]
        assert error.data["code"] == "text-too-long"
        assert "--max-text-length" in error.data["text"]
        await client.write_event(Synthesize(text="はい。").event())
        events = await wy.read_until(client, "audio-stop")
        assert wy.pcm(events)


async def test_wyoming_stops_at_the_audio_bound_with_an_error(start_server, wy) -> None:
    server = await start_server(max_audio_seconds=1.0)
    async with wy.client(server) as client:
        await client.write_event(Synthesize(text="こんにちは。" * 8).event())
        events = await wy.read_until(client, "audio-stop")
        kinds = [e.type for e in events]
        assert "error" in kinds
        error = events[kinds.index("error")]
        assert error.data["code"] == "audio-too-long"
        assert len(wy.pcm(events)) / 2 / events[0].data["rate"] <= 1.0 + 1e-6
        await client.write_event(Synthesize(text="はい。").event())
        assert wy.pcm(await wy.read_until(client, "audio-stop"))


def test_output_options_are_untouched_by_factors_of_one() -> None:
    from wyoming_hayakoe.speech.service import _output

    base = OutputOptions(volume=2.0)
    assert _output(base, SpeechOptions()) is base
    assert _output(base, SpeechOptions(volume=0.5)).volume == 1.0
