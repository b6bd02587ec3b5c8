"""No clipping anywhere (issue 34): `engine.output.limiter`'s whole-signal limiter with its
loudness-keeping make-up gain (the embedded voice's phrases), the default output stage's
full-scale limiter (any voice), and a sample of the readings phrase set spoken by the embedded
voice and a neural test voice whose decoder saturates: 0 samples at ±32767/−32768, loudness
within ±1 LU of the un-limited output (the same `Speaker`, limiting off: what int16 conversion
made of it before)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import engine.output.stage as stage_module
from engine import Speaker
from engine.output import Limiter, integrated_loudness
from engine.output.limiter import (
    FULL_SCALE_CEILING,
    FULL_SCALE_CEILING_DB,
    LOOKAHEAD_S,
    LOUDNESS_TOLERANCE_LU,
    PieceLimiter,
    limit_keeping_loudness,
    peak_gain,
)
from tests.helpers.readings import load_phrases

EVERY = 12
"""The corpus sample: every 12th phrase of tests/data/readings_ha.tsv (20 of 235)."""

NEURAL_PHRASES = 4
"""Phrases of that sample spoken by the neural test voice (PyTorch on CPU is the slow part)."""


def _full_scale(pcm: np.ndarray) -> int:
    """Samples at full scale: +32767 or −32767/−32768 (a clipped or saturated sample)."""
    return int(np.count_nonzero(np.abs(pcm.astype(np.int32)) >= 32767))


def _lufs(pcm: np.ndarray, rate: int) -> float:
    return integrated_loudness(pcm.astype(np.float64) / 32767.0, rate)


def _speech_like(rate: int, seconds: float, peak: float, seed: int = 3) -> np.ndarray:
    """Voiced bursts (harmonics + noise) with sparse loud peaks reaching `peak`."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(rate * seconds)) / rate
    tone = sum(np.sin(2 * np.pi * f * t) / k for k, f in enumerate((150, 300, 450, 2400), 1))
    x = (tone + 0.1 * rng.standard_normal(t.size)) * (np.sin(2 * np.pi * 2 * t) > 0)
    x = 0.5 * x / np.abs(x).max()
    spikes = rng.choice(t.size, 40, replace=False)
    x[spikes] = np.sign(x[spikes] + 1e-9) * peak
    return x.astype(np.float32)


@pytest.fixture
def unlimited() -> Iterator[None]:
    """The default stage's limiter off (its ceiling out of reach): int16 conversion clips, as
    before issue 34."""
    saved = stage_module.FULL_SCALE_CEILING
    stage_module.FULL_SCALE_CEILING = 1000.0
    try:
        yield
    finally:
        stage_module.FULL_SCALE_CEILING = saved


# --- the limiter alone ---------------------------------------------------------------------


def test_whole_signal_gain_is_the_streaming_limiters() -> None:
    x = _speech_like(48000, 1.0, 2.5)
    limiter = Limiter(48000, ceiling_db=FULL_SCALE_CEILING_DB)
    streamed = np.concatenate([limiter.process(x[:20000]), limiter.process(x[20000:])])
    streamed = np.concatenate([streamed, limiter.flush()])
    whole = x * peak_gain(x, 48000)
    assert limiter.min_gain < 0.5
    assert np.abs(streamed - whole).max() < 1e-6
    assert np.abs(whole).max() <= FULL_SCALE_CEILING


def test_pieces_are_limited_as_they_come_without_delay() -> None:
    """`PieceLimiter`: each piece comes back at once, as long; never past the ceiling; a piece
    with nothing to limit in reach is the same samples; the gain equals the whole signal's
    except just before a cut (its look-ahead cannot see past a piece)."""
    x = _speech_like(48000, 1.0, 1.5)
    quiet = np.zeros(4800, np.float32)
    quiet[100] = 0.5
    cuts = [0, 7000, 7001, 21000, 30000, 48000]
    limiter = PieceLimiter(48000)
    out = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        piece = limiter.process(x[a:b])
        assert piece.size == b - a
        out.append(piece)
    released = limiter.process(quiet)  # the hold and release of the last peaks reach into it
    after = limiter.process(quiet)
    joined = np.concatenate(out)
    assert limiter.min_gain < 0.7 and np.abs(joined).max() <= FULL_SCALE_CEILING
    assert np.abs(released).max() <= 0.5 and np.array_equal(after, quiet)  # nothing in reach
    whole = (x * peak_gain(x, 48000)).astype(np.float32)
    look = int(LOOKAHEAD_S * 48000)
    near = np.zeros(x.size, bool)
    for cut in cuts[1:-1]:
        near[max(0, cut - look) : cut + look] = True
    assert np.abs(joined - whole)[~near].max() < 1e-6
    fresh = PieceLimiter(48000)
    assert np.array_equal(fresh.process(quiet), quiet) and fresh.min_gain == 1.0


