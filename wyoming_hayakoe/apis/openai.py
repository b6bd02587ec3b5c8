"""OpenAI's speech API: ``POST /v1/audio/speech``, ``GET /v1/audio/voices``,
``GET /v1/audio/models``, ``GET /v1/models``.

``voice`` is a voice name as Wyoming lists it (the voice-name rule: case-insensitive,
``VOICE:STYLE``, presets), or one of OpenAI's names (``alloy`` ... ``cedar``: the voice
``--openai-voice`` assigns it, else the default voice; `openai_voices`); unknown: 400 listing
the names; ``speed`` 0.25-4.0 multiplies the
voice's speed; ``response_format`` mp3 (default), opus, aac, flac, wav, pcm, all at 24 kHz
mono (``pcm``: 16-bit little-endian, no header); ``input`` at most 4096 characters;
``instructions`` is accepted and not used; ``stream_format`` ``audio`` (default: the bytes
of the format, chunked, each sentence's as soon as it is made) or ``sse`` (``data:`` events
``speech.audio.delta`` with base64 audio, then ``speech.audio.done`` with ``usage``:
`openai_voices.done_event`). ``model`` is any of `MODELS` (or any other string: there is one
engine).

Discovery: ``GET /v1/audio/voices`` → ``{"voices": [{"id", "name"}, ...], "default",
"openai_voices": {OpenAI name: voice}}`` (Open WebUI's shape); ``GET /v1/audio/models`` →
``{"models": [{"id"}, ...]}`` (Open WebUI's); ``GET /v1/models``: OpenAI's model list.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import math
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ..net.http_guard import write_bounded, write_timeout_of
from ..speech import SpeechError, SpeechOptions, SpeechRequest
from .audio_formats import FORMATS, Encoder
from .errors import Invalid, json_answer, read_json
from .openai_voices import MODELS, done_event, voice_entries
from .queries import DEFAULT_SEED
from .state import API_STATE, ApiState

__all__ = ["MODELS", "OPENAI_RATE", "add_openai_routes", "voice_names"]

_LOGGER = logging.getLogger(__name__)

OPENAI_RATE = 24000


def voice_names(state: ApiState) -> list[str]:
    """Every served voice name (voices, ``VOICE:STYLE``, presets)."""
    return state.catalog.names().all()


def _field(data: dict[str, Any], name: str, kinds: tuple[type, ...], default: Any) -> Any:
    value = data.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        raise Invalid(("body", name), f"wrong type {type(value).__name__}", "type_error")
    return value


@dataclass(frozen=True)
class OpenAiSpeech:
    """A ``/v1/audio/speech`` body as the request service takes it, and how to answer."""

    request: SpeechRequest
    fmt: str
    sse: bool


def parse_speech(state: ApiState, data: object) -> OpenAiSpeech:
    """A ``/v1/audio/speech`` body, each field checked (`Invalid` names it)."""
    if not isinstance(data, dict):
        raise Invalid(("body",), "the body must be a JSON object", "type_error")
    text = _field(data, "input", (str,), None)
    if not text or not text.strip():
        raise Invalid(("body", "input"), "write something to say", "missing")
    voice = data.get("voice")
    if isinstance(voice, dict):
        voice = voice.get("id")
    if not isinstance(voice, str):
        raise Invalid(("body", "voice"), "a voice name (GET /v1/audio/voices)", "missing")
    fmt = _field(data, "response_format", (str,), "mp3")
    if fmt not in FORMATS:
        raise Invalid(("body", "response_format"), f"one of {', '.join(FORMATS)}")
    speed = float(_field(data, "speed", (int, float), 1.0))
    if not (math.isfinite(speed) and 0.25 <= speed <= 4.0):
        raise Invalid(("body", "speed"), f"from 0.25 to 4.0, got {speed}")
    stream_format = _field(data, "stream_format", (str,), "audio")
    if stream_format not in ("audio", "sse"):
        raise Invalid(("body", "stream_format"), "audio or sse")
    _field(data, "instructions", (str,), "")
    request = SpeechRequest(
        text,
        state.openai_voice(voice) or voice,
        options=SpeechOptions(speed=speed, sample_rate=OPENAI_RATE, seed=DEFAULT_SEED),
        measure_whole=False,  # played as it comes
        door="openai",
    )
    return OpenAiSpeech(request, fmt, stream_format == "sse")


async def speech(request: web.Request) -> web.StreamResponse:
    state: ApiState = request.app[API_STATE]
    asked = parse_speech(state, await read_json(request))
    sse = asked.sse
    encoder = Encoder(asked.fmt, OPENAI_RATE)
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream" if sse else encoder.content_type,
            "Cache-Control": "no-store",
        }
    )
    response.enable_chunked_encoding()

    timeout = write_timeout_of(request)

    async def send(chunk: bytes) -> None:
        if not chunk:
            return
        if sse:
            event = {"type": "speech.audio.delta", "audio": base64.b64encode(chunk).decode()}
            chunk = f"data: {json.dumps(event)}\n\n".encode()
        await write_bounded(response, chunk, timeout)  # a stalled client frees the voice

    with state.service.open(asked.request) as spoken:  # SpeechError: errors_middleware
        samples = 0
        try:
            async with contextlib.aclosing(spoken.stream()) as chunks:
                async for piece in chunks:
                    if not response.prepared:  # an error before the first audio is still JSON
                        await response.prepare(request)
                    samples += len(piece.data)
                    await send(await asyncio.to_thread(encoder.push, piece.data))
        except SpeechError as exc:
            if not response.prepared:
                raise
            _LOGGER.warning("OpenAI request cut: %s", exc)  # the audio so far was sent
        if not response.prepared:
            await response.prepare(request)
        await send(await asyncio.to_thread(encoder.finish))
        if sse:
            text = asked.request.text
            assert isinstance(text, str)
            await write_bounded(response, done_event(text, samples, OPENAI_RATE), timeout)
    await response.write_eof()
    return response


async def voices(request: web.Request) -> web.Response:
    """Open WebUI's shape (``{v["id"]: v["name"] for v in voices}``), the default voice, and
    what each OpenAI name speaks with."""
    state: ApiState = request.app[API_STATE]
    catalog = state.catalog
    return json_answer(
        {
            "voices": [e.json() for e in voice_entries(catalog.names())],
            "default": catalog.default_voice,
            "openai_voices": state.settings.openai_voice_table(catalog.default_voice),
        }
    )


async def audio_models(request: web.Request) -> web.Response:
    """Open WebUI's ``GET {base}/audio/models``: ``{"models": [{"id": ...}]}``."""
    return json_answer({"models": [{"id": m, "name": m} for m in MODELS]})


async def models(request: web.Request) -> web.Response:
    return json_answer(
        {
            "object": "list",
            "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "wyoming-hayakoe"}
                for m in MODELS
            ],
        }
    )


def add_openai_routes(app: web.Application) -> None:
    app.router.add_post("/v1/audio/speech", speech)
    app.router.add_get("/v1/audio/voices", voices)
    app.router.add_get("/v1/audio/models", audio_models)
    app.router.add_get("/v1/models", models)
