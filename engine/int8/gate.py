"""How far int8 audio is from fp32 audio: the fidelity gate of int8 synthesizer graphs.

The same voice, sentence, style and seed go through the fp32 graphs and through the int8
ones, and three figures compare the two audios (per sentence, then over the held-out set):

- **SNR** (dB): power of the fp32 audio over the power of the difference, in the audible
  band (content below 60 Hz, e.g. a DC offset, left out). Strict: a waveform measure, so
  any phase change counts as noise although the ear hardly hears it.
- **log-mel distance** (dB): RMS over 80 mel bands (60 Hz – Nyquist) of the difference of
  the two log-mel power spectra, both floored 60 dB below the loudest fp32 bin so that
  inaudible detail does not count, averaged over speech frames (within 40 dB of the loudest
  frame; pauses left out). What a listener hears as a timbre or loudness change.
- **MCD** (dB): mel-cepstral distortion computed cheaply from the same log-mel spectra
  (orthonormal DCT, coefficients 1..24, `10/ln 10 · sqrt(2 Σ Δc²)`), the figure TTS papers
  quote (from amplitude spectra, c0 left out and each spectrum floored below its own peak,
  so a change of level alone reads 0).

A voice passes the gate when, on every held-out sentence, SNR ≥ `min_snr_db`, and over the
set the mean log-mel distance ≤ `max_logmel_db` and the mean MCD ≤ `max_mcd_db`
(`GateThresholds`, defaults explained there and in docs/synthesizer.md). The report is JSON,
stored beside the int8 graphs, shown by `wyoming-hayakoe quantize` and logged at start.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..json_types import JsonObject

N_FFT = 2048
HOP = 512
N_MELS = 80
FMIN = 60.0
FLOOR_DB = 60.0
SPEECH_DB = 40.0
N_CEPS = 24


@dataclass(frozen=True)
class GateThresholds:
    """Limits an int8 voice must meet to be used by `precision="auto"` (docs/synthesizer.md
    gives the measured figures these were set against)."""

    min_snr_db: float = 15.0
    """Lowest audible-band SNR of any held-out sentence: at 15 dB the difference is ~30×
    below the voice in power; much below that, int8 rounding is heard as a hiss in the
    quiet parts of speech."""
    max_logmel_db: float = 1.0
    """Mean log-mel distance over speech frames: 1 dB average spectral distortion is the
    classic limit of transparent quantization (Paliwal & Atal, 1993)."""
    max_mcd_db: float = 4.0
    """Mean mel-cepstral distortion: for rounding errors that are independent across bands
    (what int8 gives), this MCD reads about 3.5–4× the log-mel distance, so 4 dB is the same
    1 dB limit seen through the cepstrum; it catches errors concentrated in the envelope."""


@dataclass(frozen=True)
class SentenceFidelity:
    """Figures for one held-out sentence in one style."""

    sentence: str
    style: str
    seconds: float
    snr_db: float
    logmel_db: float
    mcd_db: float


@dataclass
class FidelityReport:
    """The gate's verdict on one voice's int8 graphs (stored as `fidelity.json`)."""

    voice: str
    passed: bool
    """True when every threshold is met."""
    snr_db_min: float
    snr_db_mean: float
    logmel_db_mean: float
    mcd_db_mean: float
    thresholds: GateThresholds
    reasons: list[str] = field(default_factory=list)
    """What failed (empty when `passed`)."""
    sentences: list[SentenceFidelity] = field(default_factory=list)
    settings: JsonObject = field(default_factory=dict)
    """How the graphs were made (method, ops, calibration size, timings)."""
    kind: str = "int8"
    """What was compared with fp32 on ONNX Runtime: "int8", or a candidate of
    `engine.int8.measure` ("bf16 on OpenVINO")."""
    attempts: list[JsonObject] = field(default_factory=list)
    """Each decoder recipe the gate judged, in order (`attempt`: the recipe in words, its
    figures, whether it passed): the first (`QuantSettings()`: the last stage's residual
    blocks and the activations in int8) and, where that one failed, its fallback (the
    last stage fp32). The report's own figures are the last one's."""

    def attempt(self, recipe: str) -> JsonObject:
        """This report's figures as one of `attempts`."""
        return {
            "recipe": recipe,
            "passed": self.passed,
            "snr_db_min": round(self.snr_db_min, 3),
            "logmel_db_mean": round(self.logmel_db_mean, 4),
            "mcd_db_mean": round(self.mcd_db_mean, 4),
            "reasons": list(self.reasons),
        }

    def summary(self) -> str:
        verdict = "passed" if self.passed else "FAILED (" + "; ".join(self.reasons) + ")"
        if len(self.attempts) > 1:
            first = self.attempts[0]
            reasons = first["reasons"]
            said = "; ".join(str(r) for r in reasons) if isinstance(reasons, list) else ""
            verdict += (
                f" with the fallback recipe ({first['recipe']}: SNR min "
                f"{first['snr_db_min']:.1f} dB, {said or 'passed'})"
            )
        return (
            f"{self.kind} fidelity of {self.voice}: {verdict} — SNR min {self.snr_db_min:.1f} dB "
            f"(≥ {self.thresholds.min_snr_db:g}), mean {self.snr_db_mean:.1f} dB; log-mel "
            f"{self.logmel_db_mean:.2f} dB (≤ {self.thresholds.max_logmel_db:g}); MCD "
            f"{self.mcd_db_mean:.2f} dB (≤ {self.thresholds.max_mcd_db:g}); "
            f"{len(self.sentences)} held-out sentences"
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, indent=2)

    def save(self, path: Path) -> None:
        tmp = path.with_name(f".{path.name}.partial")
        tmp.write_text(self.to_json(), encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> FidelityReport:
        """Read a stored report (ValueError naming the file if it is not one)."""
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
            raw["thresholds"] = GateThresholds(**raw["thresholds"])
            raw["sentences"] = [SentenceFidelity(**s) for s in raw.get("sentences", [])]
            return cls(**raw)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"{path}: not a fidelity report ({exc})") from exc


