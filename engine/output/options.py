"""`OutputOptions`: what happens to a voice's audio between the voice and the listener."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path

import numpy as np

from .wav import read_wav

__all__ = ["OUTPUT_RATES", "Chime", "OutputOptions"]

OUTPUT_RATES = (16000, 22050, 24000, 44100, 48000)
"""The output rates offered to users (any positive rate works in the engine)."""

MAX_SILENCE_S = 60.0


@dataclass(frozen=True, eq=False)
class Chime:
    """A short sound played before the speech (compared by identity: load it once)."""

    sample_rate: int
    """Rate of `samples`, Hz (resampled to the output rate when used)."""
    samples: np.ndarray = field(repr=False)
    """Float32 mono audio in [-1, 1]."""
    name: str = "chime"
    """Where it came from (a file name), for descriptions and logs."""

    @classmethod
    def from_wav(cls, path: str | PathLike[str]) -> Chime:
        """Read a PCM WAV file (`engine.output.wav.read_wav`; `WavError` names the file)."""
        rate, samples = read_wav(path)
        return cls(rate, samples, Path(path).name)

    @property
    def duration(self) -> float:
        return self.samples.size / self.sample_rate


@dataclass(frozen=True)
class OutputOptions:
    """Per-request output shaping, applied by `Speaker` after the voice (`OutputStage`).

    The default changes nothing: the voice's own rate, the fixed ×32767 scale, no silence
    added, no chime — the audio of earlier versions, bit for bit.
    """

    volume: float = 1.0
    """Linear gain (2.0 ≈ +6 dB, 0.5 ≈ -6 dB). Any gain other than 1 goes through the
    look-ahead limiter, so nothing clips; the gain is the same for the whole request."""
    loudness: float | None = None
    """Target integrated loudness, LUFS (ITU-R BS.1770, e.g. -16). One-shot requests are
    measured whole; a stream is measured on its first sentence and keeps that gain (so
    the level does not pump). `volume` is applied on top. None: off."""
    lead_silence: float = 0.0
    """Seconds of digital silence before the speech (after the chime), exact to the sample
    at the output rate: time for a speaker or amplifier that wakes up late."""
    tail_silence: float = 0.0
    """Seconds of digital silence after the speech, exact to the sample."""
    sample_rate: int | None = None
    """Output rate, Hz; None keeps the voice's rate. Resampled with soxr (HQ), streaming,
    so chunk boundaries leave no trace."""
    chime: Chime | None = None
    """A sound played before the speech (and before `lead_silence`), at the output rate and
    the request's gain."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.volume) and self.volume > 0):
            raise ValueError(f"OutputOptions.volume must be a positive factor, got {self.volume!r}")
        if self.loudness is not None and not (-70.0 <= self.loudness <= 0.0):
            raise ValueError(
                f"OutputOptions.loudness must be within -70..0 LUFS, got {self.loudness!r}"
            )
        _check_silence("lead_silence", self.lead_silence)
        _check_silence("tail_silence", self.tail_silence)
        if self.sample_rate is not None and not (0 < int(self.sample_rate) <= 384_000):
            raise ValueError(
                f"OutputOptions.sample_rate must be a positive rate, got {self.sample_rate!r}"
            )

    def rate_for(self, voice_rate: int) -> int:
        """The rate the listener gets from a voice of `voice_rate`."""
        return int(self.sample_rate) if self.sample_rate else int(voice_rate)

    def changes_nothing(self, voice_rate: int) -> bool:
        """True when the voice's audio passes as it is (only the fixed int16 conversion)."""
        return (
            self.volume == 1.0
            and self.loudness is None
            and self.lead_silence == 0.0
            and self.tail_silence == 0.0
            and self.chime is None
            and self.rate_for(voice_rate) == int(voice_rate)
        )


def _check_silence(name: str, value: float) -> None:
    if not (0.0 <= value <= MAX_SILENCE_S):
        raise ValueError(
            f"OutputOptions.{name} must be within 0..{MAX_SILENCE_S:g} s, got {value!r}"
        )
