"""The knob table: one declaration per option, from which flags and preset keys follow."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from engine import SynthesisOptions
from engine.option_info import option, option_info
from wyoming_hayakoe.flags import OutputDefaults
from wyoming_hayakoe.knobs import (
    OUTPUT_KNOBS,
    PRESET_KEYS,
    SYNTHESIS_KNOBS,
    Section,
    add_knob_arguments,
    synthesis_knobs,
)
from wyoming_hayakoe.presets import Preset, PresetError
from wyoming_hayakoe.settings import build_parser, parse_settings


def test_every_engine_option_is_a_flag_and_a_preset_key() -> None:
    declared = [f.name for f in dataclasses.fields(SynthesisOptions) if option_info(f)]
    assert declared == [k.name for k in SYNTHESIS_KNOBS]
    assert {"speed", "sdp_ratio", "sentence_silence"} <= set(declared)
    assert "style" not in declared and "seed" not in declared  # per request, not a knob
    flags = {a.dest for a in build_parser()._actions}
    assert set(declared) <= flags
    assert set(declared) <= set(PRESET_KEYS)


def test_output_knobs_are_the_fields_of_output_defaults() -> None:
    assert [k.name for k in OUTPUT_KNOBS] == [f.name for f in dataclasses.fields(OutputDefaults)]
    assert all(k.section is Section.OUTPUT for k in OUTPUT_KNOBS)


def test_the_engines_range_reaches_the_flag_and_the_preset_key() -> None:
    with pytest.raises(SystemExit):
        parse_settings(["--sdp-ratio", "1.5"])
    with pytest.raises(PresetError, match=r"sdp_ratio must be within 0\.\.1, got '1\.5'"):
        Preset.parse("p=openjtalk-mei,sdp_ratio=1.5")
    with pytest.raises(PresetError, match=r"speed must be > 0, got '0'"):
        Preset.parse("p=openjtalk-mei,speed=0")
    with pytest.raises(PresetError, match=r"noise must be >= 0, got 'nan'"):
        Preset.parse("p=openjtalk-mei,noise=nan")
    s = parse_settings(["--sdp-ratio", "1", "--sentence-silence", "0"])
    assert s.synthesis.as_options() == {"sdp_ratio": 1.0, "sentence_silence": 0.0}


def test_a_new_engine_option_becomes_a_flag_with_its_range() -> None:
    """What adding a synthesis option asks: a field declared with `option` (and its use)."""

    @dataclasses.dataclass(frozen=True)
    class WithBreath(SynthesisOptions):
        breath: float = option(0.5, "breathiness of the voice, 0 to 1", low=0.0, high=1.0)

    knobs = synthesis_knobs(WithBreath)
    assert knobs[-1].name == "breath" and knobs[-1].flag == "--breath"
    assert [k.name for k in knobs[:-1]] == [k.name for k in SYNTHESIS_KNOBS]
    parser = argparse.ArgumentParser(prog="t")
    for knob in knobs:
        parser.add_argument(knob.flag, dest=knob.name, type=knob.converter(knob.flag))
    assert vars(parser.parse_args(["--breath", "0.25"]))["breath"] == 0.25
    with pytest.raises(argparse.ArgumentTypeError, match=r"--breath must be within 0\.\.1"):
        knobs[-1].parse("--breath", "2")


def test_an_option_of_a_type_without_a_converter_is_named() -> None:
    @dataclasses.dataclass(frozen=True)
    class WithWord(SynthesisOptions):
        word: str = option("a", "a word")

    with pytest.raises(TypeError, match=r"WithWord\.word: no flag converter for a 'str'"):
        synthesis_knobs(WithWord)


def test_flags_of_a_section_only() -> None:
    parser = argparse.ArgumentParser(prog="t")
    add_knob_arguments(parser, Section.OUTPUT)
    dests = {a.dest for a in parser._actions} - {"help"}
    assert dests == {k.name for k in OUTPUT_KNOBS}