def judge(
    voice: str,
    sentences: list[SentenceFidelity],
    thresholds: GateThresholds | None = None,
    settings: JsonObject | None = None,
    kind: str = "int8",
) -> FidelityReport:
    """The report for `sentences` against `thresholds` (`kind`: what was compared)."""
    th = thresholds or GateThresholds()
    if not sentences:
        raise ValueError("fidelity gate: no held-out sentence was synthesized")
    snr = [s.snr_db for s in sentences]
    logmel = float(np.mean([s.logmel_db for s in sentences]))
    mcd = float(np.mean([s.mcd_db for s in sentences]))
    reasons = []
    worst = min(sentences, key=lambda s: s.snr_db)
    if worst.snr_db < th.min_snr_db:
        reasons.append(f"SNR {worst.snr_db:.1f} dB < {th.min_snr_db:g} on {worst.sentence!r}")
    if not logmel <= th.max_logmel_db:
        reasons.append(f"log-mel distance {logmel:.2f} dB > {th.max_logmel_db:g}")
    if not mcd <= th.max_mcd_db:
        reasons.append(f"MCD {mcd:.2f} dB > {th.max_mcd_db:g}")
    return FidelityReport(
        voice=voice,
        passed=not reasons,
        snr_db_min=float(min(snr)),
        snr_db_mean=float(np.mean(snr)),
        logmel_db_mean=logmel,
        mcd_db_mean=mcd,
        thresholds=th,
        reasons=reasons,
        sentences=list(sentences),
        settings=dict(settings or {}),
        kind=kind,
    )


# ------------------------------------------------------------------------------ measures ---


def snr_db(reference: np.ndarray, test: np.ndarray, sample_rate: int | None = None) -> float:
    """10·log10(Σref² / Σ(ref − test)²), capped at ±120 dB. With `sample_rate`, over the
    audible band only (content below `FMIN` left out, as in the spectra: a DC offset would
    otherwise dominate both sums and flatter the figure)."""
    ref = np.asarray(reference, np.float64).reshape(-1)
    tst = np.asarray(test, np.float64).reshape(-1)
    if ref.shape != tst.shape:
        raise ValueError(f"audio lengths differ: {ref.shape[0]} vs {tst.shape[0]}")
    if sample_rate is not None:
        keep = np.fft.rfftfreq(len(ref), 1.0 / sample_rate) >= FMIN
        signal = float(np.sum(np.abs(np.fft.rfft(ref)[keep]) ** 2))
        noise = float(np.sum(np.abs(np.fft.rfft(ref - tst)[keep]) ** 2))
    else:
        signal = float(np.sum(ref**2))
        noise = float(np.sum((ref - tst) ** 2))
    if noise == 0.0:
        return 120.0
    if signal == 0.0:
        return -120.0
    return float(max(-120.0, min(120.0, 10.0 * math.log10(signal / noise))))


