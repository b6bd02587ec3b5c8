"""The server's value types and flag converters, shared by `settings` (the command line)
and `presets` (``--preset`` values): a leaf, so neither imports the other to get them."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

from engine import EMBEDDED_VOICE_NAME, SynthesisOptions
from engine.option_info import Bounds
from engine.output import OUTPUT_RATES

from .errors import HayakoeError

if TYPE_CHECKING:
    from engine.voice_backend import SynthesisOverrides


class SettingsError(HayakoeError, ValueError):
    """A command-line value that cannot be used; the message names the flag."""


@dataclass(frozen=True)
class VoiceSpec:
    """A voice to load: its name, and where it comes from (None: the default source)."""

    name: str
    source: str | None = None

    @staticmethod
    def parse(text: str) -> VoiceSpec:
        """``NAME`` or ``NAME=SOURCE``."""
        name, sep, source = text.partition("=")
        name, source = name.strip(), source.strip()
        if not name:
            raise SettingsError(f"--voice {text!r}: the voice name is empty")
        if sep and not source:
            raise SettingsError(f"--voice {text!r}: the source after '=' is empty")
        if name == EMBEDDED_VOICE_NAME and source:
            raise SettingsError(
                f"--voice {text!r}: {EMBEDDED_VOICE_NAME} is the embedded voice and takes no source"
            )
        return VoiceSpec(name, source or None)


@dataclass(frozen=True)
class SynthesisDefaults:
    """Synthesis options set by flags or by a preset's keys, as the engine's typed keywords
    (`engine.voice_backend.SynthesisOverrides`); what is not set is the voice's own default.
    Which names exist is the engine's to say (`wyoming_hayakoe.knobs`)."""

    given: tuple[tuple[str, float], ...] = ()
    """(name, value) of each option set, in the order of the engine's fields."""

    @classmethod
    def of(cls, **values: float | None) -> SynthesisDefaults:
        """The values that are not None; an unknown name is a TypeError naming it."""
        order = [f.name for f in fields(SynthesisOptions)]
        unknown = sorted(set(values) - set(order))
        if unknown:
            raise TypeError(f"unknown synthesis option(s): {', '.join(unknown)}")
        return cls(tuple((k, v) for k in order if (v := values.get(k)) is not None))

    def get(self, name: str) -> float | None:
        """The value set for `name`, else None."""
        return dict(self.given).get(name)

    def as_options(self) -> SynthesisOverrides:
        """The set values, as keyword options for `Speaker.stream`."""
        return cast("SynthesisOverrides", dict(self.given))


@dataclass(frozen=True)
class OutputDefaults:
    """Output shaping from the flags, or from a preset's keys (None: not set here)."""

    volume: float | None = None
    """Linear gain factor (``--volume 6dB`` is stored as 1.995...)."""
    loudness: float | None = None
    """Target integrated loudness, LUFS."""
    lead_silence: float | None = None
    """Seconds of silence before the speech."""
    tail_silence: float | None = None
    """Seconds of silence after the speech."""
    output_rate: int | None = None
    """Sample rate sent to the client, Hz (None: the voice's own)."""
    chime: Path | None = None
    """WAV file played before the speech."""

    def merged(self, over: OutputDefaults) -> OutputDefaults:
        """These values with every value set in `over` taking precedence."""
        mine, theirs = asdict(self), asdict(over)
        return OutputDefaults(**{k: v if v is not None else mine[k] for k, v in theirs.items()})


Converter = Callable[[str], object]
"""An argparse `type`: the text of a flag (or of a preset key) to its value; a bad value
raises `argparse.ArgumentTypeError` with a message naming the flag."""

_POSITIVE = Bounds(0.0, low_open=True)
_NON_NEGATIVE = Bounds(0.0)


_N = TypeVar("_N", int, float)


