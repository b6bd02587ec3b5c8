"""What both synthesizer backends (ONNX Runtime, PyTorch) share: inputs, outputs, noise.

Noise is drawn in NumPy from the request's seed, identically for both backends, so a seed
gives the same samples run after run on each backend (and, up to float rounding, the same
audio on both). Two independent streams are used:

- stream 0: the stochastic duration predictor's noise, 2·T values → [1, 2, T];
- stream 1: the prior's noise, C·F values → [1, C, F] (F = predicted frames).

A stream's first n values do not depend on how many are drawn, so drawing more than needed
(ONNX Runtime does not know F in advance) changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, cast, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class SynthInputs:
    """One sentence's model inputs (blank-interspersed ids)."""

    phone_ids: np.ndarray  # int64 [T]
    tone_ids: np.ndarray  # int64 [T]
    lang_ids: np.ndarray  # int64 [T]
    bert: np.ndarray  # float32 [bert_channels, T]
    style_vec: np.ndarray  # float32 [256]
    speaker_id: int = 0

    def __post_init__(self) -> None:
        t = len(self.phone_ids)
        if not (len(self.tone_ids) == len(self.lang_ids) == t):
            raise ValueError("phone, tone and language ids differ in length")
        if self.bert.ndim != 2 or self.bert.shape[1] != t:
            raise ValueError(f"bert features must be [channels, {t}], got {list(self.bert.shape)}")
        if t == 0:
            raise ValueError("empty phone sequence")

    @property
    def length(self) -> int:
        return len(self.phone_ids)


@dataclass(frozen=True)
class SynthParams:
    """Generation parameters in the model's terms."""

    noise_scale: float = 0.6
    length_scale: float = 1.0
    noise_scale_w: float = 0.8
    sdp_ratio: float = 0.2


@dataclass
class SynthOutput:
    audio: np.ndarray  # float32 [samples]
    durations: np.ndarray | None  # int64 [T] frames per phone id (None if the graph lacks it)


class NoiseSource:
    """Deterministic (seeded) or fresh standard-normal noise streams for one request."""

    def __init__(self, seed: int | None, sentence: int = 0) -> None:
        if seed is None:
            seed = int(cast(int, np.random.SeedSequence().entropy) % (2**63))
        if seed < 0:
            raise ValueError(f"seed must be non-negative, got {seed}")
        self.seed = int(seed)
        self.sentence = int(sentence)

    def for_sentence(self, index: int) -> NoiseSource:
        """The noise of sentence `index` of the same request (independent streams)."""
        return NoiseSource(self.seed, index)

    def stream(self, index: int, count: int) -> np.ndarray:
        """The first `count` values of stream `index`, float32."""
        rng = np.random.default_rng([self.seed, self.sentence, index])
        return rng.standard_normal(count, dtype=np.float32)

    def sdp(self, length: int) -> np.ndarray:
        return self.stream(0, 2 * length).reshape(1, 2, length)

    def prior(self, channels: int, frames: int) -> np.ndarray:
        return self.stream(1, channels * frames).reshape(1, channels, frames)


class SynthBackend(Protocol):
    """A loaded synthesizer (one voice)."""

    kind: str
    hop_length: int
    sample_rate: int

    @property
    def precision(self) -> str:
        """Its arithmetic: "fp32", "int8" (or, on OpenVINO, "bf16" / "fp16")."""
        ...

    @property
    def runtime(self) -> str:
        """What runs it: "onnxruntime", "openvino" or "pytorch"."""
        ...

    def synthesize(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> SynthOutput: ...

    def predict_durations(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> np.ndarray | None: ...

    def release_memory(self) -> None:
        """Give back memory held between requests (called when a request's audio is done);
        a no-op for backends that hold none."""
        ...


@dataclass
class Latent:
    """One sentence after the front half: latent `z` `[1, C, frames]`, conditioning `g`
    `[1, gin, 1]` (or None), durations per phone id (or None)."""

    z: np.ndarray
    g: np.ndarray | None
    durations: np.ndarray | None

    @property
    def frames(self) -> int:
        return int(self.z.shape[-1])


@runtime_checkable
class SplitSynth(SynthBackend, Protocol):
    """A synthesizer cut at the decoder: the front half (`latent`) and the decoder (`decode`)
    run apart, so that the decoder can run in windows while audio streams (ONNX Runtime's
    split graphs, PyTorch, and their pinned wrappers)."""

    context: tuple[int, int]
    """Latent frames the decoder reads left and right of a window (its receptive field)."""

    def latent(self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource) -> Latent:
        """The sentence's latent: everything but the decoder."""
        ...

    def decode(self, latent: Latent, z: np.ndarray) -> np.ndarray:
        """Audio `float32 [frames·hop]` of the latent slice `z` `[1, C, frames]`."""
        ...
