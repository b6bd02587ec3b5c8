"""Presets: named bundles of voice, style and options, served as Wyoming voices of their own.

Home Assistant passes only a voice name to a Wyoming TTS (no speed, no volume), so an
automation that wants an alarm to sound like an alarm says ``voice: alarm`` and gets
everything the preset holds::

    --preset alarm=openjtalk-mei:High,volume=6dB,lead_silence=0.5,output_rate=16000

Flow (one way): ``--preset`` text → `Preset` (typed, validated in `parse_settings`; unknown
keys and bad values are refused there, naming the preset and the key) → `PresetVoice`
(checked against the loaded voices at start: voice, style, chime file; a library voice that
is not served now is waited for, not refused) → the handler passes its synthesis options and
`engine.OutputOptions` to the speaker.
"""

from __future__ import annotations

import argparse
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import Chime, OutputOptions, Speaker
from engine.output import WavError

from .flags import OutputDefaults, SettingsError, SynthesisDefaults
from .knobs import PRESET_KEYS, Section, find_knob
from .resolve import STYLE_SEPARATOR, UnknownNameError, VoiceNames, name_key, resolve_name

__all__ = [
    "PRESET_KEYS",
    "Preset",
    "PresetError",
    "PresetVoice",
    "output_options",
    "parse_presets",
    "resolve_presets",
]

_LOGGER = logging.getLogger(__name__)


class PresetError(SettingsError):
    """A preset that cannot be served; the message names the preset (and the key)."""


@dataclass(frozen=True)
class Preset:
    """One ``--preset``, parsed and validated (not yet checked against the loaded voices)."""

    name: str
    """The Wyoming voice name it is served as."""
    voice: str
    """The engine voice that speaks it."""
    style: str | None = None
    """Its style; None: the server's default style for that voice."""
    synthesis: SynthesisDefaults = SynthesisDefaults()
    """Synthesis options it sets (over the server-wide ones)."""
    output: OutputDefaults = OutputDefaults()
    """Output shaping it sets (over the server-wide flags)."""

    @staticmethod
    def parse(text: str) -> Preset:
        """``NAME=VOICE[:STYLE],KEY=VALUE,...``; `PresetError` names what is wrong."""
        label = f"--preset {text!r}"
        name, sep, body = text.partition("=")
        name = name.strip()
        if not sep or not name:
            raise PresetError(f"{label}: expected NAME=VOICE[:STYLE],KEY=VALUE,...")
        if STYLE_SEPARATOR in name or "," in name or any(c.isspace() for c in name):
            raise PresetError(f"--preset {name!r}: a preset name has no ':', ',' or spaces")
        label = f"--preset {name!r}"
        head, *items = body.split(",")
        voice, _, style = (
            head.strip().rpartition(STYLE_SEPARATOR)
            if STYLE_SEPARATOR in head
            else (head.strip(), "", "")
        )
        voice, style = voice.strip(), style.strip()
        if not voice:
            raise PresetError(f"{label}: the voice is empty (expected {name}=VOICE[:STYLE],...)")
        if STYLE_SEPARATOR in head and not style:
            raise PresetError(f"{label}: the style after ':' is empty")
        synthesis: dict[str, Any] = {}
        output: dict[str, Any] = {}
        for item in items:
            key, eq, value = item.partition("=")
            key = key.strip().replace("-", "_")
            if not key and not eq:
                continue  # a trailing comma
            if not eq:
                raise PresetError(f"{label}: {item.strip()!r} is not KEY=VALUE")
            knob = find_knob(key)
            if knob is None:
                raise PresetError(
                    f"{label}: unknown key {key!r}; known keys: {', '.join(PRESET_KEYS)}"
                )
            if key in synthesis or key in output:
                raise PresetError(f"{label}: key {key!r} is given twice")
            if not value.strip():
                raise PresetError(f"{label}: key {key!r} has no value")
            target = synthesis if knob.section is Section.SYNTHESIS else output
            try:
                target[key] = knob.parse(f"{label}: {key}", value.strip())
            except argparse.ArgumentTypeError as exc:
                raise PresetError(str(exc)) from None
        return Preset(
            name, voice, style or None, SynthesisDefaults.of(**synthesis), OutputDefaults(**output)
        )

    @property
    def target(self) -> str:
        """``VOICE`` or ``VOICE:STYLE`` as written."""
        return f"{self.voice}{STYLE_SEPARATOR}{self.style}" if self.style else self.voice

    def summary(self) -> str:
        """What the preset changes, in a few words (for `describe`)."""
        bits = [f"{k.replace('_', ' ')} {v:g}" for k, v in self.synthesis.as_options().items()]
        out = self.output
        if out.volume is not None:
            bits.append(f"volume {20 * math.log10(out.volume):+.1f} dB")
        if out.loudness is not None:
            bits.append(f"loudness {out.loudness:g} LUFS")
        if out.output_rate is not None:
            bits.append(f"{out.output_rate} Hz")
        if out.lead_silence:
            bits.append(f"{out.lead_silence:g} s lead-in")
        if out.tail_silence:
            bits.append(f"{out.tail_silence:g} s tail")
        if out.chime is not None:
            bits.append(f"chime {out.chime.name}")
        return ", ".join(bits)


def parse_presets(texts: Iterable[str]) -> tuple[Preset, ...]:
    """Every ``--preset``, refusing two with the same name (case-insensitively)."""
    presets: list[Preset] = []
    for text in texts:
        preset = Preset.parse(text)
        if any(p.name.casefold() == preset.name.casefold() for p in presets):
            raise PresetError(f"--preset {preset.name!r} is defined twice")
        presets.append(preset)
    return tuple(presets)


