"""The VOICEVOX / AivisSpeech engine API's routes (`app.build_api_app` mounts them).

Served: ``GET /version``, ``/core_versions``, ``/engine_manifest``, ``/speakers``,
``/speaker_info``, ``/supported_devices``, ``/is_initialized_speaker``, ``/presets``,
``/user_dict``; ``POST /initialize_speaker``, ``/audio_query``, ``/accent_phrases``,
``/mora_data`` (and ``/mora_length``, ``/mora_pitch``), ``/synthesis``, ``/multi_synthesis``,
``/connect_waves``, ``/validate_kana``, ``/user_dict_word`` (add; ``PUT``/``DELETE
/user_dict_word/{uuid}``), ``/import_user_dict``. The other endpoints VOICEVOX or
AivisSpeech serve answer 501 naming themselves (`NOT_SERVED`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import tempfile
import uuid
import zipfile
from typing import IO, Any

import numpy as np
from aiohttp import web

from engine import __version__
from engine.text.accents import AccentPhrase
from engine.text.accents import accent_phrases as read_accents
from engine.text.from_phrases import PhrasedText
from engine.text.pipeline import TextPipeline
from engine.text.userdict import UserDictionaryError, UserWord

from ..errors import ClientGone
from ..net.http_guard import client_left
from ..speech import OutputBudget, SpeechRequest
from .audio_formats import MAX_JOINED_BYTES, read_wav, wav_bytes
from .errors import Invalid, Refused, json_answer, read_json
from .kana import KanaError, parse_kana
from .queries import phrases_from_json, phrases_json, query_json, scales_from_json
from .speaker_media import SpeakerMedia, StyleMedia, speaker_media
from .state import API_STATE, ApiState

__all__ = ["NOT_SERVED", "add_voicevox_routes"]

_LOGGER = logging.getLogger(__name__)

_ZIP_IN_MEMORY = 8 << 20
"""A ``/multi_synthesis`` ZIP is kept in memory up to this size, then in a temporary file."""
Loc = tuple[str | int, ...]


_DICT_NAMESPACE = uuid.UUID("0b1f7f8e-5d2c-4c0e-8f7a-3f5b2a9d6c41")
_WORD_TYPES = {"PROPER_NOUN": "proper_noun", "COMMON_NOUN": "noun"}

NOT_SERVED = (
    ("POST", "/sing_frame_audio_query"),
    ("POST", "/sing_frame_volume"),
    ("POST", "/frame_synthesis"),
    ("POST", "/synthesis_morphing"),
    ("POST", "/morphable_targets"),
    ("POST", "/cancellable_synthesis"),
    ("GET", "/singers"),
    ("GET", "/singer_info"),
    ("GET", "/downloadable_libraries"),
    ("GET", "/installed_libraries"),
    ("POST", "/install_library/{library_uuid}"),
    ("POST", "/uninstall_library/{library_uuid}"),
    ("POST", "/add_preset"),
    ("POST", "/update_preset"),
    ("POST", "/delete_preset"),
    ("GET", "/aivm_models"),
    ("POST", "/aivm_models/install"),
    ("GET", "/setting"),
    ("POST", "/setting"),
)


def _state(request: web.Request) -> ApiState:
    return request.app[API_STATE]


# -- engine and speakers -------------------------------------------------------------------


async def version(request: web.Request) -> web.Response:
    return json_answer(__version__)


async def core_versions(request: web.Request) -> web.Response:
    return json_answer([__version__])


async def engine_manifest(request: web.Request) -> web.Response:
    return json_answer(
        {
            "manifest_version": "0.13.1",
            "name": "wyoming-hayakoe",
            "brand_name": "wyoming-hayakoe",
            "uuid": "2a2a6b58-5f0d-4bb5-9c1f-4e0b9a0f7c11",
            "version": __version__,
            "url": "https://github.com/wyoming-hayakoe/wyoming-hayakoe",
            "icon": "",
            "default_sampling_rate": 44100,
            "frame_rate": 86.1328125,
            "terms_of_service": "",
            "update_infos": [],
            "dependency_licenses": [],
            "supported_features": {
                "adjust_mora_pitch": False,
                "adjust_phoneme_length": False,
                "adjust_speed_scale": True,
                "adjust_pitch_scale": True,
                "adjust_intonation_scale": True,
                "adjust_volume_scale": True,
                "adjust_pause_length": False,
                "interrogative_upspeak": False,
                "synthesis_morphing": False,
                "sing": False,
                "manage_library": False,
                "return_resource_url": False,
                "apply_katakana_english": True,
            },
        }
    )


async def speakers(request: web.Request) -> web.Response:
    state = _state(request)
    table = state.styles()
    out = []
    for name, speaker in state.catalog.speakers.items():
        entries = table.of_voice(name)
        if not entries:
            continue
        out.append(
            {
                "name": name,
                "speaker_uuid": entries[0].speaker_uuid,
                "styles": [{"name": e.style, "id": e.id, "type": "talk"} for e in entries],
                "version": speaker.version or __version__,
                "supported_features": {"permitted_synthesis_morphing": "NOTHING"},
            }
        )
    return json_answer(out)


async def speaker_info(request: web.Request) -> web.Response:
    state = _state(request)
    wanted = request.query.get("speaker_uuid")
    if wanted is None:
        raise Invalid(("query", "speaker_uuid"), "Field required", "missing")
    table = state.styles()
    entry = next((e for e in table.entries if e.speaker_uuid == wanted), None)
    if entry is None:
        raise Refused(404, f"no speaker has the UUID {wanted}")
    speaker = state.speaker(entry)
    identity = speaker.identity
    media = SpeakerMedia()
    policy = speaker.attribution_url
    if identity is not None:
        policy = identity.license or policy
        if identity.aivm:
            media = await asyncio.to_thread(speaker_media, identity.source, wanted)
    infos = []
    for e in table.of_voice(entry.voice):
        style = media.styles.get(e.style, StyleMedia(icon=media.portrait))
        infos.append(
            {
                "id": e.id,
                "icon": style.icon,
                "portrait": None,
                "voice_samples": list(style.samples),
                "voice_sample_transcripts": list(style.transcripts),
            }
        )
    return json_answer({"policy": policy, "portrait": media.portrait, "style_infos": infos})


async def supported_devices(request: web.Request) -> web.Response:
    return json_answer({"cpu": True, "cuda": False, "dml": False})


async def is_initialized_speaker(request: web.Request) -> web.Response:
    _state(request).style(request.query.get("speaker"))
    return json_answer(True)


async def initialize_speaker(request: web.Request) -> web.Response:
    _state(request).style(request.query.get("speaker"))
    return web.Response(status=204)


async def presets(request: web.Request) -> web.Response:
    return json_answer([])


# -- readings ------------------------------------------------------------------------------


async def _phrases_of(state: ApiState, text: str) -> PhrasedText:
    """What Wyoming would say: the pipeline's sentences (rewritten, split) read by accent
    phrase, each sentence's end marked."""

    def read() -> PhrasedText:
        readings = TextPipeline(rewrite=state.rewrite, first_clause=0).readings(text)
        phrases: list[AccentPhrase] = []
        ends: list[int] = []
        for sentence in readings.sentences:
            found = read_accents(sentence)
            if found:
                phrases.extend(found)
                ends.append(len(phrases) - 1)
        return PhrasedText(phrases, ends)

    return await asyncio.to_thread(read)


