"""Sub-sentence streaming: decode the latent of one sentence in windows.

The HiFi-GAN decoder of a JP-Extra voice is purely convolutional (conv_pre, transposed-conv
upsampling, dilated residual blocks, conv_post; no normalisation or attention), so each
output sample depends only on a bounded stretch of latent frames: its *receptive field*.
Decoding a window of frames together with at least that much context on each side, and
keeping only the window's own samples, gives the same audio as decoding the whole sentence
(up to float rounding of the convolution kernels, measured in
`tests/engine/synth/test_windowed.py`).

That lets a voice emit the first fraction of a second of a sentence as soon as the (cheap,
sequence-wide) encoder/flow part and one small decoder window are done, instead of waiting
for the whole sentence: the first window is small for latency, later ones grow for
throughput (less repeated context per sample).

This module knows nothing about PyTorch or ONNX Runtime: the caller passes a function that
decodes a latent slice `[1, C, n]` to audio of `n * hop` samples.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, SupportsIndex, SupportsInt, runtime_checkable

import numpy as np

from ..voice_backend import ListenerView
from .common import Latent, NoiseSource, SplitSynth, SynthInputs, SynthParams
from .edges import SentenceEdges, silent_run

_LOGGER = logging.getLogger(__name__)

DecodeFn = Callable[[np.ndarray], np.ndarray]
"""Decode a latent slice `float32 [1, C, n]` to `n * hop` samples (any shape that
flattens to that length)."""


def _items(value: object) -> Iterable[object]:
    """A config list's items (TypeError, as `for` gives, when `value` is not iterable)."""
    if not isinstance(value, Iterable):
        raise TypeError(f"{type(value).__name__!r} object is not iterable")
    return value


def _int(value: object) -> int:
    """`int(value)` for a config item (TypeError, as `int()` gives, for what it refuses)."""
    if not isinstance(value, (str, bytes, bytearray, SupportsInt, SupportsIndex)):
        raise TypeError(
            "int() argument must be a string, a bytes-like object or a real number, "
            f"not {type(value).__name__!r}"
        )
    return int(value)


def _ints(value: object) -> tuple[int, ...]:
    return tuple(_int(v) for v in _items(value))


