"""The page's endpoints (JSON, audio, CSV); `app.build_app` mounts them.

| method, path | answers |
| --- | --- |
| GET /api/voices | voices (styles, style IDs, rate, precision, license), presets, engine API |
| GET /api/sample?voice=&style= | a short WAV in that voice (cached per voice, style, options) |
| POST /api/speak | int16 PCM streamed as synthesized (``X-Sample-Rate``); ``format: wav``: a file |
| POST /api/reading | the rewritten text and its accent phrases (morae, accent, pauses) |
| GET /api/dictionary | the page's words, the read-only words of the other files |
| POST /api/dictionary | add or change a word (``original``: the surface it replaces) |
| POST /api/dictionary/delete | remove a word |
| POST /api/dictionary/import | merge a CSV (text/csv); bad lines: 400 listing them, none written |
| GET /api/dictionary.csv | the page's words as CSV |
| GET /api/status | voices, memory, requests, queue, version, last warnings |

Synthesis goes through the server's one way in (`wyoming_hayakoe.speech.SpeechService`: the
same voices, queue, options and bounds as Wyoming), so the page hears what Home Assistant
hears. Voice names follow the same rule (`wyoming_hayakoe.resolve`: case-insensitive,
``VOICE:STYLE``, presets), except that a name or style that matches nothing is refused (400,
``field`` ``voice`` or ``style``, ``available``: the names that exist) where Wyoming falls back
to the default voice. The controls (speed, pitch, intonation, volume) are factors over the
voice's or preset's own settings, as on every door.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from engine import AudioResult, Speaker, __version__
from engine.text.pipeline import TextPipeline
from engine.text.userdict import UserWord

from ..admission import Admission
from ..context import SpeedMeasurer
from ..info import VoiceCatalog
from ..net.http_guard import client_left, write_bounded, write_timeout_of
from ..speech import (
    Speech,
    SpeechError,
    SpeechOptions,
    SpeechRequest,
    SpeechService,
    TooLarge,
    UnknownVoice,
)
from ..speech.http import STATUS
from .dictionary import (
    FieldError,
    ImportError_,
    PageDictionary,
    parse_csv,
    to_csv,
    validate_entry,
    word_json,
)
from .errors import MAX_JSON_BODY, ApiError, read_json_object
from .options import HttpSettings
from .warnings import WarningLog

if TYPE_CHECKING:  # types only: the engine APIs' part imports the page's, never the reverse
    from ..apis.options import EngineApiSettings
    from ..apis.style_ids import StyleTable

__all__ = ["STATE", "MAX_BODY", "SAMPLE_TEXT", "WebState", "add_routes"]

_LOGGER = logging.getLogger(__name__)

MAX_BODY = MAX_JSON_BODY
"""Largest request body (a CSV import); more gets 413 ``too_large``."""
SAMPLE_TEXT = "こんにちは。この声で、家のお知らせを読み上げます。"
_SAMPLE_CACHE = 32

# name → (low, high): the per-request controls of "Try it", each a `SpeechOptions` factor
_CONTROLS = {
    "speed": (0.25, 4.0),
    "pitch": (0.5, 2.0),
    "intonation": (0.0, 4.0),
    "volume": (0.0, 4.0),
}


@dataclass
class WebState:
    """What the endpoints share: the Wyoming server's voices and queue, the dictionary."""

    http: HttpSettings
    catalog: VoiceCatalog
    admission: Admission
    service: SpeechService
    """The one way in for speech (the Wyoming server's, with its bounds)."""
    dictionary: PageDictionary
    rewrite: bool = True
    warnings: WarningLog = field(default_factory=WarningLog)
    started: float = field(default_factory=time.monotonic)
    samples: OrderedDict[tuple[Any, ...], bytes] = field(default_factory=OrderedDict)
    measurer: SpeedMeasurer | None = None
    """Takes a voice's speed measurement again (`POST /api/voices/{name}/measure`)."""
    style_ids: Callable[[Mapping[str, Speaker]], StyleTable] | None = None
    """The engine APIs' style IDs of the served voices: their one source,
    `wyoming_hayakoe.apis.style_ids.style_table`, handed in by the server (None: no IDs)."""
    engine_api: EngineApiSettings | None = None
    """The engine APIs' settings (``--engine-api-port``); None while they are off."""
    engine_api_port: Callable[[], int | None] | None = None
    """The port the engine APIs are bound to now (``--engine-api-port 0``: any free one)."""

    @property
    def max_text(self) -> int:
        """Longest text a request may carry (``--max-text-length``)."""
        return self.service.bounds.max_text_length


STATE = web.AppKey("state", WebState)


