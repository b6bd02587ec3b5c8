"""`engine.neural.world.reshape_pitch`: pitch and intonation changed with WORLD, as hayakoe
does it, measured by WORLD itself (Harvest) on a voiced signal made for it: a harmonic tone
whose F0 glides and wavers, as a voice's does within a sentence."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from engine.neural.world import MIN_F0_HZ, check_scales, reshape_pitch
from tests.helpers.paths import REPO_ROOT

pyworld = pytest.importorskip("pyworld")

SR = 44100


def voiced_tone(seconds: float = 1.5, sr: int = SR, lo: float = 160.0, hi: float = 240.0):
    """A harmonic tone (20 partials, falling 1/k) whose F0 glides from `lo` to `hi` with a
    5 Hz waver of ±15 Hz; float32 in [-0.5, 0.5]."""
    t = np.arange(int(seconds * sr)) / sr
    f0 = lo + (hi - lo) * t / seconds + 15.0 * np.sin(2 * np.pi * 5.0 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sr
    x = sum(np.sin(k * phase) / k for k in range(1, 21))
    return (0.5 * x / np.abs(x).max()).astype(np.float32)


def f0_of(audio: np.ndarray, sr: int = SR) -> np.ndarray:
    """F0 per 5 ms frame as WORLD measures it (0: unvoiced)."""
    f0, _ = pyworld.harvest(np.asarray(audio, np.float64), sr)
    return f0


def both_voiced(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    fa, fb = f0_of(a), f0_of(b)
    n = min(fa.size, fb.size)
    fa, fb = fa[:n], fb[:n]
    voiced = (fa > 0) & (fb > 0)
    assert voiced.mean() > 0.8, "the tone must measure as voiced"
    return fa[voiced], fb[voiced]


def test_pitch_scale_raises_the_measured_f0_by_its_factor() -> None:
    tone = voiced_tone()
    for factor in (1.1, 0.85, 1.15):
        out = reshape_pitch(tone, SR, factor, 1.0)
        assert out.dtype == np.float32 and out.size == tone.size  # same length to the sample
        before, after = both_voiced(tone, out)
        ratio = after.mean() / before.mean()
        assert abs(ratio - factor) <= 0.02 * factor, (factor, ratio)


def test_intonation_scale_scales_the_spread_around_the_mean() -> None:
    tone = voiced_tone()
    before, after = both_voiced(tone, reshape_pitch(tone, SR, 1.0, 0.5))
    assert after.std() / before.std() == pytest.approx(0.5, abs=0.05)
    assert after.mean() / before.mean() == pytest.approx(1.0, abs=0.01)  # the mean stays
    before, flat = both_voiced(tone, reshape_pitch(tone, SR, 1.0, 0.0))
    assert flat.std() < 0.1 * before.std()  # 0: a monotone


def test_factors_of_one_return_the_audio_itself() -> None:
    tone = voiced_tone(0.2)
    assert reshape_pitch(tone, SR, 1.0, 1.0) is tone


def test_nothing_voiced_comes_back_as_it_was() -> None:
    silence = np.zeros(SR // 4, np.float32)
    assert reshape_pitch(silence, SR, 1.2, 0.5) is silence
    empty = np.zeros(0, np.float32)
    assert reshape_pitch(empty, SR, 1.2, 1.0) is empty


def test_a_wide_intonation_never_makes_f0_negative() -> None:
    out = reshape_pitch(voiced_tone(), SR, 0.5, 4.0)
    assert np.isfinite(out).all() and out.size
    f0 = f0_of(out)
    assert f0[f0 > 0].min() >= MIN_F0_HZ * 0.8


@pytest.mark.parametrize(
    ("pitch", "intonation", "field"),
    [
        (0.0, 1.0, "pitch_scale"),
        (-1.0, 1.0, "pitch_scale"),
        (float("nan"), 1.0, "pitch_scale"),
        (1.0, -0.5, "intonation_scale"),
        (1.0, float("inf"), "intonation_scale"),
    ],
)
def test_bad_factors_name_the_field(pitch: float, intonation: float, field: str) -> None:
    problem = check_scales(pitch, intonation)
    assert problem is not None and problem.startswith(field)
    with pytest.raises(ValueError, match=field):
        reshape_pitch(voiced_tone(0.1), SR, pitch, intonation)


def test_importing_the_engine_does_not_load_pyworld() -> None:
    code = (
        "import sys, engine, engine.neural.voice, engine.neural.render, engine.speaker\n"
        "assert 'pyworld' not in sys.modules, 'pyworld imported'\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
