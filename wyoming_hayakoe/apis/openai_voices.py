"""OpenAI's voice names on this server, voice discovery, and the SSE end event's usage.

A client written for api.openai.com (or one that offers only OpenAI's names, as Home
Assistant's OpenAI TTS integrations do, or Open WebUI when it cannot read our list) sends
``"voice": "alloy"``. Each of `OPENAI_VOICE_NAMES` is spoken by a served voice: the one
``--openai-voice NAME=VOICE`` assigns it, else the default voice (`--default-voice`). A name that
is also a served voice's name (or ``VOICE:STYLE``, a preset) is that voice: served names win.
`openai_voice` is the one place the speech route asks.

Discovery: `voice_entries` (``GET /v1/audio/voices``: ``{"id", "name"}`` objects, the shape
Open WebUI reads as ``{v["id"]: v["name"] for v in voices}``) and `MODELS`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from ..errors import HayakoeError
from ..resolve import UnknownNameError, VoiceNames, resolve_name, style_voice_name

__all__ = [
    "MODELS",
    "OPENAI_VOICE_NAMES",
    "OUTPUT_TOKENS_PER_SECOND",
    "OpenAIVoiceError",
    "VoiceEntry",
    "assigned_voices",
    "done_event",
    "openai_voice",
    "parse_openai_voice",
    "speech_usage",
    "voice_entries",
]

OPENAI_VOICE_NAMES = (
    "alloy",
    "ash",
    "ballad",
    "coral",
    "echo",
    "fable",
    "nova",
    "onyx",
    "sage",
    "shimmer",
    "verse",
    "marin",
    "cedar",
)
"""OpenAI's built-in voices (its API reference for ``/v1/audio/speech``; the openai SDK 3.63)."""

MODELS = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts", "hayakoe")
"""The model names answered (any other is accepted too: there is one engine)."""

OUTPUT_TOKENS_PER_SECOND = 50
"""`speech_usage`'s audio tokens: one per 20 ms of audio sent (we have no tokenizer)."""


class OpenAIVoiceError(HayakoeError, ValueError):
    """An ``--openai-voice`` value that is not ``NAME=VOICE``."""


def parse_openai_voice(spec: str) -> tuple[str, str]:
    """``alloy=jvnv-F1-jp`` → (``alloy``, ``jvnv-F1-jp``): the OpenAI name (any name a client
    sends, compared case-insensitively; kept in lower case) and the served voice it speaks
    with (a voice, ``VOICE:STYLE`` or a preset, as the voice-name rule reads it)."""
    name, sep, voice = spec.partition("=")
    name, voice = name.strip().lower(), voice.strip()
    if not sep or not name or not voice:
        raise OpenAIVoiceError(
            f"--openai-voice {spec!r}: NAME=VOICE, e.g. alloy=jvnv-F1-jp "
            f"(OpenAI's names: {', '.join(OPENAI_VOICE_NAMES)})"
        )
    return name, voice


class _Served(Protocol):
    """What `openai_voice` reads of the engine API's state."""

    @property
    def default_voice(self) -> str: ...

    def names(self) -> VoiceNames: ...


def assigned_voices(assigned: Mapping[str, str], default_voice: str) -> dict[str, str]:
    """Each OpenAI name (and any other name assigned) → the voice it speaks with now."""
    table = {name: assigned.get(name, default_voice) for name in OPENAI_VOICE_NAMES}
    table.update({name: voice for name, voice in assigned.items() if name not in table})
    return table


def openai_voice(catalog: _Served, assigned: Mapping[str, str], name: str) -> str | None:
    """The served voice an OpenAI voice name speaks with, or None when `name` is not one (or
    is also a served name: the served voice wins, so None: resolve `name` itself)."""
    key = name.strip().lower()
    if key not in assigned and key not in OPENAI_VOICE_NAMES:
        return None
    try:
        resolve_name(catalog.names(), name, None, default=catalog.default_voice).exact()
        return None  # a served voice, style or preset of that name
    except UnknownNameError:
        pass
    return assigned.get(key, catalog.default_voice)


@dataclass(frozen=True)
class VoiceEntry:
    """One voice as ``GET /v1/audio/voices`` lists it."""

    id: str
    """What a request's ``voice`` names: ``VOICE``, ``VOICE:STYLE`` or a preset."""
    name: str
    """For people: ``VOICE``, ``VOICE (STYLE)``, ``PRESET (preset: VOICE)``."""

    def json(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name}


def voice_entries(names: VoiceNames) -> list[VoiceEntry]:
    """Every served voice name: each voice, its styles, the presets (Wyoming's order)."""
    entries: list[VoiceEntry] = []
    for voice, styles in names.voices.items():
        entries.append(VoiceEntry(voice, voice))
        entries.extend(VoiceEntry(style_voice_name(voice, s), f"{voice} ({s})") for s in styles)
    for preset, target in names.presets.items():
        entries.append(VoiceEntry(preset, f"{preset} (preset: {target.voice})"))
    return entries


def speech_usage(text: str, samples: int, rate: int) -> dict[str, int]:
    """OpenAI's ``usage`` of a speech answer: ``input_tokens`` the characters of the input,
    ``output_tokens`` the audio sent in 20 ms steps (`OUTPUT_TOKENS_PER_SECOND`, rounded up),
    ``total_tokens`` their sum. We have no tokenizer: these count the work, as OpenAI's do."""
    seconds = samples / rate if rate > 0 else 0.0
    output = math.ceil(seconds * OUTPUT_TOKENS_PER_SECOND - 1e-9) if samples > 0 else 0
    return {
        "input_tokens": len(text),
        "output_tokens": output,
        "total_tokens": len(text) + output,
    }


def done_event(text: str, samples: int, rate: int) -> bytes:
    """The SSE ``speech.audio.done`` event, with its ``usage`` (`speech_usage`): `samples`
    is how many samples at `rate` the answer sent."""
    event = {"type": "speech.audio.done", "usage": speech_usage(text, samples, rate)}
    return f"data: {json.dumps(event)}\n\n".encode()
