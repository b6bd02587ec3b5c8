"""Output shaping after the voice: volume with a limiter, loudness, silence, rate, chime.

`OutputOptions` says what a request wants; `OutputStage` does it, piece by piece, for
`Speaker` (one stage per request). See `stage.py` for the order of the steps.
"""

from __future__ import annotations

from .limiter import Limiter
from .loudness import integrated_loudness, loudness_gain
from .options import OUTPUT_RATES, Chime, OutputOptions
from .stage import OutputStage
from .wav import WavError, read_wav

__all__ = [
    "OUTPUT_RATES",
    "Chime",
    "Limiter",
    "OutputOptions",
    "OutputStage",
    "WavError",
    "integrated_loudness",
    "loudness_gain",
    "read_wav",
]
