"""The output stage (`engine.output`): what it costs and what it guarantees, in one run.

On the embedded voice (48 kHz) and a long text: the limiter's peak (int16) at +6, +12 and
+20 dB against full scale and the -1 dBFS ceiling, and how much the RMS really rises; the
resampler streamed (the voice's pieces, as a stream sends them) against one-shot (the whole
audio at once), max difference in LSB, for every output rate; the stage's time per second of
audio as a ratio to the synthesis time of the same audio (the baseline, this run),
resampling alone and with gain + limiter; bytes sent at each rate against the voice's own.
``--busy`` keeps one core busy meanwhile.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchmarks.lib.report import Report
from benchmarks.lib.stats import busy_core, median

RESULT = None
TEXT = (
    "リビングの電気を消しました。寝室のエアコンを二十六度に設定しました。"
    "玄関の鍵は閉まっています。明日の朝七時にアラームをセットしました。"
    "今週の予定は三件あります。月曜日は歯医者の予約があります。"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--busy", action="store_true", help="keep one core busy meanwhile")


def _shape(options: object, rate: int, pieces: list[np.ndarray]) -> np.ndarray:
    from engine.output import OutputStage

    stage = OutputStage(options, rate)  # type: ignore[arg-type]
    out = [stage.push(p, final=True) for p in pieces]
    return np.concatenate([*out, stage.finish()])


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x.astype(np.float64) ** 2)))


def _timed(fn: object, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        runs.append(time.perf_counter() - t0)
    return median(runs)


def run(args: argparse.Namespace) -> Report:
    from engine import EMBEDDED_VOICE_NAME, TTS, OutputOptions
    from engine.output import OUTPUT_RATES
    from engine.text import sentences_of

    repeat = 1 if args.quick else args.repeat
    speaker = TTS().load(EMBEDDED_VOICE_NAME).prepare().speakers[EMBEDDED_VOICE_NAME]
    voice, rate = speaker.voice, speaker.sample_rate
    sentences = sentences_of(TEXT, rewrite=speaker.rewrite)
    opts = speaker.options()
    report = Report("Output stage" + (", one core busy" if args.busy else ""))
    with busy_core(args.busy):
        pieces: list[np.ndarray] = []

        def synthesize() -> None:
            pieces[:] = [p.samples for p in voice.render(sentences, opts)]

        synth = _timed(synthesize, repeat)
        seconds = sum(p.size for p in pieces) / rate
        plain = _shape(OutputOptions(), rate, pieces)
        report.note(
            f"Embedded voice, {seconds:.1f} s of audio at {rate} Hz; baseline: synthesis "
            f"{synth:.3f} s = {synth / seconds * 1000:.1f} ms per second of audio."
        )
        rows: list[tuple[object, ...]] = []
        for db in (6.0, 12.0, 20.0):
            out = _shape(OutputOptions(volume=10 ** (db / 20)), rate, pieces)
            peak = int(np.abs(out.astype(np.int32)).max())
            rise = 20 * math.log10(_rms(out) / _rms(plain))
            rows.append((f"+{db:g} dB", peak, f"{peak / 32767:.3f}", f"+{rise:.2f} dB"))
        report.table(["gain", "peak (int16)", "of full scale", "RMS rise"], rows)
        report.note("The ceiling is -1 dBFS = 29204.")
        whole = [np.concatenate(pieces)]
        rows = []
        for out_rate in OUTPUT_RATES:
            resample = OutputOptions(sample_rate=out_rate)
            shaped = OutputOptions(sample_rate=out_rate, volume=2.0, lead_silence=0.3)
            streamed = _shape(shaped, rate, pieces).astype(np.int32)
            diff = int(np.abs(streamed - _shape(shaped, rate, whole)).max())
            r = _timed(lambda o=resample: _shape(o, rate, pieces), repeat)
            s = _timed(lambda o=shaped: _shape(o, rate, pieces), repeat)
            size = round(seconds * out_rate) * 2
            rows.append(
                (out_rate, diff, f"{r / synth:.4f}", f"{s / synth:.4f}")
                + (f"{size / (seconds * rate * 2):.3f}",)
            )
    report.table(
        [
            "output Hz",
            "streamed vs one-shot (LSB)",
            "resample / synthesis",
            "with gain + limiter / synthesis",
            "bytes / voice rate's",
        ],
        rows,
    )
    return report
