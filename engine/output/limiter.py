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

import numpy as np

__all__ = ["DEFAULT_CEILING_DB", "Limiter", "sliding_min"]

DEFAULT_CEILING_DB = -1.0
"""Peak ceiling, dB relative to int16 full scale (EBU R128's true-peak headroom: room left
for a DAC's inter-sample overshoot)."""

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
        return out

    def flush(self) -> np.ndarray:
        """The samples still in the delay line (call once, at the end of the stream)."""
        return self.process(np.zeros(self.delay, np.float32))
