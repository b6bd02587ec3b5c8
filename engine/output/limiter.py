"""A look-ahead peak limiter: gain that never lets a sample past the ceiling, without clipping.

Why look ahead: turning a voice up (``volume``, ``loudness``) pushes its loudest peaks past
full scale; int16 conversion would then clip them flat (harsh, buzzy). This limiter lowers the
gain smoothly *before* each such peak and lets it recover after, so the peak lands exactly at
the ceiling and the waveform keeps its shape.

How (per sample ``n`` of the input ``x``, at the output rate):

1. ``t[n] = min(1, ceiling / |x[n]|)`` — the largest gain sample ``n`` may have;
2. ``s[n]`` = the minimum of ``t`` over the last ``lookahead + 1 + hold`` samples (a falling
   edge is instant, a rising one waits ``hold``);
3. two moving averages of ``s`` (spans adding up to ``lookahead``) smooth the gain into a
   triangular attack/release ramp;
4. the output is the input delayed by ``lookahead`` samples times that gain.

Every average in step 3 covers only values of ``s`` whose window includes the delayed
sample, so ``gain * |x| <= ceiling`` holds exactly (proof in `Limiter.process`). Everything is
a function of a bounded past, kept as state between calls: a stream cut into chunks anywhere
gives bit-for-bit the output of one call on the whole signal. The delay is given back by
`Limiter.flush`, so the output has exactly as many samples as the input.
"""

from __future__ import annotations

import math

import numpy as np

from .loudness import gated_loudness, k_weighted

__all__ = [
    "DEFAULT_CEILING_DB",
    "FULL_SCALE_CEILING",
    "FULL_SCALE_CEILING_DB",
    "Limiter",
    "PieceLimiter",
    "limit_keeping_loudness",
    "peak_gain",
    "sliding_min",
]

DEFAULT_CEILING_DB = -1.0
"""Peak ceiling, dB relative to int16 full scale (EBU R128's true-peak headroom: room left
for a DAC's inter-sample overshoot)."""

FULL_SCALE_CEILING = 32766.4 / 32767.0
"""The largest magnitude that the int16 conversion (``rint(x * 32767)``) maps to at most
±32766: the ceiling of default output (no volume, no loudness), so that no sample reaches full
scale (±32767, −32768) and a sample that would not have reached it is left exactly as it was."""

FULL_SCALE_CEILING_DB = 20.0 * math.log10(FULL_SCALE_CEILING)

LOUDNESS_TOLERANCE_LU = 0.1
"""`limit_keeping_loudness` stops once within this of the level it keeps."""

MAX_MAKEUP_DB = 12.0
"""`limit_keeping_loudness` never turns a phrase up by more than this."""

_MAKEUP_ROUNDS = 4

LOOKAHEAD_S = 0.005
"""Look-ahead (and the attack/release ramp length), seconds."""

HOLD_S = 0.02
"""How long the gain stays down after a peak before it ramps back, seconds."""


def sliding_min(values: np.ndarray, width: int) -> np.ndarray:
    """``out[i] = min(values[i : i + width])`` for every full window, in O(n)
    (van Herk / Gil-Werman: prefix and suffix minima of blocks of `width`)."""
    n = values.size
    if n < width:
        return np.zeros(0, values.dtype)
    pad = (-n) % width
    blocks = np.concatenate([values, np.full(pad, np.inf, values.dtype)]).reshape(-1, width)
    prefix = np.minimum.accumulate(blocks, axis=1).reshape(-1)
    suffix = np.minimum.accumulate(blocks[:, ::-1], axis=1)[:, ::-1].reshape(-1)
    count = n - width + 1
    return np.minimum(suffix[:count], prefix[width - 1 : width - 1 + count])


def _moving_mean(values: np.ndarray, width: int) -> np.ndarray:
    """Mean of every full window of `width` (a direct convolution: each window is summed on
    its own, in the same order, so the result does not depend on where a chunk starts)."""
    return np.convolve(values, np.ones(width), "valid") / width


