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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wyoming.event import Event
from wyoming.info import Attribution, Info, TtsProgram, TtsVoice, TtsVoiceSpeaker
from wyoming.tts import SynthesizeVoice

from engine import OutputOptions, Speaker, __version__

if TYPE_CHECKING:
    from .presets import PresetVoice

__all__ = [
    "LANGUAGE",
    "STYLE_SEPARATOR",
    "InfoAnswer",
    "Resolved",
    "VoiceCatalog",
    "build_info",
    "describe_speaker",
]

_LOGGER = logging.getLogger(__name__)

STYLE_SEPARATOR = ":"
LANGUAGE = "ja"  # Home Assistant matches languages exactly
PROGRAM_NAME = "hayakoe"
PROGRAM_URL = "https://github.com/wyoming-hayakoe/wyoming-hayakoe"


def style_voice_name(voice: str, style: str) -> str:
    """The Wyoming voice name that selects `style` of `voice`."""
    return f"{voice}{STYLE_SEPARATOR}{style}"


@dataclass(frozen=True)
class Resolved:
    """The speaker and style a request gets (and a preset's options)."""

    speaker: Speaker
    style: str
    options: Mapping[str, Any] = field(default_factory=dict)
    """Synthesis options of a preset (over the server-wide ones)."""
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
    ) -> None:
        if not speakers:
            raise ValueError("VoiceCatalog needs at least one speaker")
        self.speakers = dict(speakers)
        if default_voice not in self.speakers:
            loaded = ", ".join(self.speakers)
            raise ValueError(f"default voice {default_voice!r} is not loaded (loaded: {loaded})")
        self.default_voice = default_voice
        self.default_style = default_style
        self.presets = dict(presets or {})
        self.output = output or OutputOptions()
        """Output shaping of requests for a voice that is not a preset."""
        if default_style and default_style not in self.speakers[default_voice].styles:
            _LOGGER.warning(
                "--default-style %r is not a style of %s (styles: %s); using %s",
                default_style,
                default_voice,
                ", ".join(self.speakers[default_voice].styles),
                self.speakers[default_voice].default_style,
            )

    def style_for(self, speaker: Speaker) -> str:
        """The style a request for `speaker` gets when it names none."""
        if self.default_style and self.default_style in speaker.styles:
            return self.default_style
        return speaker.default_style

    def _find(self, name: str) -> Speaker | None:
        found = self.speakers.get(name)
        if found is None:  # forgive case differences
            folded = name.casefold()
            found = next((s for n, s in self.speakers.items() if n.casefold() == folded), None)
        return found

    @staticmethod
    def _find_style(speaker: Speaker, style: str) -> str | None:
        if style in speaker.styles:
            return style
        folded = style.casefold()
        return next((s for s in speaker.styles if s.casefold() == folded), None)

    def voice_names(self) -> list[str]:
        names: list[str] = []
        for name, speaker in self.speakers.items():
            names.append(name)
            names.extend(style_voice_name(name, style) for style in speaker.styles)
        names.extend(self.presets)
        return names

    def _find_preset(self, name: str) -> PresetVoice | None:
        found = self.presets.get(name)
        if found is None:
            folded = name.casefold()
            found = next((p for n, p in self.presets.items() if n.casefold() == folded), None)
        return found

    def resolve(self, voice: SynthesizeVoice | None) -> Resolved:
        """Map a request's voice onto a speaker and style; unknown names fall back to the
        defaults with a warning that lists what is available (speech beats silence)."""
        name = (voice.name or "").strip() if voice is not None else ""
        wanted_style = (voice.speaker or "").strip() if voice is not None else ""
        speaker: Speaker | None = None
        style: str | None = None
        preset = self._find_preset(name) if name and self.presets else None
        if preset is not None:
            speaker, style = preset.speaker, preset.style
        if name and speaker is None:
            speaker = self._find(name)
            if speaker is None and STYLE_SEPARATOR in name:
                base, _, style_part = name.rpartition(STYLE_SEPARATOR)
                speaker = self._find(base)
                if speaker is not None:
                    style = self._find_style(speaker, style_part)
                    if style is None:
                        _LOGGER.warning(
                            "Voice %s has no style %r (styles: %s); using %s",
                            speaker.name,
                            style_part,
                            ", ".join(speaker.styles),
                            self.style_for(speaker),
                        )
            if speaker is None:
                _LOGGER.warning(
                    "Unknown voice %r; using %s. Available voices: %s",
                    name,
                    self.default_voice,
                    ", ".join(self.voice_names()),
                )
        if speaker is None:
            speaker = self.speakers[self.default_voice]
        if wanted_style:  # an explicit Wyoming speaker wins over the name's style
            found = self._find_style(speaker, wanted_style)
            if found is None:
                _LOGGER.warning(
                    "Voice %s has no style (speaker) %r (styles: %s); using %s",
                    speaker.name,
                    wanted_style,
                    ", ".join(speaker.styles),
                    style or self.style_for(speaker),
                )
            else:
                style = found
        if preset is not None:
            return Resolved(
                speaker, style or preset.style, preset.options, preset.output, preset.name
            )
        return Resolved(speaker, style or self.style_for(speaker), output=self.output)


def describe_speaker(name: str, speaker: Speaker) -> str:
    """A voice's description: what it is and the arithmetic it runs now."""
    runs = f", runs {speaker.precision}" if speaker.precision else ""
    return f"{name}: {speaker.description}{runs}"


class InfoAnswer:
    """The `info` event for `describe`, built again only when a voice's precision changed
    (a voice switches to int8 once, between requests, when its background graphs pass)."""

    def __init__(self, catalog: VoiceCatalog, *, streaming: bool) -> None:
        self._catalog = catalog
        self._streaming = streaming
        self._key: tuple[str | None, ...] | None = None
        self._event: Event | None = None

    def event(self) -> Event:
        key = tuple(s.precision for s in self._catalog.speakers.values())
        if self._event is None or key != self._key:
            self._event = build_info(self._catalog, streaming=self._streaming).event()
            self._key = key
        return self._event


def build_info(catalog: VoiceCatalog, *, streaming: bool) -> Info:
    """The `info` answer: one TTS program; each speaker a voice (styles as Wyoming speakers),
    plus one voice per speaker × style."""
    voices: list[TtsVoice] = []
    for name, speaker in catalog.speakers.items():
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
        voices.append(
            TtsVoice(
                name=preset.name,
                description=preset.description,
                attribution=Attribution(
                    name=preset.speaker.attribution_name, url=preset.speaker.attribution_url
                ),
                installed=True,
                version=preset.speaker.version or __version__,
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