def test_within_full_scale_is_left_as_it_is_and_overs_are_limited_at_the_same_loudness() -> None:
    quiet = _speech_like(48000, 1.0, 0.9)
    assert np.array_equal(limit_keeping_loudness(quiet, 48000), quiet)
    loud = _speech_like(48000, 1.5, 3.0)
    out = limit_keeping_loudness(loud, 48000)
    assert out.dtype == np.float32 and out.size == loud.size
    assert np.abs(out).max() <= FULL_SCALE_CEILING
    clipped = np.clip(loud, -1.0, 1.0)
    limited_only = loud * peak_gain(loud, 48000)
    before = integrated_loudness(clipped, 48000)
    # the make-up gain is what keeps the level: limiting alone would lose some of it
    assert integrated_loudness(limited_only, 48000) < before - 0.02
    assert abs(integrated_loudness(out, 48000) - before) <= 2 * LOUDNESS_TOLERANCE_LU


# --- the readings phrase set ---------------------------------------------------------------


def _sample() -> list[str]:
    texts = [p.text for p in load_phrases()[::EVERY]]
    assert len(texts) == 20
    return ["おはようございます。", *texts]  # the example of docs/say.md: 17 at −32768 before


def _speak(speaker: Speaker, texts: list[str]) -> list[np.ndarray]:
    return [speaker.generate(text).data for text in texts]


def _stream(speaker: Speaker, texts: list[str]) -> list[list[np.ndarray]]:
    """Each text's chunks as `stream` sends them (same seed every time)."""
    return [[c.data for c in speaker.stream(text, seed=1, guard=False)] for text in texts]


def test_embedded_voice_never_reaches_full_scale_over_the_phrase_set(
    request: pytest.FixtureRequest,
) -> None:
    from engine.openjtalk import OpenJTalkVoice

    texts = _sample()
    new = _speak(Speaker(OpenJTalkVoice()), texts)
    request.getfixturevalue("unlimited")
    old = _speak(Speaker(OpenJTalkVoice(peak_limit=False)), texts)
    assert _full_scale(old[0]) >= 17
    assert sum(_full_scale(pcm) for pcm in old) > 300  # what the test would see before
    assert sum(_full_scale(pcm) for pcm in new) == 0
    deltas = [_lufs(n, 48000) - _lufs(o, 48000) for n, o in zip(new, old, strict=True)]
    assert all(a.size == b.size for a, b in zip(new, old, strict=True))
    assert max(abs(d) for d in deltas) <= 1.0, deltas
    changed = sum(not np.array_equal(a, b) for a, b in zip(new, old, strict=True))
    assert changed >= 5  # phrases that passed full scale were changed, the rest were not
    unchanged = [a for a, b in zip(new, old, strict=True) if np.array_equal(a, b)]
    assert all(_full_scale(pcm) == 0 for pcm in unchanged)


def _loud_neural_speaker(root: Path) -> Speaker:
    """model_small with its last decoder convolution ×4: the tanh at the decoder's end
    saturates at ±1.0, which int16 conversion made ±32767."""
    import torch
    from safetensors.torch import load_file, save_file

    from engine.neural.loader import load_neural_voice
    from tests.helpers.voices import ONE_THREAD, FakeBert, copy_small

    folder = copy_small(root / "pytorch" / "speakers" / "loud")
    state = load_file(str(folder / "model.safetensors"))
    state["dec.conv_post.weight"] = state["dec.conv_post.weight"] * 4.0
    save_file(state, str(folder / "model.safetensors"))
    torch.set_num_threads(1)
    voice = load_neural_voice("loud", root, bert=FakeBert(), backend="torch", options=ONE_THREAD)
    return Speaker(voice, rewrite=False)


def test_a_neural_voice_that_saturates_is_limited_not_clipped(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    speaker = _loud_neural_speaker(tmp_path)
    texts = _sample()[1 : 1 + NEURAL_PHRASES]
    new_chunks = _stream(speaker, texts)
    request.getfixturevalue("unlimited")
    old_chunks = _stream(speaker, texts)
    new = [np.concatenate(c) for c in new_chunks]
    old = [np.concatenate(c) for c in old_chunks]
    assert max(len(c) for c in new_chunks) > 1  # streamed in windows, limited chunk by chunk
    assert sum(_full_scale(pcm) for pcm in old) > 20
    assert sum(_full_scale(pcm) for pcm in new) == 0
    for a, b in zip(new, old, strict=True):
        assert a.size == b.size
        assert abs(_lufs(a, speaker.sample_rate) - _lufs(b, speaker.sample_rate)) <= 1.0
        # only the neighbourhood of a peak changes: most samples are exactly the voice's
        assert np.count_nonzero(a != b) < 0.5 * a.size
        assert np.abs(a.astype(np.int32) - b.astype(np.int32)).max() <= 32767 // 50