def _within(
    flag: str, bounds: Bounds, parse: Callable[[str], _N], noun: str
) -> Callable[[str], _N]:
    """`parse`'s value within `bounds`, the messages naming `flag`."""

    def convert(text: str) -> _N:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} expects {noun}, got {text!r}") from None
        if not bounds.holds(value):
            raise argparse.ArgumentTypeError(f"{flag} must be {bounds.describe()}, got {text!r}")
        return value

    return convert


def number(flag: str, bounds: Bounds) -> Callable[[str], float]:
    """A float within `bounds`, the message naming `flag`."""
    return _within(flag, bounds, float, "a number")


def integer(flag: str, bounds: Bounds) -> Callable[[str], int]:
    """An integer within `bounds`, the message naming `flag`."""
    return _within(flag, bounds, int, "an integer")


def positive_float(flag: str) -> Callable[[str], float]:
    return number(flag, _POSITIVE)


def non_negative_float(flag: str) -> Callable[[str], float]:
    return number(flag, _NON_NEGATIVE)


def positive_int(flag: str) -> Callable[[str], int]:
    return integer(flag, _POSITIVE)


def non_negative_int(flag: str) -> Callable[[str], int]:
    return integer(flag, _NON_NEGATIVE)


MAX_VOLUME_DB = 40.0
MIN_VOLUME_DB = -60.0
MAX_ADDED_SILENCE_S = 60.0

_VOLUME = re.compile(r"\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*(db)?\s*", re.IGNORECASE)


def volume(flag: str) -> Callable[[str], float]:
    """``6dB`` / ``-3 dB`` (decibels) or ``2`` / ``0.5`` (a factor) → the linear factor."""

    def convert(text: str) -> float:
        m = _VOLUME.fullmatch(text)
        if not m:
            raise argparse.ArgumentTypeError(
                f"{flag} expects a factor (2, 0.5) or decibels (6dB, -3dB), got {text!r}"
            )
        value = float(m.group(1))
        if m.group(2):
            if not MIN_VOLUME_DB <= value <= MAX_VOLUME_DB:
                raise argparse.ArgumentTypeError(
                    f"{flag} must be within {MIN_VOLUME_DB:g}..+{MAX_VOLUME_DB:g} dB, got {text!r}"
                )
            return float(10.0 ** (value / 20.0))
        low, high = 10.0 ** (MIN_VOLUME_DB / 20.0), 10.0 ** (MAX_VOLUME_DB / 20.0)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{flag} factor must be within {low:g}..{high:g}, got {text!r}"
            )
        return value

    return convert


def loudness(flag: str) -> Callable[[str], float]:
    def convert(text: str) -> float:
        try:
            value = float(text.strip().removesuffix("LUFS").removesuffix("lufs"))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{flag} expects a loudness in LUFS (e.g. -16), got {text!r}"
            ) from None
        if not (math.isfinite(value) and -70.0 <= value <= 0.0):
            raise argparse.ArgumentTypeError(f"{flag} must be within -70..0 LUFS, got {text!r}")
        return value

    return convert


def silence(flag: str) -> Callable[[str], float]:
    inner = non_negative_float(flag)

    def convert(text: str) -> float:
        value = inner(text)
        if value > MAX_ADDED_SILENCE_S:
            raise argparse.ArgumentTypeError(
                f"{flag} must be at most {MAX_ADDED_SILENCE_S:g} s, got {text!r}"
            )
        return value

    return convert


def output_rate(flag: str) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value not in OUTPUT_RATES:
            raise argparse.ArgumentTypeError(
                f"{flag} must be one of {', '.join(map(str, OUTPUT_RATES))}, got {text!r}"
            )
        return value

    return convert


def wav_file(flag: str) -> Callable[[str], Path]:
    def convert(text: str) -> Path:
        path = Path(text.strip()).expanduser()
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{flag} expects a WAV file, got an empty path")
        if not path.is_file():
            raise argparse.ArgumentTypeError(f"{flag}: file not found: {path}")
        return path

    return convert
