"""A sentence's ends: the silence rule and the one trim/pad policy of every decoding strategy.

A voice trims the silence its synthesizer leaves at a sentence's ends (keeping a margin)
and puts the pause owed to the sentence before it in front of its audio. Whether a sentence
is decoded whole or in windows (`engine.synth.windowed.WindowedSentence`), the same
`SentenceEdges` says which ends are trimmed, what margin stays and how much silence goes in
front; only what is known when a piece is ready differs: a whole sentence is measured at
once (`silent_edges`), a windowed one at its first window (leading silence, against that
window's peak) and its last (trailing silence, against the sentence's peak: `silent_run`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SILENCE_WINDOW_S = 0.01
"""Silence is measured in whole windows of this many seconds."""
SILENCE_RATIO = 0.02
"""A window is silent when its largest sample is below this fraction of the peak."""


def silent_edges(audio: np.ndarray, sample_rate: int) -> tuple[int, int]:
    """(leading, trailing) silent samples, in whole 10 ms windows below 2 % of the peak
    (windows counted from the start)."""
    n = len(audio)
    if n == 0:
        return 0, 0
    peak = float(np.abs(audio).max())
    if peak == 0.0:
        return n, n
    win = max(1, round(SILENCE_WINDOW_S * sample_rate))
    n_win = (n + win - 1) // win
    padded = np.zeros(n_win * win, np.float32)
    padded[:n] = np.abs(audio)
    loud = padded.reshape(n_win, win).max(axis=1) >= SILENCE_RATIO * peak
    first = int(np.argmax(loud))
    last = n_win - 1 - int(np.argmax(loud[::-1]))
    return min(first * win, n), max(0, n - (last + 1) * win)


def silent_run(audio: np.ndarray, sample_rate: int, peak: float, from_end: bool) -> int:
    """Samples of silence at one end of `audio` (the rule of `silent_edges`, with the peak
    given; from the end, the windows are counted from the end)."""
    n = len(audio)
    if n == 0:
        return 0
    if peak <= 0.0:
        return n
    win = max(1, round(SILENCE_WINDOW_S * sample_rate))
    n_win = (n + win - 1) // win
    padded = np.zeros(n_win * win, np.float32)
    if from_end:
        padded[n_win * win - n :] = np.abs(audio)  # align windows to the end
    else:
        padded[:n] = np.abs(audio)
    loud = padded.reshape(n_win, win).max(axis=1) >= SILENCE_RATIO * peak
    if not loud.any():
        return n
    k = int(np.argmax(loud[::-1])) if from_end else int(np.argmax(loud))
    return min(n, k * win)


@dataclass(frozen=True)
class SentenceEdges:
    """What one sentence's audio gets at its ends: its leading silence trimmed
    (`trim_lead`), its trailing silence trimmed (`trim_trail`), each keeping `margin`
    samples of it, and `lead_in` samples of silence put in front of its first piece.
    The default changes nothing."""

    trim_lead: bool = False
    trim_trail: bool = False
    margin: int = 0
    lead_in: int = 0

    def lead_cut(self, silent: int) -> int:
        """Samples cut from the start, of `silent` leading silent samples."""
        return max(0, silent - self.margin) if self.trim_lead else 0

    def trail_cut(self, silent: int) -> int:
        """Samples cut from the end, of `silent` trailing silent samples."""
        return max(0, silent - self.margin) if self.trim_trail else 0

    def piece(self, audio: np.ndarray, lead_cut: int, trail_cut: int, first: bool) -> np.ndarray:
        """`audio` less `lead_cut` samples at the start and `trail_cut` at the end, after
        `lead_in` samples of silence when it is the sentence's `first` piece."""
        body = audio[lead_cut : len(audio) - trail_cut]
        if first and self.lead_in > 0:
            body = np.concatenate([np.zeros(self.lead_in, np.float32), body])
        return body
