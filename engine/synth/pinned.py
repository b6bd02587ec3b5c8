"""A synthesizer of a multi-speaker model that always speaks as one speaker.

Each speaker of a multi-speaker file (an AivisHub model) is its own voice; all of them
share one set of ONNX Runtime sessions (`engine.neural.build`), each through a
`PinnedSpeaker` that sets the speaker id whatever a request carries.
"""

from __future__ import annotations

import dataclasses

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
from .windowed import StagedDecoding, StagedSynth

__all__ = ["PinnedSpeaker", "PinnedSplitSpeaker", "PinnedStagedSpeaker", "pin"]


class PinnedSpeaker:
    """`inner`, always as speaker `speaker_id`: what `SynthBackend` declares, each member
    passed on to `inner` (the speaker id set on the way in). Anything else of the inner
    synthesizer is reached through `inner`."""

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
    """`PinnedSpeaker` of a synthesizer cut at the decoder (windowed streaming): also what
    `SplitSynth` declares."""

    def __init__(self, inner: SplitSynth, speaker_id: int) -> None:
        super().__init__(inner, speaker_id)
        self._split = inner
        self.context = inner.context

    def latent(self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource) -> Latent:
        return self._split.latent(self._pin(inputs), params, noise)

    def decode(self, latent: Latent, z: np.ndarray) -> np.ndarray:
        return self._split.decode(latent, z)


class PinnedStagedSpeaker(PinnedSplitSpeaker):
    """`PinnedSplitSpeaker` of a synthesizer whose decoder also runs stage by stage: also
    what `StagedSynth` declares (a latent already carries its speaker)."""

    def __init__(self, inner: StagedSynth, speaker_id: int) -> None:
        super().__init__(inner, speaker_id)
        self._staged = inner

    def staged(self, latent: Latent, z: np.ndarray | None = None) -> StagedDecoding:
        return self._staged.staged(latent, z)


def pin(synth: SynthBackend, speaker_id: int | None) -> SynthBackend:
    """`synth` pinned to `speaker_id` (itself when None)."""
    if speaker_id is None:
        return synth
    if isinstance(synth, StagedSynth):
        return PinnedStagedSpeaker(synth, speaker_id)
    if isinstance(synth, SplitSynth):
        return PinnedSplitSpeaker(synth, speaker_id)
    return PinnedSpeaker(synth, speaker_id)