_MEL_CACHE: dict[tuple[int, int, int], np.ndarray] = {}


def mel_filterbank(sample_rate: int, n_fft: int = N_FFT, n_mels: int = N_MELS) -> np.ndarray:
    """Triangular mel filters `[n_mels, n_fft // 2 + 1]` (HTK mel scale, `FMIN` .. Nyquist:
    DC and sub-audible rumble, which says nothing about the voice, are left out)."""
    key = (sample_rate, n_fft, n_mels)
    if key not in _MEL_CACHE:

        def mel(f: np.ndarray) -> np.ndarray:
            return 2595.0 * np.log10(1.0 + f / 700.0)

        def hz(m: np.ndarray) -> np.ndarray:
            return 700.0 * (10.0 ** (m / 2595.0) - 1.0)

        freqs = np.linspace(0.0, sample_rate / 2, n_fft // 2 + 1)
        edges = hz(np.linspace(mel(np.array(FMIN)), mel(np.array(sample_rate / 2)), n_mels + 2))
        lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
        up = (freqs[None] - lo) / np.maximum(mid - lo, 1e-9)
        down = (hi - freqs[None]) / np.maximum(hi - mid, 1e-9)
        _MEL_CACHE[key] = np.maximum(0.0, np.minimum(up, down))
    return _MEL_CACHE[key]


def log_mel_db(audio: np.ndarray, sample_rate: int, floor_db: float | None = None) -> np.ndarray:
    """Log-mel power spectrogram in dB `[frames, n_mels]` (Hann window, N_FFT/HOP)."""
    x = np.asarray(audio, np.float64).reshape(-1)
    if len(x) < N_FFT:
        x = np.pad(x, (0, N_FFT - len(x)))
    n = 1 + (len(x) - N_FFT) // HOP
    idx = np.arange(N_FFT)[None] + HOP * np.arange(n)[:, None]
    spec = np.abs(np.fft.rfft(x[idx] * np.hanning(N_FFT)[None], axis=1)) ** 2
    mel = spec @ mel_filterbank(sample_rate).T
    db = 10.0 * np.log10(np.maximum(mel, 1e-20))
    if floor_db is not None:
        db = np.maximum(db, floor_db)
    return np.asarray(db)


def _dct_matrix(n_in: int, n_out: int) -> np.ndarray:
    k = np.arange(n_out)[:, None]
    n = np.arange(n_in)[None]
    m = np.cos(np.pi * k * (2 * n + 1) / (2 * n_in)) * math.sqrt(2.0 / n_in)
    m[0] /= math.sqrt(2.0)
    return m


def compare(
    reference: np.ndarray, test: np.ndarray, sample_rate: int
) -> tuple[float, float, float]:
    """(SNR dB, mean log-mel distance dB, mean MCD dB) of `test` against `reference`.

    The spectral figures are taken over the speech frames of `reference` (frame energy within
    `SPEECH_DB` of its loudest frame: pauses are left out), with both spectra floored
    `FLOOR_DB` below the loudest mel bin of `reference` (what lies below is inaudible next
    to the loud part)."""
    snr = snr_db(reference, test, sample_rate)
    ref_raw = log_mel_db(reference, sample_rate)
    tst_raw = log_mel_db(test, sample_rate)
    floor = float(ref_raw.max()) - FLOOR_DB
    ref_db = np.maximum(ref_raw, floor)
    tst_db = np.maximum(tst_raw, floor)
    energy = 10.0 * np.log10(np.maximum(np.sum(10.0 ** (ref_db / 10.0), axis=1), 1e-30))
    speech = energy >= energy.max() - SPEECH_DB
    delta = (ref_db - tst_db)[speech]
    logmel = float(np.mean(np.sqrt(np.mean(delta**2, axis=1))))
    # Mel cepstra of the natural-log mel amplitude (dB · ln10 / 20), c1..c24; each spectrum
    # floored below its own peak, so that a change of level alone reads 0.
    own = np.maximum(tst_raw, float(tst_raw.max()) - FLOOR_DB)
    dct = _dct_matrix(ref_db.shape[1], N_CEPS + 1)[1:]
    diff = (ref_db - own)[speech] * (math.log(10.0) / 20.0) @ dct.T
    mcd = float(np.mean(10.0 / math.log(10.0) * np.sqrt(2.0 * np.sum(diff**2, axis=1))))
    return snr, logmel, mcd