def _kana_phrases(text: str) -> PhrasedText:
    try:
        return PhrasedText(parse_kana(text))
    except KanaError as exc:
        raise Refused(400, f"text: {exc}") from None


async def audio_query(request: web.Request) -> web.Response:
    state = _state(request)
    entry = state.style(request.query.get("speaker"))
    text = state.text(request.query.get("text"), ("query", "text"))
    rate = state.speaker(entry).sample_rate  # before the await: the voice may leave meanwhile
    spoken = await _phrases_of(state, text)
    return json_answer(query_json(spoken, rate))


async def accent_phrases(request: web.Request) -> web.Response:
    state = _state(request)
    state.style(request.query.get("speaker"))
    text = state.text(request.query.get("text"), ("query", "text"))
    if request.query.get("is_kana", "false").lower() == "true":
        spoken = _kana_phrases(text)
    else:
        spoken = await _phrases_of(state, text)
    return json_answer(phrases_json(spoken))


async def mora_data(request: web.Request) -> web.Response:
    _state(request).style(request.query.get("speaker"))
    spoken = phrases_from_json(await read_json(request), ("body",))
    return json_answer(phrases_json(spoken))


async def validate_kana(request: web.Request) -> web.Response:
    text = request.query.get("text")
    if text is None:
        raise Invalid(("query", "text"), "Field required", "missing")
    _kana_phrases(text)
    return json_answer(True)