@dataclass(frozen=True)
class DecoderGeometry:
    """Shape facts of an SBV2/VITS HiFi-GAN generator that decide its receptive field."""

    upsample_rates: tuple[int, ...] = (8, 8, 2, 2, 2)
    upsample_kernel_sizes: tuple[int, ...] = (16, 16, 8, 2, 2)
    resblock: str = "1"
    resblock_kernel_sizes: tuple[int, ...] = (3, 7, 11)
    resblock_dilation_sizes: tuple[tuple[int, ...], ...] = (
        (1, 3, 5),
        (1, 3, 5),
        (1, 3, 5),
    )
    pre_kernel: int = 7
    post_kernel: int = 7

    @classmethod
    def from_config(cls, model: Mapping[str, object]) -> DecoderGeometry:
        """Build from the `model` section of an SBV2 `config.json` (or the whole config)."""
        section = model.get("model")
        if isinstance(section, Mapping):
            model = section
        try:
            geom = cls(
                upsample_rates=_ints(model["upsample_rates"]),
                upsample_kernel_sizes=_ints(model["upsample_kernel_sizes"]),
                resblock=str(model["resblock"]),
                resblock_kernel_sizes=_ints(model["resblock_kernel_sizes"]),
                resblock_dilation_sizes=tuple(
                    _ints(ds) for ds in _items(model["resblock_dilation_sizes"])
                ),
            )
        except KeyError as err:
            raise ValueError(f"config.json: model.{err.args[0]} is missing") from err
        geom.validate()
        return geom

    def validate(self) -> None:
        """Raise ValueError when the shapes are not a decoder this module understands."""
        if len(self.upsample_rates) != len(self.upsample_kernel_sizes):
            raise ValueError(
                "config.json: model.upsample_rates and model.upsample_kernel_sizes differ in length"
            )
        for u, k in zip(self.upsample_rates, self.upsample_kernel_sizes, strict=True):
            if u < 1 or k < u or (k - u) % 2:
                # The generator pads by (k - u) // 2; only then is the output length n * u.
                raise ValueError(
                    f"config.json: upsample kernel {k} with rate {u} does not give "
                    "exactly rate × input samples"
                )
        if self.resblock not in ("1", "2"):
            raise ValueError(f"config.json: model.resblock {self.resblock!r} is not '1' or '2'")
        if len(self.resblock_kernel_sizes) != len(self.resblock_dilation_sizes):
            raise ValueError(
                "config.json: model.resblock_kernel_sizes and "
                "model.resblock_dilation_sizes differ in length"
            )

    @property
    def hop(self) -> int:
        """Audio samples per latent frame (product of the upsample rates, 512 for JP-Extra)."""
        return math.prod(self.upsample_rates)

    def _resblock_radius(self) -> int:
        """Samples of context one residual stage needs on each side (widest branch)."""
        radius = 0
        for k, dils in zip(self.resblock_kernel_sizes, self.resblock_dilation_sizes, strict=True):
            if self.resblock == "1":
                # Each step: conv(k, dilation d) then conv(k, dilation 1), with a residual.
                r = sum((k - 1) * d // 2 + (k - 1) // 2 for d in dils)
            else:
                # Type 2 uses the first two dilations, one conv each.
                r = sum((k - 1) * d // 2 for d in dils[:2])
            radius = max(radius, r)
        return radius

    def context_frames(self) -> tuple[int, int]:
        """Latent frames of context (left, right) that make windowed decoding exact.

        Walks backwards from the output samples of one latent frame through every layer,
        tracking which positions of each intermediate tensor they read. A window's own
        intermediate tensors are zero-padded outside its range, so the context must cover
        the needed positions of *every* intermediate tensor, not only of the latent: the
        answer is the maximum over tensors of that tensor's needed extent, in frames.
        """
        hop = self.hop
        # Needed interval [a, b] in the current tensor's own index space, for the output
        # samples [0, hop) of latent frame 0; `rate` = samples of that tensor per frame.
        a, b, rate = 0, hop - 1, hop
        need_left = need_right = 0

        def record(lo: int, hi: int, r: int) -> None:
            nonlocal need_left, need_right
            need_left = max(need_left, math.ceil(-lo / r) if lo < 0 else 0)
            need_right = max(need_right, math.ceil((hi - (r - 1)) / r) if hi > r - 1 else 0)

        half_post = (self.post_kernel - 1) // 2
        a, b = a - half_post, b + half_post  # conv_post reads this from the last stage
        record(a, b, rate)
        radius = self._resblock_radius()
        for u, k in reversed(
            list(zip(self.upsample_rates, self.upsample_kernel_sizes, strict=True))
        ):
            a, b = a - radius, b + radius  # residual blocks of this stage
            record(a, b, rate)
            p = (k - u) // 2
            # Transposed conv: y[n] sums x[i] * w[n + p - i*u] over 0 <= n + p - i*u < k.
            a, b = -((-(a + p - k + 1)) // u), (b + p) // u
            rate //= u
            record(a, b, rate)
        half_pre = (self.pre_kernel - 1) // 2
        a, b = a - half_pre, b + half_pre  # conv_pre reads the latent
        record(a, b, rate)
        return need_left, need_right

    def stages(self) -> list[StageShape]:
        """The decoder cut into stages at the input of each upsampling layer (see
        `StagedDecoding`): `conv_pre` (+ `cond`), then per upsampling layer its transposed
        convolution and residual blocks (the last one also `conv_post`).

        Each stage's context is counted in its own input samples, with the same walk as
        `context_frames` (every intermediate tensor of the stage covered), but only through
        that stage's own layers: what a window must recompute shrinks from the whole
        receptive field (13 latent frames each side at every layer) to a few samples per
        stage."""
        half_pre = (self.pre_kernel - 1) // 2
        out = [StageShape(1, half_pre, half_pre)]
        radius = self._resblock_radius()
        last = len(self.upsample_rates) - 1
        for i, (u, k) in enumerate(
            zip(self.upsample_rates, self.upsample_kernel_sizes, strict=True)
        ):
            need_left = need_right = 0

            def record(lo: int, hi: int, r: int) -> None:
                nonlocal need_left, need_right
                need_left = max(need_left, math.ceil(-lo / r) if lo < 0 else 0)
                need_right = max(need_right, math.ceil((hi - (r - 1)) / r) if hi > r - 1 else 0)

            a, b = 0, u - 1  # output samples of input sample 0
            if i == last:
                half_post = (self.post_kernel - 1) // 2
                a, b = a - half_post, b + half_post
                record(a, b, u)
            a, b = a - radius, b + radius
            record(a, b, u)
            p = (k - u) // 2
            a, b = -((-(a + p - k + 1)) // u), (b + p) // u
            record(a, b, 1)
            out.append(StageShape(u, need_left, need_right))
        return out


@dataclass(frozen=True)
class StageShape:
    """One stage of a staged decoder: `rate` output samples per input sample, and the input
    samples of context (`left`, `right`) that make its output exact."""

    rate: int
    left: int
    right: int


@dataclass(frozen=True)
class WindowPlan:
    """How to cut a sentence's latent frames into decoder windows.

    `first` frames first (small: latency), then each window `growth` times the previous,
    capped at `largest`; a tail shorter than `min_tail` is merged into the window before
    it, and a sentence no longer than `first + min_tail` is decoded whole.
    """

    first: int = 24
    growth: float = 2.0
    largest: int = 512
    min_tail: int = 16
    adaptive: bool = False
    """When streaming to a listener (`WindowedSentence` with a `ListenerView`): size each
    window after the first by the audio the listener has in hand and the measured decoding
    speed, so it is ready before that audio runs out (at least `first`, at most `largest`
    frames); when decoding is slower than real time, grow by `growth` (fewer windows, less
    repeated context: gaps cannot be avoided there, so finish sooner). Without a listener
    windows grow by `growth`."""
    min_growth: float = 1.5
    """Adaptive windows grow at least by this factor within a sentence: every window
    boundary costs some recomputed context (and a few runtime calls), so windows that stay
    as small as the playback budget allows would add up to much more work than decoding
    the sentence whole (measured: 2× with 24-frame windows on the full-size voice)."""

    def end_of(self, start: int, size: int, n_frames: int) -> int:
        """End of the window starting at `start` with `size` frames (tail merged)."""
        if self.first <= 0 or n_frames <= self.first + self.min_tail:
            return n_frames
        end = min(n_frames, start + max(1, size))
        return n_frames if n_frames - end < self.min_tail else end

    def grown(self, size: int) -> int:
        return min(self.largest, max(size + 1, round(size * self.growth)))

    def windows(self, n_frames: int) -> list[tuple[int, int]]:
        """Frame ranges `[start, end)` covering `0..n_frames` in order (fixed growth)."""
        if n_frames <= 0:
            return []
        out: list[tuple[int, int]] = []
        start, size = 0, self.first
        while start < n_frames:
            end = self.end_of(start, size, n_frames)
            out.append((start, end))
            start = end
            size = self.grown(size)
        return out


WHOLE = WindowPlan(first=0)
"""A plan that decodes every sentence in one piece (no sub-sentence streaming)."""


def decode_windows(
    z: np.ndarray,
    decode: DecodeFn,
    context: tuple[int, int],
    windows: Sequence[tuple[int, int]],
    hop: int,
) -> Iterator[np.ndarray]:
    """Yield the audio of each window of `z` (`[1, C, T]`), in order, as 1-D arrays (the
    decoder's dtype).

    Window `[s, e)` is decoded from `z[..., s - left : e + right]` (clipped to the sentence,
    where the real edge gives the same zero padding as whole-sentence decoding) and cut to
    its own `(e - s) * hop` samples, so the pieces joined equal `decode(z)`.
    """
    if z.ndim != 3 or z.shape[0] != 1:
        raise ValueError(f"latent must be [1, C, T], got shape {tuple(z.shape)}")
    for s, e in windows:
        yield decode_window(z, decode, context, s, e, hop)


def decode_window(
    z: np.ndarray, decode: DecodeFn, context: tuple[int, int], s: int, e: int, hop: int
) -> np.ndarray:
    """The audio of frames `[s, e)` of `z`, decoded with `context` frames around it."""
    n_frames = z.shape[2]
    left, right = context
    if not 0 <= s < e <= n_frames:
        raise ValueError(f"window [{s}, {e}) outside the latent's {n_frames} frames")
    lo, hi = max(0, s - left), min(n_frames, e + right)
    audio = np.asarray(decode(np.ascontiguousarray(z[:, :, lo:hi]))).reshape(-1)
    expected = (hi - lo) * hop
    if audio.shape[0] != expected:
        raise ValueError(
            f"decoder gave {audio.shape[0]} samples for {hi - lo} frames, "
            f"expected {expected} (hop {hop})"
        )
    return audio[(s - lo) * hop : (e - lo) * hop]


StageFn = Callable[[np.ndarray], np.ndarray]
"""Run one decoder stage on an input slice `[1, C, n]`, giving `[1, C', n * rate]`."""


@dataclass(frozen=True)
class DecoderStage:
    """A decoder stage to run (`run`) with its shape (`rate`, context: `StageShape`)."""

    run: StageFn
    shape: StageShape


class StagedDecoding:
    """Exact incremental decoding of one latent through a chain of decoder stages.

    Windowed decoding through the whole decoder must feed every window the full receptive
    field (13 latent frames each side for JP-Extra) and recompute all of it at every layer:
    with small windows that is more work than the window itself. Here the decoder runs
    stage by stage (`DecoderGeometry.stages`) and each stage's output is kept: a stage
    continues from where it stopped and recomputes only its own context, read from the
    previous stage's kept output. Each intermediate tensor is clipped at the sentence's
    real edges, so its zero padding there is the whole-sentence decoder's; so the audio of
    frames `[0, e)` asked for in any steps equals whole-sentence decoding (float rounding
    of the kernels aside).

    `audio_until(e)` returns the samples of frames `[previous e, e)`. Kept tensors are
    trimmed to what later calls can still read (about the stage's left context)."""

    def __init__(self, z: np.ndarray, stages: Sequence[DecoderStage]) -> None:
        if z.ndim != 3 or z.shape[0] != 1:
            raise ValueError(f"latent must be [1, C, T], got shape {tuple(z.shape)}")
        if not stages:
            raise ValueError("a staged decoder needs at least one stage")
        self.stages = list(stages)
        self.frames = int(z.shape[2])
        # Input lengths per stage (in that stage's own samples), and what is kept of each.
        self._lengths = [self.frames]
        for st in self.stages[:-1]:
            self._lengths.append(self._lengths[-1] * st.shape.rate)
        self.hop = math.prod(st.shape.rate for st in self.stages)
        self._inputs: list[np.ndarray] = [z] + [z[:, :0, :0]] * (len(self.stages) - 1)
        self._offsets = [0] * len(self.stages)  # global index of each kept input's first sample
        self._known = [self.frames] + [0] * (len(self.stages) - 1)  # input samples known exactly
        self._done = [0] * len(self.stages)  # input samples whose output was produced
        self.frames_done = 0
        self.calls = 0

    def audio_until(self, end: int) -> np.ndarray:
        """Audio samples of frames `[frames_done, end)` (1-D, the decoder's dtype)."""
        if not self.frames_done <= end <= self.frames:
            raise ValueError(
                f"frames [{self.frames_done}, {end}) outside the latent's {self.frames}"
            )
        # Walk back: how far each stage must get so that the last one reaches `end`.
        want = [0] * len(self.stages)
        need = end * self.hop  # output samples of the last stage
        for j in range(len(self.stages) - 1, -1, -1):
            shape = self.stages[j].shape
            want[j] = max(self._done[j], -(-need // shape.rate))
            need = min(self._lengths[j], want[j] + shape.right) if want[j] > self._done[j] else 0
        out = np.zeros(0, np.float32)
        for j, stage in enumerate(self.stages):
            out = self._advance(j, stage, want[j])
        self.frames_done = end
        return out.reshape(-1)

    def _advance(self, j: int, stage: DecoderStage, want: int) -> np.ndarray:
        """Run stage `j` so that its output covers input samples `[done, want)`; hand that
        output to the next stage (or return it, for the last stage)."""
        shape, n = stage.shape, self._lengths[j]
        done = self._done[j]
        if want <= done:
            new = np.zeros((1, 1, 0), np.float32)
        else:
            lo = max(0, done - shape.left)
            hi = min(n, want + shape.right)
            if hi > self._known[j] or lo < self._offsets[j]:
                raise RuntimeError(f"stage {j}: input [{lo}, {hi}) not available")
            x = self._inputs[j]
            y = stage.run(
                np.ascontiguousarray(x[:, :, lo - self._offsets[j] : hi - self._offsets[j]])
            )
            self.calls += 1
            if y.ndim != 3 or y.shape[2] != (hi - lo) * shape.rate:
                raise ValueError(
                    f"decoder stage {j} gave shape {tuple(y.shape)} for {hi - lo} input "
                    f"samples, expected {(hi - lo) * shape.rate} samples (rate {shape.rate})"
                )
            new = y[:, :, (done - lo) * shape.rate : (want - lo) * shape.rate]
            self._done[j] = want
            # Later calls start reading at done - left: drop what lies before.
            keep = max(0, want - shape.left) - self._offsets[j]
            if keep > 0:
                self._inputs[j] = x[:, :, keep:]
                self._offsets[j] += keep
        if j + 1 < len(self.stages) and new.shape[2]:
            kept = self._inputs[j + 1]
            self._inputs[j + 1] = new if kept.shape[2] == 0 else np.concatenate([kept, new], axis=2)
            self._known[j + 1] = self._done[j] * shape.rate
        return new


@runtime_checkable
class StagedSynth(SplitSynth, Protocol):
    """A split synthesizer whose decoder also runs stage by stage, keeping each stage's state
    between windows (`StagedDecoding`), so a window boundary recomputes a few samples per
    stage instead of the whole receptive field."""

    def staged(self, latent: Latent, z: np.ndarray | None = None) -> StagedDecoding:
        """A stage-by-stage decoding of `latent` (of `z` where given)."""
        ...


# --------------------------------------------------------------------- sentence streaming ---


@dataclass(frozen=True)
class StreamingPlans:
    """Window plans for the first sentence of a render call and for the sentences after it.

    Adaptive plans start small (latency) and then size each window from the audio the
    request's listener has in hand (`ListenerView.in_hand`, the request's one listener
    model: `engine.pacing`) and the measured decoding speed (`DecodeSpeed`, shared across
    the sentences of a render call): as large as can be decoded before that audio runs out
    (less repeated context), never smaller than `first`."""

    first: WindowPlan = WindowPlan(first=24, growth=2.0, largest=512, min_tail=16, adaptive=True)
    later: WindowPlan = WindowPlan(first=24, growth=2.0, largest=512, min_tail=16, adaptive=True)

    @classmethod
    def for_first_window(cls, first: int) -> StreamingPlans | None:
        """Default plans with a first decoder window of `first` frames; None for 0 (whole
        sentences only)."""
        if first <= 0:
            return None
        if first == cls.first.first:
            return cls()
        return cls(
            first=WindowPlan(first=first, growth=2.0, largest=512, min_tail=16, adaptive=True)
        )


SAFETY = 0.9
"""Fraction of the audio the listener has in hand that the next window may take to decode."""


@dataclass
class DecodeSpeed:
    """How fast the decoder ran its last window: one per render call, shared by its
    sentences (`WindowedSentence`), so a sentence's first window after the first sentence is
    sized from the speed already measured."""

    per_frame: float | None = None
    """Seconds to decode one frame (context included); None before the first window."""
    last_size: int = 0
    """Frames in the last window."""


class WindowedSentence:
    """One sentence decoded window by window (a `SplitSynth`: `latent`/`decode`/`context`).

    `pieces()` yields `(samples, final)`: float32 audio in [-1, 1], the last one with
    `final=True`. Its ends follow the voice's one policy (`engine.synth.edges.SentenceEdges`
    of `trim_lead`, `trim_trail`, `margin`, `lead_in`) with what is known when a window is
    ready: leading silence is measured in the first window against that window's peak,
    trailing silence in the last window against the sentence's peak; `lead_in` samples of
    silence go before the first piece. Windows are timed on `listener`'s clock and sized
    from what it has in hand (`WindowPlan.adaptive`; None: nobody listens, windows grow by
    the plan), with the decoding speed kept in `speed`. After `pieces()` is exhausted,
    `durations` (frames per phone id, or None) and `trail` / `trail_cut` (trailing silent
    samples measured in the last window / removed) are set.
    """

    def __init__(
        self,
        synth: SplitSynth,
        inputs: SynthInputs,
        params: SynthParams,
        noise: NoiseSource,
        plan: WindowPlan,
        *,
        sample_rate: int,
        trim_lead: bool,
        trim_trail: bool,
        margin: int,
        lead_in: int = 0,
        listener: ListenerView | None = None,
        speed: DecodeSpeed | None = None,
        latent: Latent | None = None,
    ) -> None:
        self.latent = latent
        self.synth, self.inputs, self.params, self.noise = synth, inputs, params, noise
        self.plan = plan
        self.sample_rate = sample_rate
        self.edges = SentenceEdges(trim_lead, trim_trail, margin, lead_in)
        self.listener = listener
        self.speed = speed if speed is not None else DecodeSpeed()
        self.windows: list[tuple[int, int]] = []
        self.durations: np.ndarray | None = None
        self.frames = 0  # latent frames of the sentence (known once `pieces()` started)
        self.done = 0  # frames decoded and handed out so far
        self.trail = 0
        self.trail_cut = 0

    def _next_size(self, previous: int, context: int, frame_s: float) -> int:
        """Frames for the next window (see `WindowPlan.adaptive`)."""
        plan, speed, listener = self.plan, self.speed, self.listener
        if not plan.adaptive or speed.per_frame is None or listener is None:
            return plan.grown(previous) if previous else plan.first
        if speed.per_frame >= frame_s:  # slower than real time: favour throughput
            return plan.grown(previous or speed.last_size or plan.first)
        if speed.per_frame <= 0.0:  # a clock too coarse to see the window's time
            return plan.largest
        budget = int(listener.in_hand() * SAFETY / speed.per_frame) - context
        if previous:
            budget = max(budget, math.ceil(previous * plan.min_growth))
        return max(plan.first, min(plan.largest, budget))

    def pieces(self) -> Iterator[tuple[np.ndarray, bool]]:
        synth = self.synth
        plan, speed = self.plan, self.speed
        now = self.listener.now if self.listener is not None else time.perf_counter
        latent: Latent | None = self.latent
        if latent is None:
            latent = synth.latent(self.inputs, self.params, self.noise)
        self.durations = latent.durations
        n = self.frames = latent.frames
        left, right = synth.context
        hop = synth.hop_length
        sr = self.sample_rate
        frame_s = hop / sr

        def decode(z: np.ndarray) -> np.ndarray:
            return synth.decode(latent, z)

        # A backend that can decode stage by stage recomputes only a few samples per stage
        # at each window boundary instead of the whole receptive field (`StagedDecoding`).
        staged: StagedDecoding | None = (
            synth.staged(latent) if isinstance(synth, StagedSynth) else None
        )
        overlap = 0 if staged is not None else left + right
        peak = 0.0
        start = 0
        size = self._next_size(0, overlap, frame_s)
        while start < n:
            end = plan.end_of(start, size, n)
            t0 = now()
            if staged is not None:
                audio = staged.audio_until(end)
                computed = end - start
            else:
                audio = decode_window(latent.z, decode, (left, right), start, end, hop)
                computed = min(n, end + right) - max(0, start - left)
            speed.per_frame = (now() - t0) / max(1, computed)
            speed.last_size = end - start
            self.windows.append((start, end))
            audio = np.clip(np.asarray(audio, np.float32), -1.0, 1.0)
            peak = max(peak, float(np.abs(audio).max()) if audio.size else 0.0)
            last = end == n
            body = self._ends(audio, peak, first=start == 0, last=last)
            self.done = end
            yield body, last
            start = end
            size = self._next_size(speed.last_size, overlap, frame_s)
        _LOGGER.debug("sentence decoded in windows %s", self.windows)

    def _ends(self, audio: np.ndarray, peak: float, first: bool, last: bool) -> np.ndarray:
        """One window's audio with the sentence's ends applied (`edges`): leading silence
        measured in the first window, trailing silence (kept in `trail` / `trail_cut`) in
        the last, after the leading cut."""
        edges, sr = self.edges, self.sample_rate
        lead_cut = 0
        if first and edges.trim_lead:
            lead_cut = edges.lead_cut(silent_run(audio, sr, peak, from_end=False))
        trail_cut = 0
        if last:
            self.trail = silent_run(audio[lead_cut:], sr, peak, from_end=True)
            trail_cut = self.trail_cut = edges.trail_cut(self.trail)
        return edges.piece(audio, lead_cut, trail_cut, first)
