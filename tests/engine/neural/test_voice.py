"""`NeuralVoice` (engine.neural): options, style vectors, BERT batching, pauses between
sentences, trimming at the ends, seeds, and per-speaker locking through `Speaker`."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.neural.loader import load_neural_voice
from engine.neural.voice import (
    MIN_PAUSE_S,
    NeuralVoice,
    VoiceOptionError,
    boundary_frames,
    silent_edges,
    style_vector,
)
from engine.voice_backend import SynthesisOptions
from tests.helpers.voices import ONE_THREAD, SMALL, FakeBert, shared_small_root

SR = 44100
TEXT = ["今日はいい天気ですね。", "散歩に行きましょう！", "さようなら。"]


@pytest.fixture(scope="module")
def root() -> Path:
    torch.set_num_threads(1)
    return shared_small_root()


@pytest.fixture()
def voice(root: Path) -> NeuralVoice:
    return load_neural_voice("small", root, bert=FakeBert(), options=ONE_THREAD)


def test_style_vector_formula() -> None:
    vecs = np.load(SMALL / "style_vectors.npy")
    for idx, weight in ((0, 1.0), (1, 2.0), (2, 0.7)):
        got = style_vector(vecs, idx, weight)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, vecs[0] + (vecs[idx] - vecs[0]) * weight, rtol=1e-6)
    # The reference cases were made with this formula.
    case = np.load(SMALL / "cases" / "case_01.npz")
    np.testing.assert_array_equal(
        style_vector(vecs, int(case["style_id"]), float(case["style_weight"])), case["style_vec"]
    )


def test_silent_edges() -> None:
    sr = 1000
    audio = np.zeros(1000, np.float32)
    audio[200:700] = 0.5
    audio[705] = 0.005  # below 2 % of the peak: still silence
    assert silent_edges(audio, sr) == (200, 300)
    assert silent_edges(np.zeros(50, np.float32), sr) == (50, 50)
    assert silent_edges(np.zeros(0, np.float32), sr) == (0, 0)


def test_boundary_frames() -> None:
    phones = ["_", "k", "a", "?", "!", "_"]
    # blank-interspersed: ids 0.._ 1:_ 2:b 3:k 4:b 5:a 6:b 7:? 8:b 9:! 10:b 11:_ 12:b
    durations = np.arange(13)
    # the run "?!" sits at ids 7 and 9; blanks 6 and 10 around it -> 6+7+8+9+10
    assert boundary_frames(phones, durations) == 40
    assert boundary_frames(["_", "k", "a", "_"], np.ones(9, int)) == 0


def test_option_errors(voice: NeuralVoice) -> None:
    def render(**kw):
        return list(voice.render(["こんにちは。"], SynthesisOptions(**kw)))

    with pytest.raises(VoiceOptionError, match="no style 'Angry'.*Neutral, Happy, Sad"):
        render(style="Angry")
    with pytest.raises(VoiceOptionError, match="pitch_scale must be a positive"):
        render(pitch_scale=0.0)  # any positive factor is applied (WORLD, test_pitch_voice)
    with pytest.raises(VoiceOptionError, match="speaker_id 5 out of range"):
        render(speaker_id=5)
    with pytest.raises(VoiceOptionError, match="speed must be positive"):
        render(speed=0.0)


def _by_sentence(pieces) -> list:
    """Join the windows of each sentence (sub-sentence streaming) into one piece."""
    out: list = []
    for p in pieces:
        if out and out[-1].sentence == p.sentence and not out[-1].final:
            out[-1] = type(p)(np.concatenate([out[-1].samples, p.samples]), p.sentence, p.final)
        else:
            out.append(p)
    return out


def test_render_pieces_pauses_and_trim(voice: NeuralVoice) -> None:
    bert = voice.bert
    pieces = _by_sentence(voice.render(TEXT, SynthesisOptions(seed=1)))
    assert [p.sentence for p in pieces] == [0, 1, 2] and all(p.final for p in pieces)
    # BERT: the first sentence alone (early audio), the rest in one batch.
    assert [len(c) for c in bert.calls] == [1, 2]
    for p in pieces:
        assert p.samples.dtype == np.float32 and p.samples.size > 0
        assert np.abs(p.samples).max() <= 1.0
    whole = np.concatenate([p.samples for p in pieces])
    lead, trail = silent_edges(whole, SR)
    assert lead <= 0.011 * SR and trail <= 0.011 * SR  # trimmed to the 10 ms margin
    # The later sentences start with the predicted pause (at least 80 ms of quiet).
    for p in pieces[1:]:
        lead, _ = silent_edges(p.samples, SR)
        assert lead >= int(0.07 * SR)


def test_fixed_sentence_silence(voice: NeuralVoice) -> None:
    pieces = _by_sentence(voice.render(TEXT[:2], SynthesisOptions(seed=1, sentence_silence=0.5)))
    gap = silent_edges(pieces[1].samples, SR)[0] + silent_edges(pieces[0].samples, SR)[1]
    assert 0.5 * SR <= gap <= 0.5 * SR + 0.03 * SR
    longer = _by_sentence(voice.render(TEXT[:2], SynthesisOptions(seed=1, sentence_silence=1.0)))
    assert len(longer[1].samples) - len(pieces[1].samples) == int(0.5 * SR)


def test_predicted_pause_grows_with_slower_speech(voice: NeuralVoice) -> None:
    def gap(speed: float) -> int:
        pieces = _by_sentence(
            voice.render(TEXT[:2], SynthesisOptions(seed=3, speed=speed, noise=0, noise_w=0))
        )
        return silent_edges(pieces[0].samples, SR)[1] + silent_edges(pieces[1].samples, SR)[0]

    assert gap(0.5) > gap(2.0) >= int(MIN_PAUSE_S * SR) - 0.011 * SR


def test_seed_reproducible_on_each_backend(root: Path) -> None:
    for backend in ("onnx", "torch"):
        voice = load_neural_voice("small", root, bert=FakeBert(), backend=backend)

        def run(seed, voice=voice):
            # Streaming sizes decoder windows by measured speed, so where the pieces split
            # depends on timing; the audio joined does not (up to float rounding of the
            # kernels on differently cut windows, see test_windowed_decoder).
            pieces = voice.render(TEXT, SynthesisOptions(seed=seed, sdp_ratio=0.8))
            return np.concatenate([p.samples for p in pieces])

        a, b, c = run(11), run(11), run(12)
        assert a.shape == b.shape and np.abs(a - b).max() <= 1e-5, backend
        assert a.shape != c.shape or np.abs(a - c).max() > 1e-2, backend


def test_sentence_without_speech_gives_empty_piece(voice: NeuralVoice) -> None:
    pieces = list(voice.render(["……", "はい。"], SynthesisOptions(seed=1)))
    assert pieces[0].samples.size == 0 and pieces[1].samples.size > 0
    assert silent_edges(pieces[1].samples, SR)[0] <= 0.011 * SR  # first audible: trimmed


def test_per_speaker_lock_under_concurrent_requests(root: Path) -> None:
    """Same speaker: never two syntheses at once. Different speakers: run in parallel."""
    from engine.speaker import Speaker

    active: dict[str, int] = {"a": 0, "b": 0}
    peak = {"a": 0, "b": 0}
    started_b = threading.Event()
    overlap_seen = threading.Event()
    guard = threading.Lock()

    def instrument(voice: NeuralVoice, key: str) -> None:
        real = voice.synth.synthesize

        def wrapped(*args, **kwargs):
            with guard:
                active[key] += 1
                peak[key] = max(peak[key], active[key])
                if active["a"] and active["b"]:
                    overlap_seen.set()
            if key == "b":
                started_b.set()
            else:
                started_b.wait(timeout=2.0)  # speaker a waits for b: only possible in parallel
            try:
                time.sleep(0.02)
                return real(*args, **kwargs)
            finally:
                with guard:
                    active[key] -= 1

        voice.synth.synthesize = wrapped  # type: ignore[method-assign]

    va = load_neural_voice("small", root, bert=FakeBert(), options=ONE_THREAD)
    vb = load_neural_voice("small", root, bert=FakeBert(), options=ONE_THREAD)
    instrument(va, "a")
    instrument(vb, "b")
    sa, sb = Speaker(va, rewrite=False), Speaker(vb, rewrite=False)
    results: list = []
    errors: list = []

    def job(speaker: Speaker) -> None:
        try:
            results.append(speaker.generate("こんにちは。元気ですか？", seed=5))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=job, args=(s,)) for s in (sa, sa, sa, sb, sb)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert len(results) == 5
    assert peak == {"a": 1, "b": 1}
    assert overlap_seen.is_set()
    # Same text and seed on the same voice: identical audio every time.
    a_results = [r for r in results if r.data.size]
    assert all(np.array_equal(a_results[0].data, r.data) for r in a_results)
    assert not sa.lock.locked() and not sb.lock.locked()


@pytest.mark.slow
def test_torch_compile_stages_trace_and_match() -> None:
    """The stages `compile=True` wraps trace under torch.compile with dynamic shapes and give
    the eager result (CPU, the `eager` backend: tracing only; CUDA uses inductor)."""
    from engine.synth.common import NoiseSource, SynthInputs, SynthParams
    from engine.synth.torch_backend import TorchSynthesizer
    from engine.voice_config import load_config

    cfg = load_config(SMALL / "config.json")
    ckpt = SMALL / "model.safetensors"
    eager = TorchSynthesizer(cfg, ckpt)
    compiled = TorchSynthesizer(cfg, ckpt, compile=True, compile_backend="eager")
    assert compiled.compiled
    case = np.load(SMALL / "cases" / "case_01.npz")
    params = SynthParams(noise_scale=0.6, length_scale=1.0, noise_scale_w=0.8, sdp_ratio=0.3)
    for t in (len(case["x"]), 41):  # a second length must not need a new trace to be right
        inputs = SynthInputs(
            case["x"][:t],
            case["tones"][:t],
            case["lang_ids"][:t],
            case["bert"][:, :t],
            case["style_vec"],
            1,
        )
        a = compiled.synthesize(inputs, params, NoiseSource(1))
        b = eager.synthesize(inputs, params, NoiseSource(1))
        np.testing.assert_array_equal(a.durations, b.durations)
        assert np.abs(a.audio - b.audio).max() <= 1e-4