class Limiter:
    """Stateful look-ahead limiter for mono float audio at one sample rate.

    `process` takes any number of samples and returns as many, delayed by `delay` samples
    (the first call returns `delay` fewer); `flush` returns the held-back tail.
    """

    def __init__(
        self,
        sample_rate: int,
        *,
        ceiling_db: float = DEFAULT_CEILING_DB,
        lookahead_s: float = LOOKAHEAD_S,
        hold_s: float = HOLD_S,
    ) -> None:
        self.ceiling = float(10.0 ** (ceiling_db / 20.0))
        look = max(2, int(round(lookahead_s * sample_rate)))
        self.delay = look
        self._span1 = look // 2  # the two smoothing spans add up to the look-ahead
        self._span2 = look - self._span1
        self._window = look + 1 + max(0, int(round(hold_s * sample_rate)))
        self._t = np.ones(self._window - 1)  # target gains of the last inputs
        self._s = np.ones(self._span1)  # held minima feeding the first average
        self._a = np.ones(self._span2)  # first averages feeding the second
        self._x = np.zeros(look, np.float32)  # the delay line
        self._skip = look  # outputs that stand for the zeros before the stream
        self.min_gain = 1.0
        """The lowest gain applied so far (1.0: never limited)."""

    def process(self, samples: np.ndarray) -> np.ndarray:
        """Limit the next `samples`; returns the delayed, limited output (float32).

        Why it never exceeds the ceiling: the output sample at ``n`` is ``x[n - L]`` times
        ``a2[n]``, an average of ``a1[n - i]`` (``i <= span2``), each an average of
        ``s[n - i - j]`` (``j <= span1``); ``i + j <= L`` and every ``s[k]`` with
        ``n - L <= k <= n`` is a minimum over a window that contains ``n - L``, so every
        term is ``<= t[n - L]`` and so is the average.
        """
        x = np.asarray(samples, dtype=np.float32).reshape(-1)
        m = x.size
        if m == 0:
            return np.zeros(0, np.float32)
        mag = np.abs(x.astype(np.float64))
        target = np.ones(m)
        over = mag > self.ceiling
        target[over] = self.ceiling / mag[over]
        t_all = np.concatenate([self._t, target])
        line = np.concatenate([self._x, x])
        if t_all.min() >= 1.0 and self._s.min() >= 1.0 and self._a.min() >= 1.0:
            gain = None  # nothing to limit anywhere in reach: keep the samples as they are
            s_new = np.ones(m)
            a1_new = np.ones(m)
        else:
            s_new = sliding_min(t_all, self._window)
            a1_new = _moving_mean(np.concatenate([self._s, s_new]), self._span1 + 1)
            gain = _moving_mean(np.concatenate([self._a, a1_new]), self._span2 + 1)
        self._t = t_all[-(self._window - 1) :] if self._window > 1 else self._t
        self._s = np.concatenate([self._s, s_new])[-self._span1 :]
        self._a = np.concatenate([self._a, a1_new])[-self._span2 :]
        self._x = line[-self.delay :]
        delayed = line[:m]
        if gain is None:
            out = delayed.copy()
        else:
            self.min_gain = min(self.min_gain, float(gain.min()))
            out = np.clip(delayed * gain, -self.ceiling, self.ceiling).astype(np.float32)
        if self._skip:
            drop = min(self._skip, out.size)
            self._skip -= drop
            out = out[drop:]
        return np.asarray(out)

    def flush(self) -> np.ndarray:
        """The samples still in the delay line (call once, at the end of the stream)."""
        return self.process(np.zeros(self.delay, np.float32))


def _window_mean(values: np.ndarray, width: int) -> np.ndarray:
    """Mean of every full window of `width`, from a running sum (for whole signals: fast,
    but its rounding depends on where the signal starts, unlike `_moving_mean`)."""
    total = np.concatenate([[0.0], np.cumsum(values)])
    return np.asarray((total[width:] - total[:-width]) / width)


def _shape(sample_rate: int, lookahead_s: float, hold_s: float) -> tuple[int, int, int, int]:
    """look-ahead, the two smoothing spans and the minimum's window, in samples (`Limiter`'s)."""
    look = max(2, int(round(lookahead_s * sample_rate)))
    window = look + 1 + max(0, int(round(hold_s * sample_rate)))
    return look, look // 2, look - look // 2, window


def _targets(samples: np.ndarray, ceiling: float) -> np.ndarray:
    """The largest gain each sample may have: ``min(1, ceiling / |x|)``."""
    x = np.abs(np.asarray(samples, dtype=np.float64).reshape(-1))
    target = np.ones(x.size)
    over = x > ceiling
    target[over] = ceiling / x[over]
    return target


def _gain_of_targets(target: np.ndarray, shape: tuple[int, int, int, int]) -> np.ndarray:
    """`Limiter`'s gain for these targets, without its delay: ones (silence) before and after.

    The gain at output n (Limiter's time, input delayed by `look`) is a mean over span2 of
    means over span1 of minima of `target` over `window`."""
    look, span1, span2, window = shape
    padded = np.concatenate([np.ones(window - 1 + look), target, np.ones(look)])
    held = sliding_min(padded, window)
    gain = _window_mean(_window_mean(held, span1 + 1), span2 + 1)[look:]
    return np.asarray(np.minimum(gain, target))  # equal but for the running sums' rounding


