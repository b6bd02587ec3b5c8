"""The fidelity measures of the int8 gate (engine.int8.gate) on signals with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from engine.int8.gate import (
    FidelityReport,
    GateThresholds,
    SentenceFidelity,
    compare,
    judge,
    snr_db,
)

SR = 44100


def _speechlike(seconds: float = 1.0, seed: int = 0) -> np.ndarray:
    """Harmonics of a gliding 150 Hz tone under a syllable-rate envelope, plus a little noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(SR * seconds)) / SR
    f0 = 150 + 30 * np.sin(2 * np.pi * 2 * t)
    phase = 2 * np.pi * np.cumsum(f0) / SR
    x = sum(np.sin(k * phase) / k for k in range(1, 30))
    env = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * t) ** 2
    return (0.3 * env * x / np.abs(x).max() + 0.001 * rng.standard_normal(len(t))).astype(
        np.float32
    )


def test_identical_audio_is_perfect() -> None:
    x = _speechlike()
    snr, logmel, mcd = compare(x, x.copy(), SR)
    assert snr == 120.0
    assert logmel == 0.0 and mcd == 0.0


@pytest.mark.parametrize("target", [10.0, 20.0, 30.0])
def test_snr_of_added_noise(target: float) -> None:
    x = _speechlike()
    noise = np.random.default_rng(1).standard_normal(len(x))
    noise *= np.sqrt(np.sum(x.astype(np.float64) ** 2) / np.sum(noise**2) / 10 ** (target / 10))
    assert snr_db(x, x + noise) == pytest.approx(target, abs=0.05)
    # Audible-band SNR ignores a DC offset that plain SNR counts.
    dc = x + 0.5
    assert snr_db(dc, dc + noise, SR) == pytest.approx(target, abs=0.3)
    assert snr_db(dc, dc + noise) > target + 10


def test_gain_change_reads_in_log_mel_not_in_mcd() -> None:
    x = _speechlike()
    _, logmel, mcd = compare(x, x * 10 ** (-3 / 20), SR)  # 3 dB quieter
    assert 2.5 < logmel <= 3.0  # bands near the floor move less
    assert mcd < 0.05  # c0 (overall level) is not part of the cepstral distance


def test_spectral_tilt_reads_in_mcd() -> None:
    x = _speechlike()
    spec = np.fft.rfft(x)
    f = np.fft.rfftfreq(len(x), 1 / SR)
    tilted = np.fft.irfft(spec * (1 + f / 4000.0) ** -0.5, n=len(x)).astype(np.float32)
    _, logmel, mcd = compare(x, tilted, SR)
    assert logmel > 1.0 and mcd > 1.0


def test_gate_verdicts_and_report_round_trip(tmp_path) -> None:
    ok = SentenceFidelity("a", "Neutral", 1.0, 25.0, 0.3, 1.2)
    hiss = SentenceFidelity("b", "Neutral", 1.0, 9.0, 0.6, 2.0)
    passed = judge("v", [ok, ok], GateThresholds(), {"method": "minmax"})
    assert passed.passed and passed.reasons == []
    failed = judge("v", [ok, hiss])
    assert not failed.passed
    assert any("SNR 9.0 dB < 15" in r and "'b'" in r for r in failed.reasons)
    path = tmp_path / "fidelity.json"
    failed.save(path)
    back = FidelityReport.load(path)
    assert back == failed
    assert "FAILED" in back.summary()
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match="fidelity.json"):
        FidelityReport.load(path)
    with pytest.raises(ValueError, match="no held-out"):
        judge("v", [])
