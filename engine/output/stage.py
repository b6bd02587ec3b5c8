"""`OutputStage`: one request's audio from the voice's float pieces to int16 chunks.

Order, per request::

    voice pieces (float, voice rate)
      → gain (volume, or loudness × volume; one value for the whole request)
      → soxr streaming resampler (to the output rate)
      → [chime × gain, lead silence] before the first sound … [tail silence] after the last
      → look-ahead limiter (never past the ceiling, no clipping; `engine.output.limiter`)
      → int16 (fixed ×32767 scale)

Every step keeps state between pieces, so a stream cut anywhere gives exactly the samples of
the whole text processed at once. With default `OutputOptions` the stage is a pass-through:
the int16 conversion behind `PieceLimiter` at `FULL_SCALE_CEILING`, which changes no sample
unless one would reach full scale (±32767 or −32768: a voice whose raw output passes it, e.g. a
neural decoder's tanh saturated at 1.0), and then limits it smoothly instead of clipping; it
holds nothing back, so each piece gives its chunk at once, as before the limiter existed.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import numpy as np

from ..audio import to_int16
from .limiter import FULL_SCALE_CEILING, Limiter, PieceLimiter
from .loudness import loudness_gain
from .options import Chime, OutputOptions

__all__ = ["MAX_MEASURE_S", "OutputStage"]

_LOGGER = logging.getLogger(__name__)

MAX_MEASURE_S = 10.0
"""A stream with loudness set is measured on its first sentence, or on this many seconds
if that sentence is longer (the audio is held back while it is measured)."""

_EMPTY = np.zeros(0, np.int16)


@functools.lru_cache(maxsize=16)
def _chime_at(chime: Chime, rate: int) -> np.ndarray:
    """The chime resampled to `rate` (once per chime and rate)."""
    if chime.sample_rate == rate:
        return chime.samples.astype(np.float32, copy=False)
    import soxr  # no type information shipped (mypy: ignore_missing_imports)

    return np.asarray(
        soxr.resample(chime.samples, chime.sample_rate, rate, quality="HQ"), np.float32
    )


class OutputStage:
    """Shapes one request's audio (see the module docstring). Not thread-safe; one per request.

    `push` each piece of the voice (``final``: it ends a sentence), then `finish` once; both
    return int16 samples at `rate` (possibly none: the resampler, the limiter and a loudness
    measurement hold some back).
    """

    def __init__(
        self, options: OutputOptions, voice_rate: int, *, measure_whole: bool = False
    ) -> None:
        self.options = options
        self.voice_rate = int(voice_rate)
        self.rate = options.rate_for(voice_rate)
        """The rate of every sample this stage returns."""
        self.passthrough = options.changes_nothing(voice_rate)
        self._measure_whole = measure_whole
        self._gain: float | None = options.volume if options.loudness is None else None
        self._held: list[np.ndarray] = []
        self._held_samples = 0
        self._held_sound = False
        self._resampler: Any = None
        if self.rate != self.voice_rate:
            import soxr  # no type information shipped (mypy: ignore_missing_imports)

            self._resampler = soxr.ResampleStream(
                self.voice_rate, self.rate, 1, dtype="float32", quality="HQ"
            )
        self._limiter: Limiter | PieceLimiter = (
            PieceLimiter(self.rate, ceiling=FULL_SCALE_CEILING)
            if self.passthrough
            else Limiter(self.rate)
        )
        self._started = False
        self._finished = False

    @property
    def gain(self) -> float | None:
        """The linear gain of this request (None until a loudness measurement is done)."""
        return self._gain

    @property
    def limited(self) -> bool:
        """Whether the limiter has had to lower any peak so far."""
        return self._limiter.min_gain < 1.0

    def push(self, samples: np.ndarray, *, final: bool = True) -> np.ndarray:
        """The next piece of the voice's float audio → int16 samples ready to send."""
        x = np.asarray(samples, dtype=np.float32).reshape(-1)
        if self._finished:
            raise RuntimeError("OutputStage.push after finish")
        if self.passthrough:
            return to_int16(self._limiter.process(x))
        if self._gain is None:
            self._held.append(x)
            self._held_samples += x.size
            self._held_sound = self._held_sound or bool(np.any(x))
            enough = self._held_samples >= MAX_MEASURE_S * self.voice_rate
            if self._measure_whole or not ((final and self._held_sound) or enough):
                return _EMPTY  # measured once a sentence with sound is complete
            x = self._measure()
        return self._shape(x)

    def finish(self) -> np.ndarray:
        """Everything still held back, then the tail silence (nothing if nothing was heard)."""
        if self._finished:
            return _EMPTY
        if self.passthrough:  # nothing held back
            self._finished = True
            return self._log_limited(_EMPTY)
        out: list[np.ndarray] = []
        if self._gain is None:
            out.append(self._shape(self._measure()))
        self._finished = True
        if not self._started:
            return _EMPTY
        rest: list[np.ndarray] = []
        if self._resampler is not None:
            rest.append(
                np.asarray(
                    self._resampler.resample_chunk(np.zeros(0, np.float32), last=True), np.float32
                )
            )
        rest.append(np.zeros(self._samples(self.options.tail_silence), np.float32))
        assert isinstance(self._limiter, Limiter)
        out.append(to_int16(self._limiter.process(np.concatenate(rest))))
        out.append(to_int16(self._limiter.flush()))
        return self._log_limited(np.concatenate(out))

    # -- internals ---------------------------------------------------------------------
    def _log_limited(self, last: np.ndarray) -> np.ndarray:
        if self._limiter.min_gain < 1.0:
            _LOGGER.debug(
                "Limiter lowered peaks by up to %.2f dB", -20 * np.log10(self._limiter.min_gain)
            )
        return last

    def _samples(self, seconds: float) -> int:
        return int(round(seconds * self.rate))

    def _measure(self) -> np.ndarray:
        """Fix the gain from the audio held so far; returns that audio."""
        held = np.concatenate(self._held) if self._held else np.zeros(0, np.float32)
        self._held, self._held_samples, self._held_sound = [], 0, False
        target = self.options.loudness
        assert target is not None
        self._gain = loudness_gain(held, self.voice_rate, target) * self.options.volume
        _LOGGER.debug("Loudness %.1f LUFS: gain %.2f dB", target, 20 * np.log10(self._gain))
        return held

    def _shape(self, x: np.ndarray) -> np.ndarray:
        assert self._gain is not None
        if x.size == 0:
            return _EMPTY
        parts: list[np.ndarray] = []
        if not self._started:
            self._started = True
            if self.options.chime is not None:
                parts.append(_chime_at(self.options.chime, self.rate) * np.float32(self._gain))
            parts.append(np.zeros(self._samples(self.options.lead_silence), np.float32))
        y = x * np.float32(self._gain) if self._gain != 1.0 else x
        if self._resampler is not None:
            y = np.asarray(self._resampler.resample_chunk(y), np.float32)
        parts.append(y)
        return to_int16(self._limiter.process(np.concatenate(parts)))