# -- synthesis -----------------------------------------------------------------------------


def _speech_request(state: ApiState, style_raw: object, query: object, loc: Loc) -> SpeechRequest:
    """An AudioQuery as a request for the request service (each field checked, `Invalid`
    naming it under `loc`)."""
    if not isinstance(query, dict):
        raise Invalid(loc, "Input should be a valid dictionary", "dict_type")
    spoken = phrases_from_json(query.get("accent_phrases"), (*loc, "accent_phrases"))
    scales = scales_from_json(query)
    entry = state.style(style_raw)
    return SpeechRequest(
        spoken, entry.voice, entry.style, options=scales.options(), door="voicevox"
    )


async def _wav_of(
    state: ApiState,
    request: web.Request,
    asked: SpeechRequest,
    stereo: bool,
    budget: OutputBudget | None = None,
) -> bytes:
    """One query's WAV; stops (`ClientGone`) as soon as the client has left."""
    with state.service.open(asked, budget) as speech:
        pieces: list[np.ndarray] = []
        async with contextlib.aclosing(speech.stream()) as chunks:
            async for chunk in chunks:
                if client_left(request):
                    raise ClientGone(request.path)
                pieces.append(chunk.data)
        samples = np.concatenate(pieces) if pieces else np.zeros(0, np.int16)
        rate = speech.rate
    return await asyncio.to_thread(wav_bytes, samples, rate, stereo)


async def synthesis(request: web.Request) -> web.Response:
    state = _state(request)
    query = await read_json(request)
    asked = _speech_request(state, request.query.get("speaker"), query, ("body",))
    stereo = isinstance(query, dict) and query.get("outputStereo") is True
    try:
        wav = await _wav_of(state, request, asked, stereo)
    except ClientGone:
        return _gone(request)
    return web.Response(body=wav, content_type="audio/wav")


def _gone(request: web.Request) -> web.Response:
    _LOGGER.debug("%s: the client left; its synthesis stopped", request.path)
    return web.Response(status=400, text="the client left")


async def multi_synthesis(request: web.Request) -> web.StreamResponse:
    """A ZIP of WAVs, one per query: the queries checked and their least audio held to the
    request's budget before any is spoken; the ZIP built off the event loop in a file that
    spills to disk; the work stops when the client leaves."""
    state = _state(request)
    queries = await read_json(request)
    if not isinstance(queries, list):
        raise Invalid(("body",), "Input should be a valid list", "list_type")
    state.service.check_queries(len(queries))
    speaker = request.query.get("speaker")
    asked = [_speech_request(state, speaker, q, ("body", i)) for i, q in enumerate(queries)]
    budget = state.service.budget()
    state.service.reserve(asked, budget)
    spool = tempfile.SpooledTemporaryFile(max_size=_ZIP_IN_MEMORY)
    try:
        return await _zip_answer(state, request, queries, asked, budget, spool)
    except ClientGone:
        return _gone(request)
    finally:
        spool.close()


async def _zip_answer(
    state: ApiState,
    request: web.Request,
    queries: list[Any],
    asked: list[SpeechRequest],
    budget: OutputBudget,
    spool: IO[bytes],
) -> web.StreamResponse:
    with zipfile.ZipFile(spool, "w", zipfile.ZIP_STORED) as archive:
        for i, (query, one) in enumerate(zip(queries, asked, strict=True), 1):
            stereo = query.get("outputStereo") is True
            wav = await _wav_of(state, request, one, stereo, budget)
            await asyncio.to_thread(archive.writestr, f"{i:03d}.wav", wav)
    response = web.StreamResponse(headers={"Content-Type": "application/zip"})
    response.content_length = spool.tell()
    await response.prepare(request)
    spool.seek(0)
    while block := await asyncio.to_thread(spool.read, 1 << 16):
        await response.write(block)
    await response.write_eof()
    return response


