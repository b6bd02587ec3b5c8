"""The served voices from `Settings`: the `TTS` with every voice registered, loaded, and the
`VoiceCatalog` (default voice, presets) that requests are resolved against.

One builder for the server and for ``wyoming-hayakoe say`` (which loads its voice here so
that it speaks exactly as the server would); it imports nothing of the listening code.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from engine import EMBEDDED_VOICE_NAME, TTS, Speaker
from engine.aivm import is_aivm_source
from engine.aivm import voices_in_dir as aivm_voices_in_dir
from engine.aivm import voices_of_file as aivm_voices_of_file

from .info import VoiceCatalog
from .presets import output_options, resolve_presets
from .resolve import name_key
from .settings import Settings

if TYPE_CHECKING:
    from pathlib import Path

    from .library.manager import Library

__all__ = [
    "attach_library",
    "build_catalog",
    "build_speakers",
    "build_tts",
    "default_voice",
    "library_folder",
    "library_voices",
    "prepare_tts",
]

_LOGGER = logging.getLogger(__name__)


def library_folder(settings: Settings) -> Path | None:
    """The voice library's folder, or None with ``--no-library``."""
    lib = settings.library
    return lib.folder_for(settings.cache_dir) if lib.enabled else None


def _library_registrations(settings: Settings) -> list[tuple[str, str]]:
    from .library.serving import startup_registrations

    folder = library_folder(settings)
    if folder is None:
        return []
    explicit = [v.name for v in settings.voices if v.source is not None]
    return startup_registrations(folder, settings.cache_dir, explicit)


def library_voices(settings: Settings) -> list[str]:
    """Every voice the library lists, served or not ([] with ``--no-library``)."""
    from .library.serving import listed_voices

    folder = library_folder(settings)
    return listed_voices(folder) if folder is not None else []


def build_tts(
    settings: Settings,
    library: list[tuple[str, str]] | None = None,
    listed: Sequence[str] = (),
) -> TTS:
    """A `TTS` with every configured voice registered (nothing loaded yet), and the
    library's `library` voices. A voice named only (``--default-voice NAME``, a preset's
    voice: no source) that the library has is the library's: a preset or the default voice
    may be a library voice. One the library lists (`listed`) but cannot serve (its file is
    gone) is left out with a warning, never looked up on Hugging Face; when that leaves no
    voice at all, the embedded voice is served."""
    library = library or []
    in_library = {name_key(n) for n, _ in library}
    unserved = {name_key(n) for n in listed} - in_library
    tts = TTS(
        settings.device,
        cache_dir=settings.cache_dir,
        bert_source=settings.bert_source,
        hf_token=settings.hf_token,
        rewrite=settings.rewrite,
        options=settings.engine,
    )
    waiting = False
    for spec in settings.voices:
        if spec.source is None and name_key(spec.name) in in_library:
            continue
        if spec.source is None and name_key(spec.name) in unserved:
            waiting = True
            _LOGGER.warning(
                "Voice %s is a library voice that cannot be served now (see above); "
                "it is not looked up anywhere else",
                spec.name,
            )
            continue
        for name, source in _expand(spec.name, spec.source, settings):
            tts.load(name, source=source)
    for folder in settings.voice_dirs:
        found, _bad = aivm_voices_in_dir(folder, taken=tts.registered)  # bad files are logged
        for name, source in found:
            tts.load(name, source=source)
    taken = {name_key(n) for n in tts.registered}
    for name, source in library:
        if name_key(name) in taken:
            _LOGGER.error("Library voice %s left out: it is also a configured voice", name)
            continue
        tts.load(name, source=source)
    if waiting and not tts.registered:  # only library voices were named, none served
        _LOGGER.warning("No voice to serve: serving %s", EMBEDDED_VOICE_NAME)
        tts.load(EMBEDDED_VOICE_NAME)
    return tts


def _expand(name: str, source: str | None, settings: Settings) -> list[tuple[str, str | None]]:
    """One registration per voice: an AivisHub file with several speakers is one voice per
    speaker (`NAME-<speaker>`); a file that cannot be read stays one registration, which
    fails at load with the file and the reason, leaving the other voices served."""
    if source is None or not is_aivm_source(source):
        return [(name, source)]
    try:
        return list(
            aivm_voices_of_file(
                source,
                name,
                cache_dir=settings.cache_dir,
                token=settings.hf_token,
                offline=settings.engine.offline,
            )
        )
    except Exception as exc:  # noqa: BLE001 - reported again, with the voice, by prepare
        _LOGGER.debug("Voice %s: %s", name, exc)
        return [(name, source)]


