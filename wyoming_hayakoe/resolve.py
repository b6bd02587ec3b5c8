"""A voice name → the voice, style and preset it chooses: the one rule of Wyoming, the web
page and ``wyoming-hayakoe say`` (user-facing: docs/voice-names.md).

The rule, for a name and an optional style (Wyoming's *speaker*, the page's style,
``say --style``):

1. No name: the default voice.
2. A preset's name, a voice's name, or ``VOICE:STYLE`` (every style is also a voice of its
   own, as Home Assistant's Assist passes only a voice name), compared case-insensitively
   and in Unicode's composed form (NFC: ``café`` typed with a combining accent is
   ``café``); an exact match wins over one that differs only in case.
3. A style given apart from the name wins over the one in the name (or the preset's), found
   case-insensitively among the chosen voice's styles. A voice that lists no styles (a
   preset as a client sees it in ``describe``) takes any style: its server decides.
4. No style at all: ``None``, the caller's default style for that voice (``--default-style``,
   else the voice's own).

A preset whose voice is not served (a library voice whose file is gone, until it is back)
chooses nothing: the problem names the preset and its missing voice.

What did not match is in `Resolution.problems`, and the fields hold the fallback (the default
voice; the voice's default style). That is the one difference between the front ends: the
Wyoming handler speaks the fallback and logs the problems as warnings (Home Assistant caches
voice lists: a voice removed since must not mean silence); the page and ``say`` call
`Resolution.exact`, which raises `UnknownNameError` naming the asked name and what exists.

This module knows only names (no speakers, no engine), so ``say --server`` applies it to a
server's ``describe`` answer (`VoiceNames.from_info`) as the server applies it to its voices.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from wyoming.info import Info

from .errors import HayakoeError

__all__ = [
    "STYLE_SEPARATOR",
    "PresetTarget",
    "Resolution",
    "UnknownName",
    "UnknownNameError",
    "VoiceNames",
    "name_key",
    "resolve_name",
    "style_voice_name",
]

STYLE_SEPARATOR = ":"
"""Between a voice and its style in a voice name (``jvnv-F1-jp:Happy``)."""


def name_key(name: str) -> str:
    """The form two names are compared in: composed (NFC) and case-folded."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


def style_voice_name(voice: str, style: str) -> str:
    """The voice name that selects `style` of `voice`."""
    return f"{voice}{STYLE_SEPARATOR}{style}"


@dataclass(frozen=True)
class PresetTarget:
    """What a preset's name chooses."""

    voice: str
    """A key of `VoiceNames.voices`."""
    style: str | None = None
    """One of that voice's styles; None: the caller's default style."""


@dataclass(frozen=True)
class VoiceNames:
    """Every name the rule knows: the voices with their styles, and the presets."""

    voices: Mapping[str, tuple[str, ...]]
    """voice → its styles (empty: not known here, any style is taken)."""
    presets: Mapping[str, PresetTarget] = field(default_factory=dict)
    waiting: Mapping[str, str] = field(default_factory=dict)
    """Presets served by nothing now → the voice they need (not served: a library voice
    whose file is gone). Not listed by `all`; a request for one is told which voice is
    missing."""

    def all(self) -> list[str]:
        """Every name that chooses something: each voice, then its ``VOICE:STYLE`` names,
        then the presets (the order of Wyoming's ``describe``)."""
        names: list[str] = []
        for voice, styles in self.voices.items():
            names.append(voice)
            names.extend(style_voice_name(voice, style) for style in styles)
        names.extend(self.presets)
        return names

    @staticmethod
    def from_info(info: Info) -> VoiceNames:
        """The names a Wyoming server's ``describe`` answer lists: a voice with speakers has
        them as styles; a voice named ``VOICE:STYLE`` after one of those is left to the rule;
        any other (a preset, another program's voice) is a voice with no styles listed."""
        listed = [voice for program in info.tts for voice in program.voices]
        voices: dict[str, tuple[str, ...]] = {
            v.name: tuple(s.name for s in v.speakers) for v in listed if v.speakers
        }
        for v in listed:
            if v.speakers or v.name in voices:
                continue
            base, sep, style = v.name.rpartition(STYLE_SEPARATOR)
            if sep and style in voices.get(base, ()):
                continue
            voices[v.name] = ()
        return VoiceNames(voices)


@dataclass(frozen=True)
class UnknownName:
    """A name that chooses nothing, and what exists instead."""

    kind: Literal["voice", "style"]
    asked: str
    available: tuple[str, ...]
    voice: str | None = None
    """Whose style was asked for (kind ``style``)."""
    missing: str | None = None
    """The voice a preset needs that is not served (`VoiceNames.waiting`; kind ``voice``)."""

    def message(self, where: str = "") -> str:
        """One line: the asked name, whose (`where`: ``on HOST:PORT``), what is available."""
        listed = ", ".join(self.available)
        on = f" on {where}" if where else ""
        if self.missing is not None:
            return (
                f"preset {self.asked!r}{on} is not served now: its voice {self.missing!r} "
                f"is missing (a library voice removed, or whose file is gone); "
                f"available: {listed}"
            )
        if self.kind == "voice":
            return f"unknown voice {self.asked!r}{on}; available: {listed}"
        return f"unknown style {self.asked!r} of voice {self.voice}{on}; available: {listed}"

    def __str__(self) -> str:
        return self.message()


