"""The server's value types and flag converters, shared by `settings` (the command line)
and `presets` (``--preset`` values): a leaf, so neither imports the other to get them."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

from engine import EMBEDDED_VOICE_NAME
from engine.output import OUTPUT_RATES


class SettingsError(ValueError):
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
    """Server-wide synthesis options (None: the voice's own default)."""

    speed: float | None = None
    sentence_silence: float | None = None
    sdp_ratio: float | None = None
    noise: float | None = None
    noise_w: float | None = None
    style_weight: float | None = None
    pitch_scale: float | None = None
    intonation_scale: float | None = None

    def as_options(self) -> dict[str, float]:
        """The set values, as keyword options for `Speaker.stream`."""
        return {k: v for k, v in self.__dict__.items() if v is not None}


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
        return OutputDefaults(
            **{
                f.name: (
                    getattr(over, f.name)
                    if getattr(over, f.name) is not None
                    else getattr(self, f.name)
                )
                for f in fields(self)
            }
        )


def _number(
    flag: str, cast: Callable[[str], float], noun: str, *, allow_zero: bool
) -> Callable[[str], float]:
    """An argparse `type` that parses `cast` and refuses negatives (and 0 unless allowed),
    naming the flag in the message."""

    def convert(text: str) -> float:
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} expects {noun}, got {text!r}") from None
        if (value < 0) if allow_zero else not value > 0:
            bound = ">= 0" if allow_zero else "> 0"
            raise argparse.ArgumentTypeError(f"{flag} must be {bound}, got {text!r}")
        return value

    return convert


def _positive_float(flag: str) -> Callable[[str], float]:
    return _number(flag, float, "a number", allow_zero=False)


def _non_negative_float(flag: str) -> Callable[[str], float]:
    return _number(flag, float, "a number", allow_zero=True)


def _positive_int(flag: str) -> Callable[[str], float]:
    return _number(flag, int, "an integer", allow_zero=False)


def _non_negative_int(flag: str) -> Callable[[str], float]:
    return _number(flag, int, "an integer", allow_zero=True)


MAX_VOLUME_DB = 40.0
MIN_VOLUME_DB = -60.0
MAX_ADDED_SILENCE_S = 60.0

_VOLUME = re.compile(r"\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*(db)?\s*", re.IGNORECASE)


def _volume(flag: str):
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
            return 10.0 ** (value / 20.0)
        low, high = 10.0 ** (MIN_VOLUME_DB / 20.0), 10.0 ** (MAX_VOLUME_DB / 20.0)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{flag} factor must be within {low:g}..{high:g}, got {text!r}"
            )
        return value

    return convert


def _loudness(flag: str):
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


def _silence(flag: str):
    inner = _non_negative_float(flag)

    def convert(text: str) -> float:
        value = inner(text)
        if value > MAX_ADDED_SILENCE_S:
            raise argparse.ArgumentTypeError(
                f"{flag} must be at most {MAX_ADDED_SILENCE_S:g} s, got {text!r}"
            )
        return value

    return convert


def _output_rate(flag: str):
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


def _wav_file(flag: str):
    def convert(text: str) -> Path:
        path = Path(text.strip()).expanduser()
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{flag} expects a WAV file, got an empty path")
        if not path.is_file():
            raise argparse.ArgumentTypeError(f"{flag}: file not found: {path}")
        return path

    return convert
