"""The output stage (`engine.output`): what it costs and what it guarantees, in one run.

Figures, on the embedded voice (48 kHz) and a long text:

- limiter: the peak (int16) at +6, +12 and +20 dB against full scale and the -1 dBFS
  ceiling, and how much the RMS really rises;
- resampler: streamed (the voice's pieces, as a stream sends them) against one-shot (the
  whole audio at once), max difference in LSB, for every output rate;
- cost: output stage time per second of audio, as a ratio to the synthesis time of the same
  audio (the baseline, measured in this run); resampling alone and with gain + limiter;
- bandwidth: bytes sent at each output rate against the voice's own rate.

    python benchmarks/bench_output.py [--repeat 5] [--busy]

``--busy`` keeps one core busy with a spinning process while measuring.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine import EMBEDDED_VOICE_NAME, OUTPUT_RATES, TTS, OutputOptions  # noqa: E402
from engine.output import OutputStage  # noqa: E402
from engine.text import sentences_of  # noqa: E402

TEXT = (
    "リビングの電気を消しました。寝室のエアコンを二十六度に設定しました。"
    "玄関の鍵は閉まっています。明日の朝七時にアラームをセットしました。"
    "今週の予定は三件あります。月曜日は歯医者の予約があります。"
)


def _spin() -> None:
    while True:
        pass


def _shape(options: OutputOptions, rate: int, pieces: list[np.ndarray]) -> np.ndarray:
    stage = OutputStage(options, rate)
    out = [stage.push(p, final=True) for p in pieces]
    return np.concatenate([*out, stage.finish()])


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x.astype(np.float64) ** 2)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--busy", action="store_true", help="keep one core busy meanwhile")
    args = parser.parse_args()
    busy = multiprocessing.Process(target=_spin, daemon=True) if args.busy else None
    if busy is not None:
        busy.start()
    try:
        run(args.repeat, busy is not None)
    finally:
        if busy is not None:
            busy.terminate()
            busy.join()


def run(repeat: int, busy: bool) -> None:
    speaker = TTS().load(EMBEDDED_VOICE_NAME).prepare().speakers[EMBEDDED_VOICE_NAME]
    voice, rate = speaker.voice, speaker.sample_rate
    sentences = sentences_of(TEXT, rewrite=speaker.rewrite)
    opts = speaker.options()

    synth_times: list[float] = []
    pieces: list[np.ndarray] = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        pieces = [p.samples for p in voice.render(sentences, opts)]
        synth_times.append(time.perf_counter() - t0)
    synth = statistics.median(synth_times)
    seconds = sum(p.size for p in pieces) / rate
    plain = _shape(OutputOptions(), rate, pieces)
    print(f"embedded voice, {seconds:.1f} s of audio at {rate} Hz; one core busy: {busy}")
    print(f"baseline: synthesis {synth:.3f} s = {synth / seconds * 1000:.1f} ms per audio second")

    print("\nlimiter (int16 full scale 32767; ceiling -1 dBFS = 29204):")
    for db in (6.0, 12.0, 20.0):
        out = _shape(OutputOptions(volume=10 ** (db / 20)), rate, pieces)
        peak = int(np.abs(out.astype(np.int32)).max())
        rise = 20 * math.log10(_rms(out) / _rms(plain))
        print(
            f"  +{db:4.1f} dB: peak {peak} ({peak / 32767:.3f} of full scale), RMS +{rise:.2f} dB"
        )

    print("\nresampler, streamed vs one-shot (LSB), and cost as a ratio to synthesis time:")
    whole = [np.concatenate(pieces)]
    for out_rate in OUTPUT_RATES:
        resample = OutputOptions(sample_rate=out_rate)
        shaped = OutputOptions(sample_rate=out_rate, volume=2.0, lead_silence=0.3)
        diff = np.abs(
            _shape(shaped, rate, pieces).astype(np.int32) - _shape(shaped, rate, whole)
        ).max()
        times_r, times_s = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            _shape(resample, rate, pieces)
            times_r.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            _shape(shaped, rate, pieces)
            times_s.append(time.perf_counter() - t0)
        r, s = statistics.median(times_r), statistics.median(times_s)
        size = round(seconds * out_rate) * 2
        print(
            f"  {out_rate:5d} Hz: max diff {diff} LSB; resample {r / synth:.4f}x synthesis "
            f"({r / seconds * 1000:.2f} ms/audio s); with gain+limiter {s / synth:.4f}x; "
            f"bytes vs {rate} Hz: {size / (seconds * rate * 2):.3f}"
        )


if __name__ == "__main__":
    main()
