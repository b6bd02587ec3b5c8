"""OpenAI's speech API: ``POST /v1/audio/speech``, ``GET /v1/audio/voices``, ``GET /v1/models``.

``voice`` is a voice name as Wyoming lists it (the voice-name rule: case-insensitive,
``VOICE:STYLE``, presets; unknown: 400 listing the names); ``speed`` 0.25-4.0 multiplies the
voice's speed; ``response_format`` mp3 (default), opus, aac, flac, wav, pcm, all at 24 kHz
mono (``pcm``: 16-bit little-endian, no header); ``input`` at most 4096 characters;
``instructions`` is accepted and not used; ``stream_format`` ``audio`` (default: the bytes
of the format, chunked, each sentence's as soon as it is made) or ``sse`` (``data:`` events
``speech.audio.delta`` with base64 audio, then ``speech.audio.done``). ``model`` is any of
`MODELS` (or any other string: there is one engine).
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
from dataclasses import dataclass, replace
from typing import Any

from aiohttp import web

from engine import OutputOptions

from ..info import Resolved
from ..resolve import UnknownNameError
from .audio_formats import FORMATS, Encoder
from .errors import Invalid, Refused, json_answer, read_json
from .queries import DEFAULT_SEED
from .state import API_STATE, ApiState

__all__ = ["MODELS", "OPENAI_RATE", "add_openai_routes", "voice_names"]

OPENAI_RATE = 24000
MODELS = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts", "hayakoe")


def voice_names(state: ApiState) -> list[str]:
    catalog = state.catalog
    names: list[str] = []
    for name, speaker in catalog.speakers.items():
        names.append(name)
        names.extend(f"{name}:{style}" for style in speaker.styles)
    names.extend(catalog.presets)
    return names


def _field(data: dict[str, Any], name: str, kinds: tuple[type, ...], default: Any) -> Any:
    value = data.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        raise Invalid(("body", name), f"wrong type {type(value).__name__}", "type_error")
    return value


@dataclass(frozen=True)
class SpeechRequest:
    text: str
    resolved: Resolved
    fmt: str
    speed: float
    sse: bool


def parse_speech(state: ApiState, data: object) -> SpeechRequest:
    """A ``/v1/audio/speech`` body, each field checked (`Invalid` names it)."""
    if not isinstance(data, dict):
        raise Invalid(("body",), "the body must be a JSON object", "type_error")
    text = _field(data, "input", (str,), None)
    if not text or not text.strip():
        raise Invalid(("body", "input"), "write something to say", "missing")
    if len(text) > state.max_text:
        raise Invalid(("body", "input"), f"at most {state.max_text} characters", "too_long")
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
    try:
        resolved = state.resolve(voice, None)
    except UnknownNameError as exc:
        names = voice_names(state)
        raise Refused(400, f"{exc} (voices: {', '.join(names)})", "voice") from None
    return SpeechRequest(text, resolved, fmt, speed, stream_format == "sse")


async def speech(request: web.Request) -> web.StreamResponse:
    state: ApiState = request.app[API_STATE]
    asked = parse_speech(state, await read_json(request))
    text, resolved, fmt, speed, sse = (
        asked.text,
        asked.resolved,
        asked.fmt,
        asked.speed,
        asked.sse,
    )
    speaker = resolved.speaker
    options = dict(resolved.options)
    options["speed"] = float(options.get("speed", 1.0)) * speed
    options["seed"] = DEFAULT_SEED
    output: OutputOptions = replace(resolved.output, sample_rate=OPENAI_RATE)
    encoder = Encoder(fmt, OPENAI_RATE)
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream" if sse else encoder.content_type,
            "Cache-Control": "no-store",
        }
    )
    response.enable_chunked_encoding()

    async def send(chunk: bytes) -> None:
        if not chunk:
            return
        if sse:
            event = {"type": "speech.audio.delta", "audio": base64.b64encode(chunk).decode()}
            chunk = f"data: {json.dumps(event)}\n\n".encode()
        await response.write(chunk)

    ticket = state.admit(speaker.name)
    try:
        chunks = speaker.astream(text, output=output, style=resolved.style, **options)
        async with contextlib.aclosing(chunks):
            async for piece in chunks:
                if not response.prepared:  # an error before the first audio is still JSON
                    await response.prepare(request)
                await send(encoder.push(piece.data))
        if not response.prepared:
            await response.prepare(request)
        await send(encoder.finish())
        if sse:
            await response.write(b'data: {"type": "speech.audio.done"}\n\n')
    finally:
        ticket.release()
    await response.write_eof()
    return response


async def voices(request: web.Request) -> web.Response:
    state: ApiState = request.app[API_STATE]
    return json_answer({"voices": voice_names(state), "default": state.catalog.default_voice})


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
    app.router.add_get("/v1/models", models)
