"""`AudioResult`: what every synthesis call returns — int16 mono PCM plus its sample rate.

Why int16: it is what Wyoming, WAV files and sound cards take, so the conversion from the
voices' float audio happens once, in one place (`to_int16`), with one fixed scale: a stream
cut into chunks has the same loudness as the whole text synthesized at once.

hayakoe 1.3's shapes are here too: `PhonemeTiming` (`generate(..., with_timing=True)` fills
`AudioResult.timings`), `streaming_wav_header` (what `Speaker.stream_wav` sends first) and
`AudioResult.to_bytes` (hayakoe's name for `to_wav_bytes`).
"""

from __future__ import annotations

import io
import struct
import wave
from collections.abc import Iterable
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

import numpy as np

__all__ = ["AudioResult", "PhonemeTiming", "streaming_wav_header", "to_int16"]

SAMPLE_WIDTH = 2
"""Bytes per sample of every `AudioResult` (int16)."""

CHANNELS = 1

UNKNOWN_LENGTH = 0xFFFFFFFF
"""The RIFF and data sizes of a WAV stream whose length is not known when it starts (the
live-streaming convention players, browsers and ffmpeg accept; hayakoe's)."""


def streaming_wav_header(sample_rate: int, *, channels: int = 1, sampwidth: int = 2) -> bytes:
    """The 44-byte header of a WAV stream of unknown length: RIFF and data sizes
    `UNKNOWN_LENGTH`, then PCM follows (`AudioResult.pcm_bytes` of each chunk)."""
    if int(sample_rate) <= 0:
        raise ValueError(f"streaming_wav_header: sample_rate must be positive, got {sample_rate!r}")
    block = channels * sampwidth
    fmt = struct.pack(
        "<IHHIIHH",
        16,
        1,
        channels,
        int(sample_rate),
        int(sample_rate) * block,
        block,
        sampwidth * 8,
    )
    return b"".join(
        (
            b"RIFF",
            struct.pack("<I", UNKNOWN_LENGTH),
            b"WAVE",
            b"fmt ",
            fmt,
            b"data",
            struct.pack("<I", UNKNOWN_LENGTH),
        )
    )


@dataclass(frozen=True)
class PhonemeTiming:
    """Where one phoneme is heard in the audio: hayakoe 1.3's shape.

    One per symbol the synthesizer read, in order: the model's phonemes (``"a"``, ``"k"``,
    ``"N"``, ``"q"``...), its punctuation (``"."``, ``","``, ``"!"``...) and the ``"_"``
    blanks between them. A phoneme in silence that was trimmed at a sentence's end keeps
    its place with its time cut to the audio kept (possibly zero long); the pause between
    sentences belongs to no phoneme."""

    phoneme: str
    """The model's symbol."""
    start: float
    """Seconds from the start of the audio (of the whole request, in a stream too)."""
    duration: float
    """Seconds it lasts."""

    @property
    def end(self) -> float:
        """Seconds from the start of the audio to its end."""
        return self.start + self.duration


def to_int16(samples: np.ndarray) -> np.ndarray:
    """Float audio in [-1, 1] → int16, scaled by 32767 and clipped (no normalisation).

    The clip is a last guard: what `Speaker` sends never reaches it, since
    `engine.output.OutputStage` limits every request below full scale first (at most ±32766
    with default options, `engine.output.limiter.FULL_SCALE_CEILING`)."""
    x = np.asarray(samples, dtype=np.float32).reshape(-1)
    x = np.nan_to_num(x, nan=0.0, posinf=1.0, neginf=-1.0)
    return np.asarray(np.clip(np.rint(x * 32767.0), -32768, 32767), dtype=np.int16)


@dataclass
class AudioResult:
    """Mono 16-bit PCM audio.

    `sr` is the sample rate in Hz; `data` a 1-D `int16` array (converted on construction
    when given another integer dtype of the same values; floats are refused, use
    `AudioResult.from_float`).
    """

    sr: int
    data: np.ndarray
    timings: list[PhonemeTiming] | None = None
    """Phoneme timings, only when asked (`with_timing=True`; None otherwise), as hayakoe
    1.3 gives them; times count from the start of the request's audio."""

    def __post_init__(self) -> None:
        if int(self.sr) <= 0:
            raise ValueError(f"AudioResult.sr must be a positive sample rate, got {self.sr!r}")
        self.sr = int(self.sr)
        data = np.asarray(self.data)
        if data.dtype != np.int16:
            if not np.issubdtype(data.dtype, np.integer) and data.size:
                raise TypeError(
                    f"AudioResult.data must be int16 PCM, got {data.dtype}; "
                    "use AudioResult.from_float for float audio"
                )
            data = data.astype(np.int16)
        self.data = data.reshape(-1)

    @classmethod
    def from_float(cls, sr: int, samples: np.ndarray) -> AudioResult:
        """Build from float audio in [-1, 1] (fixed ×32767 scale, clipped)."""
        return cls(sr, to_int16(samples))

    @classmethod
    def empty(cls, sr: int) -> AudioResult:
        """Zero samples at `sr`."""
        return cls(sr, np.zeros(0, dtype=np.int16))

    @classmethod
    def concat(cls, pieces: Iterable[AudioResult], sr: int | None = None) -> AudioResult:
        """Join pieces of one sample rate into one result (`sr` is needed when there are none)."""
        items = list(pieces)
        rates = {p.sr for p in items}
        if len(rates) > 1:
            raise ValueError(f"cannot join audio of different sample rates: {sorted(rates)}")
        rate = rates.pop() if rates else sr
        if rate is None:
            raise ValueError("AudioResult.concat of no pieces needs sr")
        if not items:
            return cls.empty(rate)
        return cls(rate, np.concatenate([p.data for p in items]))

    @property
    def duration(self) -> float:
        """Length in seconds."""
        return len(self.data) / self.sr

    @property
    def num_samples(self) -> int:
        return len(self.data)

    def pcm_bytes(self) -> bytes:
        """Raw little-endian signed 16-bit mono PCM."""
        return self.data.astype("<i2", copy=False).tobytes()

    def to_wav_bytes(self) -> bytes:
        """A complete RIFF/WAVE file (PCM, 16-bit, mono) in memory."""
        buf = io.BytesIO()
        with wave.open(buf, "wb") as wav:
            wav.setnchannels(CHANNELS)
            wav.setsampwidth(SAMPLE_WIDTH)
            wav.setframerate(self.sr)
            wav.writeframes(self.pcm_bytes())
        return buf.getvalue()

    def to_bytes(self) -> bytes:
        """A complete WAV file (hayakoe's name for `to_wav_bytes`). Chunks of a stream each
        make a whole file; to join them into one stream use `Speaker.stream_wav`."""
        return self.to_wav_bytes()

    def save(self, path: str | PathLike[str]) -> Path:
        """Write a WAV file; returns its path."""
        out = Path(path)
        out.write_bytes(self.to_wav_bytes())
        return out

    def __repr__(self) -> str:
        return f"AudioResult(sr={self.sr}, samples={len(self.data)}, duration={self.duration:.3f}s)"
