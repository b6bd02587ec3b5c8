"""Pitch and intonation of a neural voice's sentence, changed after synthesis with WORLD.

A Style-Bert-VITS2 network has no pitch input, so hayakoe (and Style-Bert-VITS2, and
AivisSpeech Engine through it) change pitch afterwards: the sentence's audio is analysed
with WORLD (Harvest for F0, CheapTrick for the spectral envelope, D4C for the
aperiodicity), its F0 contour is changed and the audio is synthesized again from the three.
The change, on voiced frames only (F0 > 0), around the mean F0 `m` of those frames:

    f0' = pitch_scale · m + intonation_scale · (f0 - m)

so `pitch_scale` moves the mean (1.1: 10 % higher on average) and `intonation_scale`
scales each frame's distance from it (0.5: half as much melody, 0: a monotone). Unvoiced
frames stay unvoiced; a sentence without voiced frames comes back unchanged, as does
every sentence with both factors at 1 (the same array, not a copy: the default path
never reaches WORLD). The resynthesis costs quality (a slightly buzzy timbre), hence
only when asked.

Beyond hayakoe: the output keeps the input's length to the sample (WORLD's ends on a
frame boundary; timings and the pause measured after a sentence stay true), and an F0
pushed below `MIN_F0_HZ` (a wide `intonation_scale` under a low mean) is held there
instead of going negative.

`pyworld` (the `pyworld-prebuilt` wheels: x86_64 and aarch64) is imported on the first
pitched sentence, so `import engine` and unpitched requests never load it.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..voice_backend import SynthesisOptions

__all__ = ["FRAME_PERIOD_MS", "MIN_F0_HZ", "check_scales", "reshapes", "reshape_pitch"]

_LOGGER = logging.getLogger(__name__)

FRAME_PERIOD_MS = 5.0
"""WORLD's analysis hop (its default, as hayakoe uses it)."""
MIN_F0_HZ = 40.0
"""The lowest F0 a changed voiced frame gets (below WORLD's 71 Hz analysis floor; a
guard against a negative F0, not a tuning)."""


def reshapes(options: SynthesisOptions) -> bool:
    """Whether `options` ask for a pitch or intonation change (either factor not 1)."""
    return options.pitch_scale != 1.0 or options.intonation_scale != 1.0


def check_scales(pitch_scale: float, intonation_scale: float) -> str | None:
    """What is wrong with the two factors, in words naming the field; None when usable."""
    if not (math.isfinite(pitch_scale) and pitch_scale > 0):
        return f"pitch_scale must be a positive number, got {pitch_scale}"
    if not (math.isfinite(intonation_scale) and intonation_scale >= 0):
        return f"intonation_scale must be 0 or more, got {intonation_scale}"
    return None


def reshape_pitch(
    audio: np.ndarray, sample_rate: int, pitch_scale: float, intonation_scale: float
) -> np.ndarray:
    """`audio` (float, mono) with its F0 changed as the module doc says: float32 of the
    same length; `audio` itself when both factors are 1 or nothing in it is voiced."""
    if pitch_scale == 1.0 and intonation_scale == 1.0:
        return audio
    problem = check_scales(pitch_scale, intonation_scale)
    if problem is not None:
        raise ValueError(problem)
    x = np.ascontiguousarray(np.asarray(audio, dtype=np.float64).reshape(-1))
    if x.size == 0:
        return audio
    import pyworld  # the first pitched sentence pays this import, nobody else

    f0, times = pyworld.harvest(x, sample_rate, frame_period=FRAME_PERIOD_MS)
    voiced = f0 > 0
    if not voiced.any():
        _LOGGER.debug(
            "no voiced frame in %.2f s of audio: pitch left as it is", x.size / sample_rate
        )
        return audio
    envelope = pyworld.cheaptrick(x, f0, times, sample_rate)
    aperiodicity = pyworld.d4c(x, f0, times, sample_rate)
    mean = float(f0[voiced].mean())
    changed = f0.copy()
    changed[voiced] = np.maximum(
        pitch_scale * mean + intonation_scale * (f0[voiced] - mean), MIN_F0_HZ
    )
    y = pyworld.synthesize(changed, envelope, aperiodicity, sample_rate, FRAME_PERIOD_MS)
    out = np.zeros(x.size, np.float32)
    n = min(x.size, y.size)
    out[:n] = y[:n]
    return out
