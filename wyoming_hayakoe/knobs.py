"""The knobs a user sets for how the voices speak and the engine runs: one declaration each.

Synthesis and engine knobs are the engine's own: every field of `engine.SynthesisOptions` and
`engine.EngineOptions` declared with `engine.option_info.option` (its type, default, range and
help) is one, under its field name (a float or int takes a value in its range, a bool is an
on/off switch, a `Choice` enum one of its values).
Output knobs are declared here (`OUTPUT_KNOBS`: their values are written as people write them,
``6dB``, ``-16`` LUFS, a WAV file) and become `engine.OutputOptions` in
`presets.output_options`. From this one table come the server's and ``say``'s flags
(`add_knob_arguments`), the values those flags give (`synthesis_defaults`, `output_defaults`,
`engine_options`),
the preset keys and their parsing (`PRESET_KEYS`, `find_knob`), and, through the flags,
docs/configuration.md (scripts/gen_configuration.py). Adding a synthesis option is a field of
`SynthesisOptions` plus its use in the voices; the flag, the preset key and the reference
follow.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, fields
from functools import partial

from engine import EngineOptions, SynthesisOptions
from engine.option_info import OptionInfo, option_info
from engine.options import Choice, GuardMode, Precision, Runtime
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
    "ENGINE_KNOBS",
    "KNOBS",
    "OUTPUT_KNOBS",
    "PRESET_KEYS",
    "SYNTHESIS_KNOBS",
    "Knob",
    "Section",
    "add_knob_arguments",
    "engine_options",
    "find_knob",
    "output_defaults",
    "synthesis_defaults",
    "synthesis_knobs",
]


class Section(Choice):
    """Where a knob's value goes: the voice's synthesis options, the output shaping, or how
    the engine runs (`EngineOptions`: flags only, not preset keys)."""

    SYNTHESIS = "synthesis"
    OUTPUT = "output"
    ENGINE = "engine"


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
    choices: tuple[str, ...] = ()
    """The values it may take (a closed set: `engine.options.Choice`); empty: any the
    converter takes."""
    switch: bool = False
    """An on/off setting: ``--NAME`` / ``--no-NAME``, no value."""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parse(self, label: str, text: str) -> object:
        """`text` as this knob's value (`argparse.ArgumentTypeError` naming `label`)."""
        return self.converter(label)(text)


def _verbatim(label: str) -> Converter:
    """The converter of a switch or a closed set (argparse checks those): the text itself."""
    return str


def _knob_of_field(section: Section, owner: str, f: Field[object], info: OptionInfo) -> Knob:
    """The knob of a field declared with `engine.option_info.option`: its flag's kind from
    the field's type."""
    kind = str(f.type).replace(" | None", "")  # the engine's annotations are strings
    choice = _CHOICES.get(kind)
    converter: Callable[[str], Converter] = _verbatim
    if choice is not None:
        return Knob(f.name, section, info.help, converter, info.metavar, choice.values())
    if kind == "bool":
        return Knob(f.name, section, info.help, converter, switch=True)
    if kind == "float":
        converter = partial(number, bounds=info.bounds)
    elif kind == "int":
        converter = partial(integer, bounds=info.bounds)
    else:  # a developer's error, met at import: say what to add
        raise TypeError(
            f"{owner}.{f.name}: no flag converter for a {kind!r} option "
            "(wyoming_hayakoe/knobs.py converts float, int, bool and the Choice enums)"
        )
    return Knob(f.name, section, info.help, converter, info.metavar)


_CHOICES: dict[str, type[Choice]] = {c.__name__: c for c in (Precision, Runtime, GuardMode)}


def _knobs_of(options: type[object], section: Section) -> tuple[Knob, ...]:
    owner = options.__name__
    return tuple(
        _knob_of_field(section, owner, f, info)
        for f in fields(options)  # type: ignore[arg-type]
        if (info := option_info(f)) is not None
    )


def synthesis_knobs(options: type[SynthesisOptions] = SynthesisOptions) -> tuple[Knob, ...]:
    """A knob for each field of `options` declared with `option`, in field order."""
    return _knobs_of(options, Section.SYNTHESIS)


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

ENGINE_KNOBS = _knobs_of(EngineOptions, Section.ENGINE)
"""How the engine runs (`EngineOptions`' fields declared with `option`), in field order."""

KNOBS = SYNTHESIS_KNOBS + OUTPUT_KNOBS + ENGINE_KNOBS
PRESET_KEYS = tuple(k.name for k in SYNTHESIS_KNOBS + OUTPUT_KNOBS)
"""Every key a preset accepts (``-`` may be written for ``_``)."""
_PRESET_KNOBS = {k.name: k for k in SYNTHESIS_KNOBS + OUTPUT_KNOBS}


def find_knob(name: str) -> Knob | None:
    """The knob a preset key names, else None."""
    return _PRESET_KNOBS.get(name)


def add_knob_arguments(group: argparse._ActionsContainer, section: Section) -> None:
    """One flag per knob of `section` (dest: the knob's name; not given: None)."""
    for knob in KNOBS:
        if knob.section is not section:
            continue
        if knob.switch:
            group.add_argument(
                knob.flag,
                dest=knob.name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=knob.help,
            )
        elif knob.choices:
            group.add_argument(
                knob.flag, dest=knob.name, choices=knob.choices, default=None, help=knob.help
            )
        else:
            group.add_argument(
                knob.flag,
                dest=knob.name,
                type=knob.converter(knob.flag),
                default=None,
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


def engine_options(args: argparse.Namespace, env: Mapping[str, str]) -> EngineOptions:
    """The engine knobs' flags as given, over the environment's documented defaults
    (`EngineOptions.from_env`)."""
    given = vars(args)
    return dataclasses.replace(
        EngineOptions.from_env(env),
        **{k.name: given[k.name] for k in ENGINE_KNOBS if given[k.name] is not None},
    )