async def connect_waves(request: web.Request) -> web.Response:
    waves = await read_json(request)
    if not isinstance(waves, list) or not waves:
        raise Invalid(("body",), "a list of base64 WAV files", "list_type")
    rate_seen: tuple[int, int] | None = None
    parts = []
    joined_bytes = 0
    for i, item in enumerate(waves):
        try:  # a bad header (rate, channels, bits, sizes) a 422 naming the item
            rate, channels, samples = read_wav(base64.b64decode(str(item), validate=True))
        except ValueError as exc:
            raise Invalid(("body", i), str(exc)) from None
        if rate_seen is not None and rate_seen != (rate, channels):
            raise Invalid(("body", i), "every WAV must have the first one's rate and channels")
        rate_seen = (rate, channels)
        joined_bytes += samples.nbytes
        if joined_bytes > MAX_JOINED_BYTES:
            raise Invalid(
                ("body", i),
                f"the WAVs up to this one hold {joined_bytes} bytes of samples; "
                f"at most {MAX_JOINED_BYTES} are joined",
            )
        parts.append(samples)
    assert rate_seen is not None
    joined = np.concatenate(parts)
    if rate_seen[1] == 2:
        joined = joined[::2]
    return web.Response(
        body=wav_bytes(joined, rate_seen[0], rate_seen[1] == 2), content_type="audio/wav"
    )


# -- user dictionary -----------------------------------------------------------------------


def _word_uuid(surface: str) -> str:
    return str(uuid.uuid5(_DICT_NAMESPACE, surface))


def _word_json(word: UserWord) -> dict[str, Any]:
    from engine.text.userdict import count_morae

    return {
        "surface": word.surface,
        "priority": word.priority,
        "context_id": 1348,
        "part_of_speech": "名詞",
        "part_of_speech_detail_1": "固有名詞" if word.pos == "proper_noun" else "一般",
        "part_of_speech_detail_2": "一般",
        "part_of_speech_detail_3": "*",
        "inflectional_type": "*",
        "inflectional_form": "*",
        "stem": "*",
        "yomi": word.reading,
        "pronunciation": word.reading,
        "accent_type": word.accent if word.accent is not None else 0,
        "mora_count": count_morae(word.reading),
        "accent_associative_rule": "*",
    }


async def user_dict(request: web.Request) -> web.Response:
    state = _state(request)
    words, _ = await asyncio.to_thread(state.dictionary.read)
    return json_answer({_word_uuid(w.surface): _word_json(w) for w in words})


_API_FIELDS = {
    "surface": "surface",
    "reading": "pronunciation",
    "accent": "accent_type",
    "priority": "priority",
    "pos": "word_type",
}
"""The engine's name of a word's field → VOICEVOX's, for a refusal's ``loc``."""


def _word_from_query(query: Any, loc: tuple[str | int, ...] = ("query",)) -> UserWord:
    """A word from VOICEVOX's fields, through the engine's one check (`UserWord.make`): a
    bad one is `Invalid` naming VOICEVOX's field (``surface``, ``pronunciation``, ...)."""
    surface = query.get("surface")
    reading = query.get("pronunciation")
    for name, value in (("surface", surface), ("pronunciation", reading)):
        if value is None or value == "":
            raise Invalid((*loc, name), "Field required", "missing")
        if not isinstance(value, str):
            raise Invalid((*loc, name), "Input should be a valid string", "string_type")
    numbers = {}
    for name, default in (("accent_type", None), ("priority", 5)):
        value = query.get(name, default)
        if value is None:
            raise Invalid((*loc, name), "Field required", "missing")
        try:
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                raise TypeError
            numbers[name] = int(value)
        except (TypeError, ValueError):
            raise Invalid((*loc, name), "Input should be a valid integer", "int_parsing") from None
    word_type = str(query.get("word_type") or "PROPER_NOUN")
    pos = _WORD_TYPES.get(word_type)
    if pos is None:
        raise Invalid(
            (*loc, "word_type"), f"one of {', '.join(_WORD_TYPES)} here, got {word_type!r}"
        )
    try:
        return UserWord.make(
            surface, reading, numbers["accent_type"], numbers["priority"], pos, where="word"
        )
    except UserDictionaryError as exc:
        field = _API_FIELDS.get(exc.field or "", "surface")
        raise Invalid((*loc, field), str(exc)) from None