@dataclass(frozen=True)
class PresetVoice:
    """A preset checked against the loaded voices: what a request for it gets."""

    name: str
    voice: str
    """The voice that speaks it (its key among the served speakers), a name resolved
    against them when a request uses it: it may be a voice of the library."""
    style: str
    """Its style; "" (a preset waiting for its voice, naming no style): the voice's default
    style for a request, chosen when used."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Synthesis options (server-wide ones already merged in)."""
    output: OutputOptions = OutputOptions()
    description: str = ""


def output_options(
    defaults: OutputDefaults, chimes: dict[Path, Chime] | None = None
) -> OutputOptions:
    """The engine's `OutputOptions` for these values (the server-wide flags, or a preset's
    merged over them); reads the chime file (`SettingsError` naming ``--chime``)."""
    chime = None
    if defaults.chime is not None:
        cache = chimes if chimes is not None else {}
        chime = cache.get(defaults.chime)
        if chime is None:
            try:
                chime = cache[defaults.chime] = Chime.from_wav(defaults.chime)
            except WavError as exc:
                raise SettingsError(f"--chime: {exc}") from None
    return OutputOptions(
        volume=defaults.volume if defaults.volume is not None else 1.0,
        loudness=defaults.loudness,
        lead_silence=defaults.lead_silence or 0.0,
        tail_silence=defaults.tail_silence or 0.0,
        sample_rate=defaults.output_rate,
        chime=chime,
    )


def _waiting_preset(
    preset: Preset, missing: str, options: dict[str, Any], out: OutputOptions
) -> PresetVoice:
    """A preset of a library voice whose file is gone: kept, served by nothing until the
    voice is back (its style chosen then), with a warning naming both."""
    summary = preset.summary()
    description = f"{preset.name}: preset of {missing}" + (f" — {summary}" if summary else "")
    _LOGGER.warning(
        "Preset %s is served by nothing for now: its voice %s is a library voice "
        "that cannot be served (see above); requests for %s are told so (Wyoming: "
        "the default voice speaks them) until the voice is back in the library",
        preset.name, missing, preset.name,
    )  # fmt: skip
    return PresetVoice(preset.name, missing, preset.style or "", options, out, description)


def _served_preset(
    preset: Preset,
    speakers: Mapping[str, Speaker],
    options: dict[str, Any],
    out: OutputOptions,
    default_style: Callable[[Speaker], str] | None,
) -> PresetVoice:
    """A preset of a served voice, its name resolved as requests resolve names."""
    label = f"--preset {preset.name!r}"
    summary = preset.summary()
    if not speakers:
        raise PresetError(f"{label}: no voice is loaded")
    names = VoiceNames({n: tuple(s.styles) for n, s in speakers.items()})
    try:  # the names requests use (`resolve`): case-insensitive
        found = resolve_name(
            names, preset.voice, preset.style, default=next(iter(speakers))
        ).exact()
    except UnknownNameError as exc:
        raise PresetError(f"{label}: {exc}") from None
    speaker = speakers[found.voice]
    if found.style is not None:
        style = found.style
    else:
        style = default_style(speaker) if default_style else speaker.default_style
    description = f"{preset.name}: preset of {speaker.name} [{style}]" + (
        f" — {summary}" if summary else ""
    )
    return PresetVoice(
        name=preset.name,
        voice=found.voice,
        style=style,
        options=options,
        output=out,
        description=description,
    )


def resolve_presets(
    presets: Iterable[Preset],
    speakers: Mapping[str, Speaker],
    *,
    synthesis: SynthesisDefaults | None = None,
    output: OutputDefaults | None = None,
    default_style: Callable[[Speaker], str] | None = None,
    taken: Iterable[str] = (),
    waiting: Iterable[str] = (),
) -> dict[str, PresetVoice]:
    """Check each preset against the loaded `speakers` and build what its requests get.

    `taken` are the voice names already served (a preset may not hide one);
    `default_style` picks the style of a preset that names none. `waiting` are voices that
    are not served now but may come back while the server runs (the library's voices whose
    file is gone): a preset of one is kept, with a warning naming it and the voice, and
    serves once the voice is back (`PresetVoice.style` "" until then: the style is chosen
    when used); any other unknown voice is a `PresetError`.
    """
    synthesis = synthesis or SynthesisDefaults()
    output = output or OutputDefaults()
    reserved = {name_key(n) for n in taken}
    later = {name_key(v): v for v in waiting}
    chimes: dict[Path, Chime] = {}
    resolved: dict[str, PresetVoice] = {}
    for preset in presets:
        label = f"--preset {preset.name!r}"
        if name_key(preset.name) in reserved:
            raise PresetError(f"{label}: the name is already a voice; choose another")
        try:
            out = output_options(output.merged(preset.output), chimes)
        except ValueError as exc:  # a chime that is not a WAV file, ...
            raise PresetError(f"{label}: {str(exc).removeprefix('--')}") from None
        options = {**synthesis.as_options(), **preset.synthesis.as_options()}
        missing = later.get(name_key(preset.voice))
        if missing is not None and not any(name_key(n) == name_key(missing) for n in speakers):
            resolved[preset.name] = _waiting_preset(preset, missing, options, out)
            reserved.add(name_key(preset.name))
            continue
        resolved[preset.name] = _served_preset(preset, speakers, options, out, default_style)
        reserved.add(name_key(preset.name))
        _LOGGER.info("Voice %s", resolved[preset.name].description)
    return resolved
