"""The knobs a user sets for how the voices speak: one declaration each.

Synthesis knobs are the engine's own: every field of `engine.SynthesisOptions` declared with
`engine.option_info.option` (its type, default, range and help) is one, under its field name.
Output knobs are declared here (`OUTPUT_KNOBS`: their values are written as people write them,
``6dB``, ``-16`` LUFS, a WAV file) and become `engine.OutputOptions` in
`presets.output_options`. From this one table come the server's and ``say``'s flags
(`add_knob_arguments`), the values those flags give (`synthesis_defaults`, `output_defaults`),
the preset keys and their parsing (`PRESET_KEYS`, `find_knob`), and, through the flags,
docs/configuration.md (scripts/gen_configuration.py). Adding a synthesis option is a field of
`SynthesisOptions` plus its use in the voices; the flag, the preset key and the reference
follow.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import partial

from engine import SynthesisOptions
from engine.option_info import OptionInfo, option_info
from engine.options import Choice
from engine.output import OUTPUT_RATES

from .flags import (
    Converter,
    OutputDefaults,
    SynthesisDefaults,
    integer,
    loudness,
    number,
    output_rate,
    silence,
    volume,
    wav_file,
)

__all__ = [
    "KNOBS",
    "OUTPUT_KNOBS",
    "PRESET_KEYS",
    "SYNTHESIS_KNOBS",
    "Knob",
    "Section",
    "add_knob_arguments",
    "find_knob",
    "output_defaults",
    "synthesis_defaults",
    "synthesis_knobs",
]


class Section(Choice):
    """Where a knob's value goes: the voice's synthesis options or the output shaping."""

    SYNTHESIS = "synthesis"
    OUTPUT = "output"


@dataclass(frozen=True)
class Knob:
    """One setting a user gives as a flag (``--lead-silence 0.5``) or a preset key
    (``lead_silence=0.5``)."""

    name: str
    """Its preset key, and the field it sets (`SynthesisOptions`, `OutputDefaults`)."""
    section: Section
    help: str
    """One line for ``--help`` and the configuration reference."""
    converter: Callable[[str], Converter]
    """Makes the value's converter for a label that names where it was written (the flag,
    or the preset and its key), so a bad value's message points there."""
    metavar: str | None = None
    """The value's name in ``--help``; None: argparse's (the flag's name in capitals)."""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parse(self, label: str, text: str) -> object:
        """`text` as this knob's value (`argparse.ArgumentTypeError` naming `label`)."""
        return self.converter(label)(text)


def _engine_knob(name: str, annotation: object, info: OptionInfo) -> Knob:
    """The knob of a `SynthesisOptions` field declared with `option`."""
    kind = str(annotation).replace(" | None", "")
    if kind == "float":
        converter: Callable[[str], Converter] = partial(number, bounds=info.bounds)
    elif kind == "int":
        converter = partial(integer, bounds=info.bounds)
    else:  # a developer's error, met at import: say what to add
        raise TypeError(
            f"SynthesisOptions.{name}: no flag converter for a {kind!r} option "
            "(wyoming_hayakoe/knobs.py converts float and int)"
        )
    return Knob(name, Section.SYNTHESIS, info.help, converter, info.metavar)


def synthesis_knobs(options: type[SynthesisOptions] = SynthesisOptions) -> tuple[Knob, ...]:
    """A knob for each field of `options` declared with `option`, in field order."""
    knobs = []
    for f in fields(options):
        info = option_info(f)
        if info is not None:
            knobs.append(_engine_knob(f.name, f.type, info))
    return tuple(knobs)


SYNTHESIS_KNOBS = synthesis_knobs()
"""The synthesis options a user sets (server-wide flags, preset keys), in field order."""

OUTPUT_KNOBS = (
    Knob(
        "volume",
        Section.OUTPUT,
        "gain: decibels (6dB; write --volume=-3dB for a cut) or a factor (2, 0.5); "
        "peaks are limited, never clipped",
        volume,
    ),
    Knob(
        "loudness",
        Section.OUTPUT,
        "normalise to this integrated loudness (e.g. -16); "
        "streams are measured on their first sentence",
        loudness,
        "LUFS",
    ),
    Knob(
        "lead_silence",
        Section.OUTPUT,
        "silence before the speech, for speakers that wake up late (default: 0)",
        silence,
        "SECONDS",
    ),
    Knob(
        "tail_silence", Section.OUTPUT, "silence after the speech (default: 0)", silence, "SECONDS"
    ),
    Knob(
        "output_rate",
        Section.OUTPUT,
        f"sample rate sent to clients: {', '.join(map(str, OUTPUT_RATES))} "
        "(default: the voice's own)",
        output_rate,
        "HZ",
    ),
    Knob("chime", Section.OUTPUT, "WAV file played before the speech", wav_file, "FILE"),
)
"""Output shaping a user sets: the fields of `OutputDefaults`, in order."""

KNOBS = SYNTHESIS_KNOBS + OUTPUT_KNOBS
PRESET_KEYS = tuple(k.name for k in KNOBS)
"""Every key a preset accepts (``-`` may be written for ``_``)."""
_BY_NAME = {k.name: k for k in KNOBS}


def find_knob(name: str) -> Knob | None:
    """The knob a preset key names, else None."""
    return _BY_NAME.get(name)


def add_knob_arguments(group: argparse._ActionsContainer, section: Section) -> None:
    """One flag per knob of `section` (dest: the knob's name; not given: None)."""
    for knob in KNOBS:
        if knob.section is section:
            group.add_argument(
                knob.flag,
                dest=knob.name,
                type=knob.converter(knob.flag),
                metavar=knob.metavar,
                help=knob.help,
            )


def synthesis_defaults(args: argparse.Namespace) -> SynthesisDefaults:
    """The synthesis knobs' flags as given (`add_knob_arguments`)."""
    given = vars(args)
    return SynthesisDefaults.of(**{k.name: given[k.name] for k in SYNTHESIS_KNOBS})


def output_defaults(args: argparse.Namespace) -> OutputDefaults:
    """The output knobs' flags as given (`add_knob_arguments`)."""
    given = vars(args)
    return OutputDefaults(**{k.name: given[k.name] for k in OUTPUT_KNOBS})