async def user_dict_add(request: web.Request) -> web.Response:
    state = _state(request)
    word = _word_from_query(request.query)

    def change(table: dict[str, UserWord]) -> None:
        table[word.surface] = word

    await _edit(state, change)
    return json_answer(_word_uuid(word.surface))


async def _edit(state: ApiState, change: Any) -> Any:
    from ..web.dictionary import FieldError

    try:
        return await state.dictionary.edit(change)
    except FieldError as exc:
        raise Refused(422 if exc.field != "dictionary" else 503, str(exc)) from None


def _surface_of(words: list[UserWord], word_uuid: str) -> str:
    for w in words:
        if _word_uuid(w.surface) == word_uuid:
            return w.surface
    raise Refused(422, f"no word has the UUID {word_uuid}")


async def user_dict_put(request: web.Request) -> web.Response:
    state = _state(request)
    word = _word_from_query(request.query)
    words, _ = await asyncio.to_thread(state.dictionary.read)
    old = _surface_of(words, request.match_info["word_uuid"])

    def change(table: dict[str, UserWord]) -> None:
        table.pop(old, None)
        table[word.surface] = word

    await _edit(state, change)
    return web.Response(status=204)


async def user_dict_delete(request: web.Request) -> web.Response:
    state = _state(request)
    words, _ = await asyncio.to_thread(state.dictionary.read)
    old = _surface_of(words, request.match_info["word_uuid"])

    def change(table: dict[str, UserWord]) -> None:
        table.pop(old, None)

    await _edit(state, change)
    return web.Response(status=204)


async def import_user_dict(request: web.Request) -> web.Response:
    state = _state(request)
    data = await read_json(request)
    if not isinstance(data, dict):
        raise Invalid(("body",), "Input should be a valid dictionary", "dict_type")
    override = request.query.get("override", "false").lower() == "true"
    words = []
    for key, raw in data.items():
        if not isinstance(raw, dict):
            raise Invalid(("body", key), "Input should be a valid dictionary", "dict_type")
        words.append(_word_from_query({**raw, "word_type": "PROPER_NOUN"}, ("body", key)))

    def change(table: dict[str, UserWord]) -> None:
        for w in words:
            if override or w.surface not in table:
                table[w.surface] = w

    await _edit(state, change)
    return web.Response(status=204)


def _not_served(method: str, path: str) -> Any:
    async def handler(request: web.Request) -> web.Response:
        raise Refused(501, f"{method} {path} is not served by this engine (wyoming-hayakoe)")

    return handler


def add_voicevox_routes(app: web.Application) -> None:
    r = app.router
    r.add_get("/version", version)
    r.add_get("/core_versions", core_versions)
    r.add_get("/engine_manifest", engine_manifest)
    r.add_get("/speakers", speakers)
    r.add_get("/speaker_info", speaker_info)
    r.add_get("/supported_devices", supported_devices)
    r.add_get("/is_initialized_speaker", is_initialized_speaker)
    r.add_post("/initialize_speaker", initialize_speaker)
    r.add_get("/presets", presets)
    r.add_post("/audio_query", audio_query)
    r.add_post("/accent_phrases", accent_phrases)
    for path in ("/mora_data", "/mora_length", "/mora_pitch"):
        r.add_post(path, mora_data)
    r.add_post("/validate_kana", validate_kana)
    r.add_post("/synthesis", synthesis)
    r.add_post("/multi_synthesis", multi_synthesis)
    r.add_post("/connect_waves", connect_waves)
    r.add_get("/user_dict", user_dict)
    r.add_post("/user_dict_word", user_dict_add)
    r.add_put("/user_dict_word/{word_uuid}", user_dict_put)
    r.add_delete("/user_dict_word/{word_uuid}", user_dict_delete)
    r.add_post("/import_user_dict", import_user_dict)
    for method, path in NOT_SERVED:
        r.add_route(method, path, _not_served(method, path))
