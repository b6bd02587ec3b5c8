"""The one voice builder (`engine.neural.build`): `BuildSettings` passed unchanged, a model
shared by its speakers in a `ModelPool`, and the pool as the background's target, where
each voice switches itself (`NeuralVoice.use`) and keeps speaking as its own speaker."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.int8.plan import PrecisionChoice
from engine.neural.build import BuildSettings, ModelPool, build_voice, split_synthesizer
from engine.neural.loader import find_native
from engine.options import EngineOptions, Precision
from engine.voice_backend import SynthesisOptions
from tests.helpers.voices import FakeBert, shared_small_root

TEXT = ["リビングの照明をつけました。"]
FP32 = EngineOptions(threads=1, precision=Precision.FP32)


@pytest.fixture(scope="module")
def small_root() -> Path:
    torch.set_num_threads(1)
    return shared_small_root()


def _audio(voice: object, seed: int = 3) -> np.ndarray:
    render = voice.render  # type: ignore[attr-defined]
    pieces = list(render(TEXT, SynthesisOptions(seed=seed)))
    return np.concatenate([p.samples for p in pieces])


def test_a_bad_backend_is_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match="backend must be 'onnx' or 'torch', got 'tpu'"):
        BuildSettings(backend="tpu")
    assert BuildSettings(device="cuda:1").cuda and not BuildSettings().cuda


def test_speakers_of_one_model_switch_together_each_as_its_own_speaker(
    small_root: Path, tmp_path: Path
) -> None:
    files = find_native("small", small_root, "cpu", tmp_path)
    settings = BuildSettings(options=FP32, cache_dir=tmp_path)
    bert = FakeBert(1024)
    pool = ModelPool()
    a = build_voice(
        dataclasses.replace(files, name="a", model_key="m", speaker_id=0), bert, settings, pool
    )
    b = build_voice(
        dataclasses.replace(files, name="b", model_key="m", speaker_id=1), bert, settings, pool
    )
    assert (a.first, b.first, a.key, b.key) == (True, False, "m", "m")
    assert pool.voices("m") == [a.voice, b.voice]
    before_a, before_b = _audio(a.voice), _audio(b.voice)
    assert not np.array_equal(before_a, before_b)  # two speakers of one model

    onnx = files.onnx
    assert onnx is not None
    fresh = split_synthesizer(onnx, FP32, tmp_path)
    choice = PrecisionChoice("fp32", "switched by the test")
    pool.target("m").use(fresh, choice)
    for built, speaker in ((a, 0), (b, 1)):
        voice = built.voice
        assert voice.speaker_id == speaker
        assert voice.precision_choice is choice
        assert voice.synth is not fresh and voice.synth.speaker_id == speaker  # type: ignore[attr-defined]
    # The same weights through the new synthesizer: each voice still speaks as its speaker.
    assert np.array_equal(_audio(a.voice), before_a)
    assert np.array_equal(_audio(b.voice), before_b)

    kept = PrecisionChoice("fp32", "measured: fp32 kept")
    pool.target("m").keep(kept)
    assert a.voice.precision_choice is kept and b.voice.precision_choice is kept
    assert a.voice.precision_reason == "measured: fp32 kept"

    # A model dropped meanwhile (both voices removed) is left alone by a late switch.
    assert pool.discard([a.voice, b.voice]) == ["m"]
    pool.target("m").use(split_synthesizer(onnx, FP32, tmp_path), choice)
    assert "m" not in pool and a.voice.precision_choice is kept
