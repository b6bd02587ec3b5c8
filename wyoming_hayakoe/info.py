"""What the server tells clients it can do (`describe` → `info`), and request → speaker/style.

Naming (documented in the README): every loaded voice is a Wyoming voice named like the
engine's speaker (``openjtalk-mei``, ``jvnv-F1-jp``), with its styles as Wyoming
*speakers*. Home Assistant's Assist passes only a voice name and its UI shows no speakers,
so each style is also a voice of its own: ``VOICE:STYLE`` (``jvnv-F1-jp:Happy``).
Presets (`presets`) are voices too, by their own name (``alarm``), after the others.
Each voice's description ends with the arithmetic it runs now (``int8`` or ``fp32``); a voice
that switches to int8 once its graphs are made in the background (`engine.int8.background`)
says so in the next `describe` (`InfoAnswer`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wyoming.event import Event
from wyoming.info import Attribution, Info, TtsProgram, TtsVoice, TtsVoiceSpeaker
from wyoming.tts import SynthesizeVoice

from engine import OutputOptions, Speaker, __version__

from .resolve import (
    PresetTarget,
    Resolution,
    VoiceNames,
    resolve_name,
    style_voice_name,
)

if TYPE_CHECKING:
    from .library.manager import Library
    from .presets import PresetVoice

__all__ = [
    "LANGUAGE",
    "InfoAnswer",
    "Resolved",
    "VoiceCatalog",
    "build_info",
    "describe_speaker",
]

_LOGGER = logging.getLogger(__name__)

LANGUAGE = "ja"  # Home Assistant matches languages exactly
PROGRAM_NAME = "hayakoe"
PROGRAM_URL = "https://github.com/wyoming-hayakoe/wyoming-hayakoe"


@dataclass(frozen=True)
class Resolved:
    """The speaker and style a request gets (and a preset's options)."""

    speaker: Speaker
    style: str
    options: Mapping[str, Any] = field(default_factory=dict)
    """The request's synthesis options, merged: the server-wide ones (`VoiceCatalog.synthesis`)
    under a preset's. What `Speaker.astream`/`stream` take as keywords, as they are."""
    output: OutputOptions = OutputOptions()
    """Output shaping of this request (server-wide flags, or the preset's)."""
    preset: str | None = None

    @property
    def rate(self) -> int:
        """The sample rate the client gets."""
        return self.output.rate_for(self.speaker.sample_rate)


class VoiceCatalog:
    """The loaded speakers, the defaults, and how a requested voice maps onto them."""

    def __init__(
        self,
        speakers: Mapping[str, Speaker],
        default_voice: str,
        default_style: str | None = None,
        *,
        presets: Mapping[str, PresetVoice] | None = None,
        output: OutputOptions | None = None,
        synthesis: Mapping[str, Any] | None = None,
    ) -> None:
        if not speakers:
            raise ValueError("VoiceCatalog needs at least one speaker")
        self._fixed: Mapping[str, Speaker] = dict(speakers)
        self._source: Callable[[], Mapping[str, Speaker]] | None = None
        if default_voice not in self.speakers:
            loaded = ", ".join(self.speakers)
            raise ValueError(f"default voice {default_voice!r} is not loaded (loaded: {loaded})")
        self.default_voice = default_voice
        self.default_style = default_style
        self.presets = dict(presets or {})
        self.output = output or OutputOptions()
        """Output shaping of requests for a voice that is not a preset."""
        self.synthesis: Mapping[str, Any] = dict(synthesis or {})
        """Server-wide synthesis options (speed, sentence_silence, ...: the flags), under
        every request's (a preset's own are merged over them)."""
        if default_style and default_style not in self.speakers[default_voice].styles:
            _LOGGER.warning(
                "--default-style %r is not a style of %s (styles: %s); using %s",
                default_style,
                default_voice,
                ", ".join(self.speakers[default_voice].styles),
                self.speakers[default_voice].default_style,
            )

    library: Library | None = None
    """The voice library (set by `voices.attach_library`) that changes the served voices
    while the server runs; None: the voices are fixed."""

    @property
    def speakers(self) -> Mapping[str, Speaker]:
        """The served speakers by name, as they are now: the engine's own map once the
        catalog `follow`s a `TTS` (the one list of served voices), a fixed map before. A
        request takes it once and keeps it for its resolution."""
        return self._source() if self._source is not None else self._fixed

    def follow(self, source: Callable[[], Mapping[str, Speaker]]) -> None:
        """Read the served voices from `source` from now on (`TTS.speakers`: voices the
        library adds, removes or replaces are served at once, with nothing kept in step)."""
        self._source = source

    def in_use(self, names: Sequence[str]) -> str | None:
        """Why `names` cannot be removed (the default voice, a preset using one), or None."""
        for name in names:
            if name == self.default_voice:
                return f"{name} is the default voice (--default-voice)"
            for preset in self.presets.values():
                if preset.voice == name:
                    return f"preset {preset.name!r} uses {name}"
        return None

    def style_for(self, speaker: Speaker) -> str:
        """The style a request for `speaker` gets when it names none."""
        if self.default_style and self.default_style in speaker.styles:
            return self.default_style
        return speaker.default_style

    def names(self, speakers: Mapping[str, Speaker] | None = None) -> VoiceNames:
        """The names the rule (`wyoming_hayakoe.resolve`) knows: voices, styles, presets."""
        speakers = self.speakers if speakers is None else speakers
        return VoiceNames(
            {name: tuple(speaker.styles) for name, speaker in speakers.items()},
            {
                p.name: PresetTarget(p.voice, p.style or None)
                for p in self.presets.values()
                if p.voice in speakers
            },
            {  # a preset of a voice not served: a request is told which voice is missing
                p.name: p.voice for p in self.presets.values() if p.voice not in speakers
            },
        )

    def voice_names(self) -> list[str]:
        """Every voice name served: voices, ``VOICE:STYLE``, presets."""
        return self.names().all()

    def lookup(
        self,
        name: str | None,
        style: str | None = None,
        speakers: Mapping[str, Speaker] | None = None,
    ) -> Resolution:
        """The rule applied to these voices (problems kept, fallbacks filled in)."""
        return resolve_name(self.names(speakers), name, style, default=self.default_voice)

    def resolve(self, voice: SynthesizeVoice | None) -> Resolved:
        """Wyoming's request → speaker and style; a name that matches nothing falls back to
        the default voice (an unknown style: the voice's default style) with a warning that
        lists what is available (Home Assistant caches voice lists: speech beats silence)."""
        speakers = self.speakers  # one state of the voices for the whole resolution
        found = self.lookup(
            voice.name if voice else None, voice.speaker if voice else None, speakers
        )
        for problem in found.problems:
            fallback = found.voice if problem.kind == "voice" else found.style
            _LOGGER.warning(
                "%s; using %s",
                _capitalised(str(problem)),
                fallback or self.style_for(speakers[found.voice]),
            )
        return self._resolved(found, speakers)

    def resolve_exact(self, name: str | None, style: str | None = None) -> Resolved:
        """The page's and ``say``'s request → speaker and style; `UnknownNameError` (naming
        the asked name and the available ones) when the name or style matches nothing."""
        speakers = self.speakers
        return self._resolved(self.lookup(name, style, speakers).exact(), speakers)

    def _resolved(self, found: Resolution, speakers: Mapping[str, Speaker]) -> Resolved:
        speaker = speakers[found.voice]
        if found.preset is not None:
            preset = self.presets[found.preset]
            options = {**self.synthesis, **preset.options}
            style = found.style or preset.style or self.style_for(speaker)
            return Resolved(speaker, style, options, preset.output, preset.name)
        style = found.style or self.style_for(speaker)
        return Resolved(speaker, style, dict(self.synthesis), output=self.output)


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def describe_speaker(name: str, speaker: Speaker) -> str:
    """A voice's description: what it is and the arithmetic it runs now."""
    runs = f", runs {speaker.runs}" if speaker.runs else ""
    return f"{name}: {speaker.description}{runs}"


class InfoAnswer:
    """The `info` event for `describe`, built from the voices as they are at each call, and
    built again only when they changed: a voice's precision (a voice switches to int8 once,
    between requests, when its background graphs pass), or voices installed, removed or updated
    (`wyoming_hayakoe.library`). Thread-safe: a `describe` racing a change answers one
    state or the other."""

    def __init__(self, catalog: VoiceCatalog, *, streaming: bool) -> None:
        self._catalog = catalog
        self._streaming = streaming
        self._key: tuple[str, ...] | None = None
        self._event: Event | None = None

    def event(self) -> Event:
        speakers = self._catalog.speakers  # one mapping for the key and the answer
        key = tuple(f"{n}\0{s.runs}\0{s.version}\0{id(s)}" for n, s in speakers.items())
        if self._event is None or key != self._key:
            self._event = build_info(self._catalog, streaming=self._streaming).event()
            self._key = key
        return self._event


def build_info(catalog: VoiceCatalog, *, streaming: bool) -> Info:
    """The `info` answer: one TTS program; each speaker a voice (styles as Wyoming speakers),
    plus one voice per speaker × style."""
    voices: list[TtsVoice] = []
    speakers = catalog.speakers  # one state of the voices for the whole answer
    for name, speaker in speakers.items():
        attribution = Attribution(name=speaker.attribution_name, url=speaker.attribution_url)
        version = speaker.version or __version__
        described = describe_speaker(name, speaker)
        voices.append(
            TtsVoice(
                name=name,
                description=described,
                attribution=attribution,
                installed=True,
                version=version,
                languages=[LANGUAGE],
                speakers=[TtsVoiceSpeaker(name=style) for style in speaker.styles],
            )
        )
        for style in speaker.styles:
            voices.append(
                TtsVoice(
                    name=style_voice_name(name, style),
                    description=f"{described} [{style}]",
                    attribution=attribution,
                    installed=True,
                    version=version,
                    languages=[LANGUAGE],
                    speakers=None,
                )
            )
    for preset in catalog.presets.values():
        served = speakers.get(preset.voice)  # the voice's version now
        if served is None:  # its voice is not served (left by a replica's remove)
            continue
        voices.append(
            TtsVoice(
                name=preset.name,
                description=preset.description,
                attribution=Attribution(name=served.attribution_name, url=served.attribution_url),
                installed=True,
                version=served.version or __version__,
                languages=[LANGUAGE],
                speakers=None,
            )
        )
    program = TtsProgram(
        name=PROGRAM_NAME,
        description=(
            "Japanese text-to-speech (Style-Bert-VITS2 JP-Extra voices, hayakoe-compatible)"
        ),
        attribution=Attribution(name="wyoming-hayakoe", url=PROGRAM_URL),
        installed=True,
        version=__version__,
        voices=voices,
        supports_synthesize_streaming=streaming,
    )
    return Info(tts=[program])