def peak_gain(
    samples: np.ndarray,
    sample_rate: int,
    *,
    ceiling: float = FULL_SCALE_CEILING,
    lookahead_s: float = LOOKAHEAD_S,
    hold_s: float = HOLD_S,
) -> np.ndarray:
    """The gain `Limiter` would give each sample of a whole signal (same look-ahead, hold and
    ramps), without the delay: ``samples * peak_gain(samples, ...)`` is the limited signal.

    For a signal held whole (a phrase the voice renders at once); a stream takes `Limiter` or
    `PieceLimiter`.
    """
    shape = _shape(sample_rate, lookahead_s, hold_s)
    return _gain_of_targets(_targets(samples, ceiling), shape)


class PieceLimiter:
    """The limiter of default output: each piece of a stream limited as it comes, no delay.

    Why not `Limiter`: its look-ahead holds back the last 5 ms of every piece until the next
    one, which moves every chunk edge and keeps a sentence's end waiting for the next sentence;
    and default output has nothing to limit unless a voice reaches full scale (a neural
    decoder's tanh saturated at ±1.0: a few samples by 1/32767). So a piece passes as it is
    unless a sample in it, or in the hold of one just before it, passes the ceiling; then it
    gets `Limiter`'s gain computed over the piece (its look-ahead within the piece) with the
    targets of the samples just sent in front (their hold and release carry on into it). Only
    an over within the look-ahead of a piece's start gets a shorter attack, since the samples
    before it are gone: the gain still never lets a sample past the ceiling.
    """

    def __init__(
        self,
        sample_rate: int,
        *,
        ceiling: float = FULL_SCALE_CEILING,
        lookahead_s: float = LOOKAHEAD_S,
        hold_s: float = HOLD_S,
    ) -> None:
        self.ceiling = float(ceiling)
        self._shape = _shape(sample_rate, lookahead_s, hold_s)
        look, _, _, window = self._shape
        self._keep = window - 1 + look  # the targets in front that reach a new piece
        self._front = np.ones(0)
        self.min_gain = 1.0
        """The lowest gain applied so far (1.0: never limited)."""

    def process(self, samples: np.ndarray) -> np.ndarray:
        """The piece, limited (float32, as many samples; the same array values when nothing
        in reach passes the ceiling)."""
        x = np.asarray(samples, dtype=np.float32).reshape(-1)
        target = _targets(x, self.ceiling)
        quiet_front = self._front.size == 0 or float(self._front.min()) >= 1.0
        if quiet_front and (target.size == 0 or float(target.min()) >= 1.0):
            self._front = np.ones(0)
            return x
        both = np.concatenate([self._front, target])
        gain = _gain_of_targets(both, self._shape)[self._front.size :]
        self._front = both[-self._keep :]
        if gain.size == 0:
            return x
        self.min_gain = min(self.min_gain, float(gain.min()))
        out = np.clip(x.astype(np.float64) * gain, -self.ceiling, self.ceiling)
        return np.asarray(out, dtype=np.float32)


def limit_keeping_loudness(
    samples: np.ndarray, sample_rate: int, *, ceiling: float = FULL_SCALE_CEILING
) -> np.ndarray:
    """A whole signal whose peaks pass `ceiling`, limited below it and turned up so that its
    integrated loudness (BS.1770) stays that of the signal clipped at full scale (what int16
    conversion made of it before), within `LOUDNESS_TOLERANCE_LU`; a signal within the
    ceiling is returned as it is.

    Why turn up: a voice whose peaks pass full scale by several dB (the embedded voice's reach
    3.7× on some phrases) loses up to 2 LU to limiting alone; a make-up gain found in a few
    rounds (the filtered signal is weighed again by each round's gain, one filter pass in all)
    keeps the level a listener knows while no sample is clipped.
    """
    x = np.asarray(samples, dtype=np.float32).reshape(-1)
    if x.size == 0 or float(np.abs(x).max()) <= ceiling:
        return x
    magnitude = np.abs(x.astype(np.float64))
    weighted = k_weighted(x, sample_rate) ** 2
    clipped = np.minimum(1.0, 1.0 / np.maximum(magnitude, 1e-30))  # what clipping made of it
    target = gated_loudness(weighted * clipped**2, sample_rate)
    makeup = 1.0
    limit = 10.0 ** (MAX_MAKEUP_DB / 20.0)
    gain = peak_gain(x, sample_rate, ceiling=ceiling)
    for _ in range(_MAKEUP_ROUNDS):
        level = gated_loudness(weighted * (makeup * gain) ** 2, sample_rate)
        miss = target - level
        if not (math.isfinite(miss) and abs(miss) > LOUDNESS_TOLERANCE_LU):
            break
        makeup = min(limit, makeup * 10.0 ** (miss / 20.0))
        gain = peak_gain(x * makeup, sample_rate, ceiling=ceiling)
    out = x.astype(np.float64) * (makeup * gain)
    return np.clip(out, -ceiling, ceiling).astype(np.float32)
