"""Pitch and intonation on a neural voice through `Speaker` (issue 55): WORLD runs on each
sentence when asked (`engine.neural.world`), never otherwise.

The tests' small voice has random weights: what it says is mostly unvoiced noise, where
WORLD finds too few voiced frames to measure a pitch by. So the F0 figures are taken with
its synthesizer's audio replaced by a voiced tone of the same length (`ToneSynth`: the
network still runs and sets every length and pause), through the whole real path: the
voice, its render call, the sentence edges, `Speaker` and its output stage. The small voice
itself shows that the default path is the one of before, bit for bit, and that a pitched
request keeps every length."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from engine import AudioResult, Speaker
from engine.neural.loader import load_neural_voice
from engine.neural.voice import NeuralVoice, VoiceOptionError
from engine.synth.common import NoiseSource, SynthBackend, SynthInputs, SynthOutput, SynthParams
from tests.engine.neural.test_world import f0_of
from tests.helpers.voices import ONE_THREAD, FakeBert, shared_small_root

pytest.importorskip("pyworld")

TEXT = "今日はいい天気ですね。散歩に行きましょう！"


class ToneSynth:
    """A synthesizer whose audio is a voiced tone (F0 gliding 170 → 230 Hz with a waver) of
    the length the wrapped one makes, with its durations: only the sound is replaced."""

    def __init__(self, inner: SynthBackend) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.hop_length = inner.hop_length
        self.sample_rate = inner.sample_rate

    @property
    def precision(self) -> str:
        return self.inner.precision

    @property
    def runtime(self) -> str:
        return self.inner.runtime

    def synthesize(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> SynthOutput:
        out = self.inner.synthesize(inputs, params, noise)
        n, sr = out.audio.size, self.sample_rate
        t = np.arange(n) / sr
        f0 = 170.0 + 60.0 * t / max(t[-1], 1e-3) + 12.0 * np.sin(2 * np.pi * 4.0 * t)
        phase = 2 * np.pi * np.cumsum(f0) / sr
        tone = sum(np.sin(k * phase) / k for k in range(1, 16))
        return SynthOutput((0.4 * tone / np.abs(tone).max()).astype(np.float32), out.durations)

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


@pytest.fixture(scope="module")
def voice(root: Path) -> NeuralVoice:
    return load_neural_voice("small", root, bert=FakeBert(), options=ONE_THREAD)


@pytest.fixture(scope="module")
def toned(root: Path) -> Speaker:
    voice = load_neural_voice("small", root, bert=FakeBert(), options=ONE_THREAD)
    voice.synth = ToneSynth(voice.synth)
    return Speaker(voice, rewrite=False, playback_guard=False)


def voiced_pair(a: AudioResult, b: AudioResult) -> tuple[np.ndarray, np.ndarray]:
    """F0 of two results on the frames voiced in both."""
    fa = f0_of(a.data.astype(np.float64) / 32768.0, a.sr)
    fb = f0_of(b.data.astype(np.float64) / 32768.0, b.sr)
    n = min(fa.size, fb.size)
    both = (fa[:n] > 0) & (fb[:n] > 0)
    assert both.sum() > 100, "the tone must measure as voiced"
    return fa[:n][both], fb[:n][both]


def test_pitch_scale_raises_the_f0_of_a_sentence_by_its_factor(toned: Speaker) -> None:
    plain = toned.generate(TEXT, seed=3)
    higher = toned.generate(TEXT, seed=3, pitch_scale=1.1)
    assert higher.data.size == plain.data.size  # every length and pause as before
    before, after = voiced_pair(plain, higher)
    assert after.mean() / before.mean() == pytest.approx(1.1, abs=0.02)


def test_intonation_scale_halves_the_spread_around_the_mean(toned: Speaker) -> None:
    plain = toned.generate(TEXT, seed=3)
    flatter = toned.generate(TEXT, seed=3, intonation_scale=0.5)
    before, after = voiced_pair(plain, flatter)
    # each sentence's frames around that sentence's mean: its first (the longer one)
    assert after.std() / before.std() == pytest.approx(0.5, abs=0.08)


def test_a_pitched_stream_comes_sentence_by_sentence_as_generate_makes_it(
    toned: Speaker,
) -> None:
    chunks = list(toned.stream(TEXT, seed=3, pitch_scale=1.1))
    assert len(chunks) >= 2  # per sentence: streaming still works
    whole = toned.generate(TEXT, seed=3, pitch_scale=1.1)
    assert np.array_equal(AudioResult.concat(chunks).data, whole.data)


async def test_the_async_paths_take_the_factors_too(toned: Speaker) -> None:
    whole = toned.generate(TEXT, seed=3, pitch_scale=0.9)
    assert np.array_equal((await toned.agenerate(TEXT, seed=3, pitch_scale=0.9)).data, whole.data)
    pieces = [c async for c in toned.astream(TEXT, seed=3, pitch_scale=0.9, guard=False)]
    assert np.array_equal(AudioResult.concat(pieces).data, whole.data)


def test_factors_of_one_leave_the_default_path_bit_for_bit(voice: NeuralVoice) -> None:
    speaker = Speaker(voice, rewrite=False, playback_guard=False)
    ones = {"pitch_scale": 1.0, "intonation_scale": 1.0}
    assert np.array_equal(
        speaker.generate(TEXT, seed=5).data, speaker.generate(TEXT, seed=5, **ones).data
    )
    # a stream still decodes in windows (more pieces than sentences), sample for sample
    plain = list(voice.render(["今日はいい天気ですね。"], speaker.options(seed=5)))
    same = list(voice.render(["今日はいい天気ですね。"], speaker.options(seed=5, **ones)))
    assert len(plain) > 1 and len(same) == len(plain)
    for a, b in zip(plain, same, strict=True):
        assert np.array_equal(a.samples, b.samples)


def test_the_small_voice_pitched_keeps_its_lengths_and_changes(voice: NeuralVoice) -> None:
    speaker = Speaker(voice, rewrite=False, playback_guard=False)
    plain = speaker.generate(TEXT, seed=5)
    pitched = speaker.generate(TEXT, seed=5, pitch_scale=1.1)
    assert pitched.data.size == plain.data.size
    assert not np.array_equal(pitched.data, plain.data)


@pytest.mark.parametrize(
    ("options", "field"),
    [({"pitch_scale": 0.0}, "pitch_scale"), ({"intonation_scale": -1.0}, "intonation_scale")],
)
def test_unusable_factors_are_refused_naming_the_field(
    voice: NeuralVoice, options: dict[str, float], field: str
) -> None:
    speaker = Speaker(voice, rewrite=False)
    with pytest.raises(VoiceOptionError, match=field):
        speaker.generate("こんにちは。", **options)  # type: ignore[arg-type]