class BadRequest(ApiError):
    """A request this endpoint refuses: the field at fault, a code (`errors`: the page words
    it), the status, and for an unknown name the names that exist (``available``)."""

    def __init__(
        self,
        field: str,
        message: str,
        status: int = 400,
        available: list[str] | None = None,
        code: str = "bad_request",
    ) -> None:
        extra = {"available": available} if available is not None else None
        super().__init__(status, code, message, field, extra)
        self.available = available


def _refused(exc: SpeechError) -> BadRequest:
    """A request the service refused, in the page's shape (`speech.http.STATUS`)."""
    status = STATUS[exc.problem]
    available = list(exc.available) if isinstance(exc, UnknownVoice) else None
    code = "too_large" if isinstance(exc, TooLarge) else exc.problem.value
    return BadRequest(exc.field or "text", str(exc), status, available, code=code)


def _text(state: WebState, data: Mapping[str, Any]) -> str:
    text = data.get("text")
    if not isinstance(text, str) or not text.strip():
        raise BadRequest("text", "text: write something to say")
    try:
        state.service.check_length(len(text))
    except TooLarge as exc:
        raise _refused(exc) from None
    return text


def _name(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise BadRequest(key, f"{key}: a name, got {value!r}")
    return value


def _controls(data: Mapping[str, Any]) -> SpeechOptions:
    found: dict[str, float] = {}
    for name, (low, high) in _CONTROLS.items():
        value = data.get(name)
        if value in (None, ""):
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BadRequest(name, f"{name}: a number from {low} to {high}")
        if not low <= float(value) <= high:
            raise BadRequest(name, f"{name}: a number from {low} to {high}, got {value}")
        found[name] = float(value)
    return SpeechOptions(
        speed=found.get("speed", 1.0),
        pitch=found.get("pitch", 1.0),
        intonation=found.get("intonation", 1.0),
        volume=found.get("volume", 1.0),
    )


def _open(state: WebState, request: SpeechRequest) -> Speech:
    try:
        return state.service.open(request)
    except SpeechError as exc:
        raise _refused(exc) from None


def _jsonable(value: object) -> object:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _jsonable(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)


def _runs(speaker: Speaker) -> dict[str, object]:
    """What the speaker's voice runs (`engine.RunInfo`; nulls for the embedded voice) and
    its real-time factor measured here (null: not yet)."""
    info = speaker.run_info
    rtf = speaker.real_time_factor
    return {
        "precision": None if info is None else info.precision,
        "runtime": None if info is None else info.runtime,
        "runs": None if info is None else info.runs,
        "precision_reason": None if info is None else info.reason,
        "real_time_factor": None if rtf is None else round(float(rtf), 3),
    }


# -- voices and audio ----------------------------------------------------------------------


def _engine_api_json(state: WebState) -> dict[str, object]:
    """Where the engine APIs listen (the page writes their base URL from it), or that they
    are off (``on`` false: the IDs shown are the ones they will serve once on)."""
    api = state.engine_api
    if api is None:
        return {"on": False}
    port = state.engine_api_port() if state.engine_api_port is not None else api.port
    return {
        "on": True,
        "host": api.host,
        "port": port or None,
        "token": api.token is not None,
        "openai_voices": api.openai_voice_table(state.catalog.default_voice),
    }


async def voices(request: web.Request) -> web.Response:
    state = request.app[STATE]
    catalog = state.catalog
    speakers = catalog.speakers
    table = state.style_ids(speakers) if state.style_ids is not None else None
    out = []
    for name, speaker in speakers.items():
        entries = table.of_voice(name) if table is not None else []
        out.append(
            {
                "name": name,
                "description": speaker.description,
                "sample_rate": speaker.sample_rate,
                "styles": speaker.styles,
                "default_style": catalog.style_for(speaker),
                "attribution": {"name": speaker.attribution_name, "url": speaker.attribution_url},
                "version": speaker.version,
                # the engine APIs' IDs (GET /speakers), style by style; null: none handed in
                "style_ids": {e.style: e.id for e in entries} if table is not None else None,
                "speaker_uuid": entries[0].speaker_uuid if entries else None,
                **_runs(speaker),
            }
        )
    presets = [
        {
            "name": p.name,
            "voice": p.voice,
            "style": p.style,
            "description": p.description,
        }
        for p in catalog.presets.values()
    ]
    return web.json_response(
        {
            "voices": out,
            "presets": presets,
            "default_voice": catalog.default_voice,
            "sample_text": SAMPLE_TEXT,
            "max_text": state.max_text,
            "engine_api": _engine_api_json(state),
        }
    )


async def sample(request: web.Request) -> web.Response:
    state = request.app[STATE]
    query = request.query
    asked = SpeechRequest(SAMPLE_TEXT, _name(query, "voice"), _name(query, "style"), door="page")
    try:
        resolved = state.service.resolve(asked)  # the cache's key, before any queueing
    except SpeechError as exc:
        raise _refused(exc) from None
    speaker = resolved.speaker  # an updated voice has the same name and another version
    key = (speaker.name, speaker.version, resolved.style, resolved.preset)
    wav = state.samples.get(key)
    if wav is None:
        with _open(state, asked) as speech:
            wav = await _whole_wav(speech, request)
        state.samples[key] = wav
        while len(state.samples) > _SAMPLE_CACHE:
            state.samples.popitem(last=False)
    return web.Response(
        body=wav, content_type="audio/wav", headers={"Cache-Control": "private, max-age=3600"}
    )


async def _whole_wav(speech: Speech, request: web.Request) -> bytes:
    """The request's audio as one WAV file, made off the event loop; the synthesis stops
    (`ConnectionResetError`) as soon as the client has left."""
    pieces: list[AudioResult] = []
    try:
        async with contextlib.aclosing(speech.stream()) as chunks:
            async for chunk in chunks:
                if client_left(request):
                    raise ConnectionResetError("the client left; its synthesis stopped")
                pieces.append(chunk)
    except SpeechError as exc:
        raise _refused(exc) from None
    audio = AudioResult.concat(pieces, sr=speech.rate)
    return await asyncio.to_thread(audio.to_wav_bytes)


async def speak(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    data = await read_json_object(request)
    text = _text(state, data)
    voice, style = _name(data, "voice"), _name(data, "style")
    options = _controls(data)
    fmt = data.get("format", "pcm")
    if fmt not in ("pcm", "wav"):
        raise BadRequest("format", "format: pcm or wav")
    whole = fmt == "wav"
    asked = SpeechRequest(text, voice, style, options=options, measure_whole=whole, door="page")
    with _open(state, asked) as speech:
        if whole:
            return web.Response(
                body=await _whole_wav(speech, request),
                content_type="audio/wav",
                headers={"Content-Disposition": 'attachment; filename="hayakoe.wav"'},
            )
        response = web.StreamResponse(
            headers={
                "Content-Type": "application/octet-stream",
                "X-Sample-Rate": str(speech.rate),
                "Cache-Control": "no-store",
            }
        )
        try:
            async with contextlib.aclosing(speech.stream()) as chunks:
                async for chunk in chunks:
                    if not response.prepared:  # an error before audio is still a JSON answer
                        await response.prepare(request)
                    pcm = chunk.pcm_bytes()
                    if pcm:  # a stalled client frees the voice (ClientStalled)
                        await write_bounded(response, pcm, write_timeout_of(request))
        except SpeechError as exc:
            if not response.prepared:
                raise _refused(exc) from None
            _LOGGER.warning("Page request cut: %s", exc)  # the audio so far was sent
        if not response.prepared:
            await response.prepare(request)
    # the place in the queue is given back before the end reaches the client: the status
    # it asks next is true
    await response.write_eof()
    return response


async def reading(request: web.Request) -> web.Response:
    state = request.app[STATE]
    data = await read_json_object(request)
    text = _text(state, data)

    def read() -> tuple[str, list[Any]]:  # the pipeline the speakers use, read not spoken
        found = TextPipeline(rewrite=state.rewrite, first_clause=0).readings(text)
        return found.text, list(found.phrases)

    rewritten, phrases = await asyncio.to_thread(read)
    return web.json_response(
        {
            "text": text,
            "rewritten": rewritten,
            "phrases": [
                {
                    "morae": list(p.morae),
                    "accent": p.accent,
                    "pause_after": p.pause_after,
                    "question": p.question,
                    "pitches": list(p.pitches),
                }
                for p in phrases
            ],
        }
    )


# -- dictionary ----------------------------------------------------------------------------


def _dictionary_json(state: WebState) -> dict[str, Any]:
    d = state.dictionary
    words, problems = d.read()
    return {
        "editable": d.path is not None,
        "file": d.path.name if d.path is not None else None,
        "words": [word_json(w) for w in words],
        "readonly": [word_json(w, source) for w, source in d.read_only_words()],
        "problems": problems,
    }


async def dictionary(request: web.Request) -> web.Response:
    state = request.app[STATE]
    return web.json_response(await asyncio.to_thread(_dictionary_json, state))


def _surface_key(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise FieldError("surface", "surface: name the word")
    return unicodedata.normalize("NFKC", value.strip())


async def dictionary_put(request: web.Request) -> web.Response:
    state = request.app[STATE]
    data = await read_json_object(request)
    word = validate_entry(data)  # FieldError → 400 naming the field, nothing written
    original = data.get("original")
    old = _surface_key(original) if original not in (None, "") else None

    def change(table: dict[str, UserWord]) -> None:
        if old is not None and old != word.surface:
            table.pop(old, None)
        table[word.surface] = word

    await state.dictionary.edit(change)
    _LOGGER.info("Web page: dictionary word %s = %s (%s)", word.surface, word.reading, word.accent)
    return web.json_response({"word": word_json(word), **_dictionary_json(state)})


async def dictionary_delete(request: web.Request) -> web.Response:
    state = request.app[STATE]
    data = await read_json_object(request)
    surface = _surface_key(data.get("surface"))

    def change(table: dict[str, UserWord]) -> None:
        if surface not in table:
            raise BadRequest(
                "surface",
                f"surface: {surface!r} is not in the dictionary",
                404,
                code="unknown_word",
            )
        del table[surface]

    await state.dictionary.edit(change)
    return web.json_response(_dictionary_json(state))


async def dictionary_import(request: web.Request) -> web.Response:
    state = request.app[STATE]
    if request.content_type != "text/csv":
        raise BadRequest("body", "send the CSV as text/csv")
    try:
        text = await request.text()
    except UnicodeDecodeError:
        raise BadRequest("body", "the CSV is not UTF-8") from None
    try:
        words = await asyncio.to_thread(parse_csv, text)
    except ImportError_ as exc:
        raise ApiError(
            400,
            "bad_csv",
            f"{len(exc.errors)} bad line(s); nothing imported",
            "body",
            {"lines": exc.errors},
        ) from None

    def change(table: dict[str, UserWord]) -> int:
        for w in words:
            table[w.surface] = w
        return len(words)

    count = await state.dictionary.edit(change)
    return web.json_response({"imported": count, **_dictionary_json(state)})


async def dictionary_csv(request: web.Request) -> web.Response:
    state = request.app[STATE]
    words, _ = await asyncio.to_thread(state.dictionary.read)
    return web.Response(
        text=to_csv(words),
        content_type="text/csv",
        charset="utf-8",
        headers={"Content-Disposition": 'attachment; filename="hayakoe-dictionary.csv"'},
    )


# -- status --------------------------------------------------------------------------------


def _rss_bytes() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


async def status(request: web.Request) -> web.Response:
    state = request.app[STATE]
    admission = state.admission
    return web.json_response(
        {
            "version": __version__,
            "uptime_s": round(time.monotonic() - state.started, 1),
            "voices": [
                {
                    "name": name,
                    "styles": speaker.styles,
                    "in_flight": admission.in_flight_for(name),
                    **_runs(speaker),
                }
                for name, speaker in state.catalog.speakers.items()
            ],
            "memory": {"rss_bytes": _rss_bytes()},
            "requests": admission.admitted,
            "in_flight": admission.in_flight,
            "max_queue": admission.max_queue,
            "draining": admission.draining,
            "warnings": state.warnings.latest(),
        }
    )


async def measure_again(request: web.Request) -> web.Response:
    """Take a voice's speed measurement (`precision="auto"`: fp32 against int8) again, in
    the background, pausing while requests run; its reason on the status says the result."""
    state = request.app[STATE]
    name = request.match_info["name"]
    names = sorted(state.catalog.speakers)
    if name not in names:
        raise BadRequest("name", f"no voice named {name!r}", 404, names, code="unknown_voice")
    if state.measurer is None:
        raise BadRequest(
            "name", "this server takes no speed measurements", 409, code="not_measurable"
        )
    try:
        await asyncio.to_thread(state.measurer.measure_again, name)
    except KeyError:
        raise BadRequest(
            "name", f"no voice named {name!r}", 404, names, code="unknown_voice"
        ) from None
    except ValueError as exc:
        raise BadRequest("name", str(exc), 409, code="not_measurable") from None
    return web.json_response({"voice": name, "measuring": True}, status=202)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/api/voices", voices)
    app.router.add_get("/api/sample", sample)
    app.router.add_post("/api/speak", speak)
    app.router.add_post("/api/reading", reading)
    app.router.add_get("/api/dictionary", dictionary)
    app.router.add_post("/api/dictionary", dictionary_put)
    app.router.add_post("/api/dictionary/delete", dictionary_delete)
    app.router.add_post("/api/dictionary/import", dictionary_import)
    app.router.add_get("/api/dictionary.csv", dictionary_csv)
    app.router.add_get("/api/status", status)
    app.router.add_post("/api/voices/{name}/measure", measure_again)
