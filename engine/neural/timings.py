"""Phoneme timings of one sentence, from the durations its synthesizer used.

The synthesizer says how many frames (of `hop_length` samples) each symbol it read lasts:
one duration per blank-interspersed phone id, the audio being `hop_length` × their sum.
Each id becomes a `PhonemeTiming` named by the model's symbol table (hayakoe 1.3's
`with_timing`: blanks ``"_"`` and punctuation included). The sentence's audio then has its
silent ends trimmed and the pause owed to the sentence before put in front
(`engine.synth.edges.SentenceEdges`); the timings follow: shifted by that pause, cut to the
samples kept, so the last phoneme of a request ends where its audio ends.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..audio import PhonemeTiming
from ..text.symbols import SYMBOLS

__all__ = ["phoneme_timings"]


def phoneme_timings(
    phone_ids: Sequence[int] | np.ndarray,
    durations: np.ndarray | None,
    hop_length: int,
    sample_rate: int,
    kept: tuple[int, int],
    lead_in: int = 0,
) -> list[PhonemeTiming]:
    """The timings of a sentence's piece: `kept` is the (start, end) of the sentence's
    samples that the piece holds, after `lead_in` samples of silence. Empty when the
    synthesizer gave no durations."""
    if durations is None:
        return []
    frames = np.asarray(durations, dtype=np.float64).reshape(-1)
    ids = np.asarray(phone_ids).reshape(-1)
    if frames.size != ids.size:
        raise ValueError(f"phoneme_timings: {frames.size} durations for {ids.size} phone ids")
    ends = np.cumsum(frames) * hop_length
    starts = ends - frames * hop_length
    lo, hi = kept
    shift = lead_in - lo
    start = (np.clip(starts, lo, hi) + shift) / sample_rate
    end = (np.clip(ends, lo, hi) + shift) / sample_rate
    return [
        PhonemeTiming(_symbol(int(i)), float(s), float(e - s))
        for i, s, e in zip(ids, start, end, strict=True)
    ]


def _symbol(phone_id: int) -> str:
    return SYMBOLS[phone_id] if 0 <= phone_id < len(SYMBOLS) else "UNK"
