"""A synthesizer of a multi-speaker model that always speaks as one speaker.

Each speaker of a multi-speaker file (an AivisHub model) is its own voice; all of them
share one set of ONNX Runtime sessions (`engine.neural.build`), each through a
`PinnedSpeaker` that sets the speaker id whatever a request carries.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .common import (
    Latent,
    NoiseSource,
    SplitSynth,
    SynthBackend,
    SynthInputs,
    SynthOutput,
    SynthParams,
)

__all__ = ["PinnedSpeaker", "PinnedSplitSpeaker", "pin"]


class PinnedSpeaker:
    """`inner`, always as speaker `speaker_id`."""

    def __init__(self, inner: SynthBackend, speaker_id: int) -> None:
        self._inner = inner
        self.speaker_id = speaker_id
        self.kind = inner.kind
        self.hop_length = inner.hop_length
        self.sample_rate = inner.sample_rate

    @property
    def inner(self) -> SynthBackend:
        return self._inner

    @property
    def precision(self) -> str:
        return self._inner.precision

    @property
    def runtime(self) -> str:
        return self._inner.runtime

    def __getattr__(self, name: str) -> Any:
        if name == "_inner":  # not set yet (copy/pickle)
            raise AttributeError(name)
        return getattr(self._inner, name)

    def _pin(self, inputs: SynthInputs) -> SynthInputs:
        return dataclasses.replace(inputs, speaker_id=self.speaker_id)

    def synthesize(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> SynthOutput:
        return self._inner.synthesize(self._pin(inputs), params, noise)

    def predict_durations(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> np.ndarray | None:
        return self._inner.predict_durations(self._pin(inputs), params, noise)

    def release_memory(self) -> None:
        self._inner.release_memory()


class PinnedSplitSpeaker(PinnedSpeaker):
    """`PinnedSpeaker` of a synthesizer cut at the decoder (windowed streaming)."""

    def __init__(self, inner: SplitSynth, speaker_id: int) -> None:
        super().__init__(inner, speaker_id)
        self._split = inner
        self.context = inner.context

    def latent(self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource) -> Latent:
        return self._split.latent(self._pin(inputs), params, noise)

    def decode(self, latent: Latent, z: np.ndarray) -> np.ndarray:
        return self._split.decode(latent, z)

    def latent_and_feeds(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> tuple[Latent, dict[str, np.ndarray]]:
        split: Any = self._inner
        result: tuple[Latent, dict[str, np.ndarray]] = split.latent_and_feeds(
            self._pin(inputs), params, noise
        )
        return result


def pin(synth: SynthBackend, speaker_id: int | None) -> SynthBackend:
    """`synth` pinned to `speaker_id` (itself when None)."""
    if speaker_id is None:
        return synth
    if isinstance(synth, SplitSynth):
        return PinnedSplitSpeaker(synth, speaker_id)
    return PinnedSpeaker(synth, speaker_id)