def prepare_tts(
    settings: Settings, *, watch_dictionaries: bool = True, skip_failed: bool = True
) -> TTS:
    """Load every configured voice (the slow part: downloads, sessions, warm-up); int8
    graphs still to be made are made in the background when the settings ask for it (the
    server's default; `TTS.close` stops that), else before this returns.

    The server's way (the defaults): the user dictionaries are watched (reloaded when they
    change), and a voice that cannot be loaded (a corrupt file, a source out of reach) is
    left out with an error in the log naming the reason while the others are served; when
    none can be loaded, the first voice's error is raised (the server does not start).
    The server's way also loads the voice library's voices (`wyoming_hayakoe.library`),
    after the configured ones. One request and out (``say``): `watch_dictionaries` False
    loads the dictionaries once, `skip_failed` False raises the first voice that cannot be
    loaded (and the library is not loaded)."""
    # the server: the library's voices too, after the configured ones
    tts = (
        build_tts(settings, _library_registrations(settings), library_voices(settings))
        if skip_failed
        else build_tts(settings)
    )
    if watch_dictionaries and settings.user_dicts:
        tts.watch_user_dictionaries(settings.user_dicts)
    elif settings.user_dicts:
        for path in settings.user_dicts:
            tts.load_user_dictionary(path)
    try:
        tts.prepare(warmup=settings.warmup, compile=settings.use_compile, skip_failed=skip_failed)
    except BaseException:
        tts.close()
        raise
    if not tts.speakers:
        tts.close()
        raise next(iter(tts.failed.values()))
    return tts


def build_speakers(settings: Settings) -> dict[str, Speaker]:
    """`prepare_tts`'s speakers."""
    return prepare_tts(settings).speakers


def default_voice(settings: Settings, speakers: Mapping[str, Speaker]) -> str:
    """`--default-voice`, or the first voice that loaded when that one could not be."""
    if settings.default_voice in speakers or not speakers:
        return settings.default_voice
    if not settings.default_voice:  # only --voice-dir: the first voice that loaded
        return next(iter(speakers))
    fallback = ([v.name for v in settings.voices if v.name in speakers] or list(speakers))[0]
    _LOGGER.error(
        "Default voice %s could not be loaded; requests that name no voice get %s",
        settings.default_voice,
        fallback,
    )
    return fallback


def build_catalog(settings: Settings, speakers: Mapping[str, Speaker]) -> VoiceCatalog:
    """The loaded speakers as the served voices: the default voice and style, the output
    flags, and the presets checked against the speakers (`PresetError` names the preset)."""
    catalog = VoiceCatalog(
        speakers,
        default_voice(settings, speakers),
        settings.default_style,
        output=output_options(settings.output),
        synthesis=settings.synthesis.as_options(),
    )
    catalog.presets = resolve_presets(
        settings.presets,
        speakers,
        synthesis=settings.synthesis,
        output=settings.output,
        default_style=catalog.style_for,
        taken=catalog.voice_names(),
        waiting=[v for v in library_voices(settings) if v not in speakers],
    )
    return catalog


def attach_library(settings: Settings, tts: TTS, catalog: VoiceCatalog) -> Library | None:
    """The voice library over the server's `tts` and `catalog` (`catalog.library`, where
    the page finds it), its jobs and watcher started; None when ``--no-library``. Call on
    the server's event loop; `Library.close` stops it."""
    from .library.manager import Library
    from .library.options import LibraryConfig

    folder = library_folder(settings)
    if folder is None:
        return None
    config = LibraryConfig(
        folder=folder,
        cache_dir=settings.cache_dir,
        options=settings.library,
        warmup=settings.warmup,
        drain_timeout=settings.drain_timeout,
    )
    catalog.follow(lambda: tts.speakers)  # the engine's map is the one list of served voices
    library = Library(config, tts, catalog)
    catalog.library = library
    library.start()
    return library
