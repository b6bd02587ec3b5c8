"""`Speaker` on text given as accent phrases (`engine.text.from_phrases.PhrasedText`): the
synthesizer gets the phrases' tones, not the text re-read, and an accent moved by a client
changes its tone input exactly at the moved morae."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from engine import Speaker
from engine.neural.loader import load_neural_voice
from engine.synth.common import NoiseSource, SynthInputs, SynthOutput, SynthParams
from engine.text.accents import accent_phrases
from engine.text.from_phrases import PhrasedText, analysis_of_phrases
from tests.helpers.voices import ONE_THREAD, FakeBert, shared_small_root


class Recording:
    """The voice's synthesizer, recording what it is given (whole sentences only)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.hop_length = inner.hop_length
        self.sample_rate = inner.sample_rate
        self.inputs: list[SynthInputs] = []

    @property
    def precision(self) -> str:
        return str(self.inner.precision)

    @property
    def runtime(self) -> str:
        return str(self.inner.runtime)

    def synthesize(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> SynthOutput:
        self.inputs.append(inputs)
        return self.inner.synthesize(inputs, params, noise)

    def predict_durations(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> np.ndarray | None:
        return self.inner.predict_durations(inputs, params, noise)

    def release_memory(self) -> None:
        self.inner.release_memory()


@pytest.fixture(scope="module")
def root() -> Path:
    torch.set_num_threads(1)
    return shared_small_root()


def test_tone_input_differs_exactly_where_the_accent_moved(root: Path) -> None:
    voice = load_neural_voice("small", root, bert=FakeBert(), options=ONE_THREAD)
    recording = Recording(voice.synth)
    voice.synth = recording  # type: ignore[assignment]
    speaker = Speaker(voice)
    phrases = accent_phrases("こんにちは、元気ですか？")
    moved = [phrases[0], dataclasses.replace(phrases[1], accent=3)]  # ゲ|ンキ → ゲン|キ

    speaker.generate(PhrasedText(phrases), seed=1)
    speaker.generate(PhrasedText(moved), seed=1)
    before, after = recording.inputs
    np.testing.assert_array_equal(before.phone_ids, after.phone_ids)
    changed = np.flatnonzero(before.tone_ids != after.tone_ids).tolist()
    plain = analysis_of_phrases(phrases)
    g = plain.phones.index("g")  # ゲ ン キ: phones g e N k i
    assert changed == [2 * i + 1 for i in range(g, g + 5)]  # blanks between the phones
    expected = plain.with_blanks().tone_ids
    np.testing.assert_array_equal(before.tone_ids, expected)  # the phrases, not the text