class UnknownNameError(HayakoeError, LookupError):
    """A name that chose nothing, refused (`Resolution.exact`); the message names the asked
    name and the available ones (`where` they are, when given)."""

    def __init__(self, unknown: UnknownName, where: str = "") -> None:
        super().__init__(unknown.message(where))
        self.unknown = unknown


@dataclass(frozen=True)
class Resolution:
    """What a name chose; where something did not match, the fallback and the problem."""

    voice: str
    """A key of `VoiceNames.voices` (the default voice when the name chose none)."""
    style: str | None
    """One of the voice's styles (as spelled there), or a style given for a voice that lists
    none; None: the caller's default style for the voice."""
    preset: str | None = None
    """The preset's name (as spelled in `VoiceNames.presets`) when the name is a preset."""
    problems: tuple[UnknownName, ...] = ()
    """What did not match (the voice, the style, or both), in that order."""

    def exact(self, where: str = "") -> Resolution:
        """This resolution when everything matched; `UnknownNameError` (the first problem)
        otherwise: the page's and ``say``'s refusal."""
        if self.problems:
            raise UnknownNameError(self.problems[0], where)
        return self


def _find(table: Mapping[str, object], name: str) -> str | None:
    """The key of `table` that is `name` (exactly, else in NFC, else ignoring case too)."""
    if name in table:
        return name
    composed = unicodedata.normalize("NFC", name)
    same = next((key for key in table if unicodedata.normalize("NFC", key) == composed), None)
    if same is not None:
        return same
    folded = name_key(name)
    return next((key for key in table if name_key(key) == folded), None)


def _find_style(styles: tuple[str, ...], style: str) -> str | None:
    if not styles:  # none listed: the server decides
        return style
    return _find(dict.fromkeys(styles), style)


def resolve_name(
    names: VoiceNames, name: str | None, style: str | None = None, *, default: str
) -> Resolution:
    """The rule (module docstring): `name` and `style` as asked (blank: none) → `Resolution`.
    `default` is the voice of a request that names none, and the fallback."""
    if default not in names.voices:
        raise ValueError(f"default voice {default!r} is not among the voices")
    name = (name or "").strip()
    asked_style = (style or "").strip()
    problems: list[UnknownName] = []
    voice: str | None = None
    chosen_style: str | None = None
    preset: str | None = None
    if name:
        found_voice = _find(names.voices, name)
        found_preset = _find(names.presets, name) if found_voice is None else None
        if found_voice is not None:
            voice = found_voice
        elif found_preset is not None:
            preset = found_preset
            target = names.presets[preset]
            voice = target.voice
            if target.style is not None:  # as the voice spells it (one back since start too)
                chosen_style = _find_style(names.voices[voice], target.style)
                if chosen_style is None:
                    problems.append(UnknownName("style", target.style, names.voices[voice], voice))
        else:
            voice, chosen_style, problem = _voice_and_style(names, name)
            if problem is not None:
                problems.append(problem)
        waiting = _find(names.waiting, name) if voice is None else None
        if waiting is not None:
            missing = names.waiting[waiting]
            problems.append(UnknownName("voice", waiting, tuple(names.all()), missing=missing))
        elif voice is None:
            problems.append(UnknownName("voice", name, tuple(names.all())))
    if voice is None:
        voice = default
    if asked_style:  # given apart from the name: it wins
        found_style = _find_style(names.voices[voice], asked_style)
        if found_style is None:
            problems.append(UnknownName("style", asked_style, names.voices[voice], voice))
        else:
            chosen_style = found_style
    return Resolution(voice, chosen_style, preset, tuple(problems))


def _voice_and_style(
    names: VoiceNames, name: str
) -> tuple[str | None, str | None, UnknownName | None]:
    """``VOICE:STYLE``, split at each separator from the right (a voice or a style may hold
    one): the first split whose voice exists; its style when that is one of the voice's."""
    first: tuple[str, str] | None = None
    cut = len(name)
    while (cut := name.rfind(STYLE_SEPARATOR, 0, cut)) > 0:
        voice = _find(names.voices, name[:cut])
        if voice is None:
            continue
        style = _find_style(names.voices[voice], name[cut + 1 :])
        if style is not None:
            return voice, style, None
        first = first or (voice, name[cut + 1 :])
    if first is None:
        return None, None, None
    voice, asked = first
    return voice, None, UnknownName("style", asked, names.voices[voice], voice)
