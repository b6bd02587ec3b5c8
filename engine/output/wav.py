"""Reading a short WAV file (a chime) into mono float audio, with errors that name the file."""

from __future__ import annotations

import wave
from os import PathLike
from pathlib import Path

import numpy as np

from ..errors import EngineError

__all__ = ["MAX_CHIME_S", "WavError", "read_wav"]

MAX_CHIME_S = 30.0
"""Longest sound accepted as a chime, seconds (it is held in memory for every request)."""


class WavError(EngineError, ValueError):
    """A file that cannot be used as a chime; the message names it."""


def read_wav(
    path: str | PathLike[str], *, max_seconds: float = MAX_CHIME_S
) -> tuple[int, np.ndarray]:
    """(sample rate, float32 mono samples in [-1, 1]) of an uncompressed PCM WAV file
    (8, 16, 24 or 32-bit integers; channels are averaged)."""
    file = Path(path)
    try:
        with wave.open(str(file), "rb") as wav:
            rate = wav.getframerate()
            width = wav.getsampwidth()
            channels = wav.getnchannels()
            frames = wav.getnframes()
            if rate <= 0 or channels <= 0:
                raise WavError(f"{file}: not a usable WAV file (rate {rate}, {channels} channels)")
            if frames > max_seconds * rate:
                seconds = frames / rate
                raise WavError(
                    f"{file}: {seconds:.1f} s is too long for a chime (limit {max_seconds:g} s)"
                )
            raw = wav.readframes(frames)
    except FileNotFoundError:
        raise WavError(f"{file}: file not found") from None
    except IsADirectoryError:
        raise WavError(f"{file}: is a directory, not a WAV file") from None
    except (wave.Error, EOFError) as exc:
        raise WavError(f"{file}: not a PCM WAV file ({exc})") from None
    except OSError as exc:
        raise WavError(f"{file}: cannot be read ({exc.strerror or exc})") from None
    if width == 1:
        data = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 2:
        data = np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0
    elif width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        ints = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        ints = np.where(ints >= 1 << 23, ints - (1 << 24), ints)
        data = ints.astype(np.float32) / float(1 << 23)
    elif width == 4:
        data = (np.frombuffer(raw, "<i4").astype(np.float64) / float(1 << 31)).astype(np.float32)
    else:
        raise WavError(
            f"{file}: {8 * width}-bit samples are not supported (8, 16, 24 or 32-bit PCM)"
        )
    usable = data.size - data.size % channels
    mono = data[:usable].reshape(-1, channels).mean(axis=1, dtype=np.float32)
    return rate, np.ascontiguousarray(mono, dtype=np.float32)
