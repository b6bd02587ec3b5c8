"""What ending a stream's first part at a clause mark gains in first audio and costs in prosody.

Text from a language model arrives at 20-100 tokens a second, so a long first sentence
reaches the server over one to several seconds and its first audio waits for all of it.
`TextPipeline(first_clause=N)` lets the first part end at a clause mark (、，) once it holds
N characters. For each N this prints, over answers whose first sentence is long:

- first audio, measured from the first delta, with the text fed at an LLM's pace
  (`--tokens-per-s`, `--chars-per-token`), median of `--repeat` runs, and its ratio to N=0
  (today: sentences only) measured in the same run;
- the prosody it costs: the answer spoken with the cut against the same answer spoken
  whole, after aligning them in time (DTW over log-mel frames): mean log-mel distance (dB)
  and F0 distance (RMS over frames voiced in both, cents). As a yardstick for those
  figures, the same distances between the whole answer and the whole answer 5 % faster.

The prosody figures need a trained voice: the default is the embedded OpenJTalk voice (a
real HTS voice). The neural voices on the development machine have random weights, so
their prosody figures mean nothing; their first-audio figures are real
(`--voice NAME=SOURCE`).

    python benchmarks/bench_first_clause.py [--thresholds 0,12,16,20,30] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from engine import EMBEDDED_VOICE_NAME, TTS, Speaker  # noqa: E402
from engine.synth.fidelity import log_mel_db  # noqa: E402

ANSWERS = [
    # Assist / LLM-style answers whose first sentence is long, with clause marks.
    "はい、リビングの照明を消して、エアコンを二十五度の冷房に設定しましたので、しばらくすると"
    "涼しくなります。ほかにご用はありますか？",
    "今日の天気は、午前中は晴れますが、午後から次第に雲が広がって、夕方には雨が降り出す"
    "見込みです。傘を持って出かけてください。",
    "玄関のドアは施錠されていて、窓もすべて閉まっていますが、ガレージのシャッターだけが"
    "開いたままになっています。閉めましょうか？",
    "明日の予定は、午前九時から駅前の会議室で打ち合わせ、お昼は取引先と食事、午後三時から"
    "歯医者の予約です。",
]


def deltas_at_pace(text: str, chars_per_token: float, tokens_per_s: float) -> Iterator[str]:
    """`text` in tokens of about `chars_per_token` characters, `tokens_per_s` a second."""
    step = max(1, round(chars_per_token))
    period = 1.0 / tokens_per_s
    start = time.perf_counter()
    for k, i in enumerate(range(0, len(text), step)):
        delay = start + k * period - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        yield text[i : i + step]


def first_audio(speaker: Speaker, text: str, n: int, cpt: float, tps: float) -> float:
    speaker.first_clause = n
    start = time.perf_counter()
    chunks = speaker.stream(deltas_at_pace(text, cpt, tps), guard=False, seed=1)
    try:
        for chunk in chunks:
            if chunk.num_samples:
                return time.perf_counter() - start
    finally:
        chunks.close()
    return float("nan")


def spoken(speaker: Speaker, text: str, n: int, speed: float = 1.0) -> np.ndarray:
    speaker.first_clause = n
    deltas = [text[i : i + 2] for i in range(0, len(text), 2)]
    pcm = [c.data for c in speaker.stream(iter(deltas), guard=False, seed=1, speed=speed)]
    return np.concatenate(pcm).astype(np.float32) / 32768.0


def dtw_path(a: np.ndarray, b: np.ndarray) -> list[tuple[int, int]]:
    """Frame pairs aligning `a` [n, d] with `b` [m, d] (Euclidean cost, steps 1/1/diagonal)."""
    cost = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
    n, m = cost.shape
    acc = np.full((n + 1, m + 1), np.inf)
    acc[0, 0] = 0.0
    for i in range(1, n + 1):
        row, prev = acc[i], acc[i - 1]
        for j in range(1, m + 1):
            row[j] = cost[i - 1, j - 1] + min(prev[j], row[j - 1], prev[j - 1])
    i, j, path = n, m, []
    while i > 0 and j > 0:
        path.append((i - 1, j - 1))
        step = int(np.argmin([acc[i - 1, j - 1], acc[i - 1, j], acc[i, j - 1]]))
        i, j = (i - 1, j - 1) if step == 0 else (i - 1, j) if step == 1 else (i, j - 1)
    return path[::-1]


def f0_track(audio: np.ndarray, sr: int, hop: int, lo: float = 70.0, hi: float = 500.0):
    """F0 per frame by normalised autocorrelation (0 where unvoiced)."""
    win = int(0.04 * sr)
    out = []
    for start in range(0, max(1, len(audio) - win), hop):
        x = audio[start : start + win]
        x = x - x.mean()
        energy = float((x * x).sum())
        if energy < 1e-6:
            out.append(0.0)
            continue
        ac = np.correlate(x, x, "full")[win - 1 :] / energy
        a, b = int(sr / hi), min(int(sr / lo), win - 1)
        lag = a + int(np.argmax(ac[a:b]))
        out.append(sr / lag if ac[lag] > 0.5 else 0.0)
    return np.asarray(out)


def distances(ref: np.ndarray, test: np.ndarray, sr: int) -> tuple[float, float]:
    """(mean log-mel dB, F0 RMS cents) between two renderings, aligned by DTW."""
    hop = 256 * sr // 22050
    a, b = log_mel_db(ref, sr), log_mel_db(test, sr)  # [frames, mels]
    path = dtw_path(a[::2], b[::2])
    mel = float(np.mean([np.abs(a[2 * i] - b[2 * j]).mean() for i, j in path]))
    fa, fb = f0_track(ref, sr, hop), f0_track(test, sr, hop)
    scale_a, scale_b = len(fa) / max(1, len(a)), len(fb) / max(1, len(b))
    cents = []
    for i, j in path:
        x = fa[min(len(fa) - 1, int(2 * i * scale_a))]
        y = fb[min(len(fb) - 1, int(2 * j * scale_b))]
        if x > 0 and y > 0:
            cents.append(1200 * np.log2(y / x))
    f0 = float(np.sqrt(np.mean(np.square(cents)))) if cents else float("nan")
    return mel, f0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--voice", default=EMBEDDED_VOICE_NAME, help="NAME or NAME=SOURCE")
    p.add_argument("--thresholds", default="0,12,16,20,30")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--tokens-per-s", type=float, default=30.0)
    p.add_argument("--chars-per-token", type=float, default=1.5)
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args()
    name, _, source = args.voice.partition("=")
    tts = TTS().load(name, source=source or None).prepare(warmup=True)
    speaker = tts.speakers[name]
    ns = [int(x) for x in args.thresholds.split(",")]
    sr = speaker.sample_rate

    ttfa: dict[int, list[float]] = {n: [] for n in ns}
    for _ in range(args.repeat):
        for text in ANSWERS:
            for n in ns:
                ttfa[n].append(
                    first_audio(speaker, text, n, args.chars_per_token, args.tokens_per_s)
                )
    whole = [spoken(speaker, t, 0) for t in ANSWERS]
    yard = [distances(w, spoken(speaker, t, 0, speed=1.05), sr) for w, t in zip(whole, ANSWERS)]
    rows = []
    base = statistics.median(ttfa[0])
    print(
        f"voice {name}; text at {args.tokens_per_s:g} tokens/s x {args.chars_per_token:g} chars; "
        f"{len(ANSWERS)} answers x {args.repeat}"
    )
    print("| first_clause | first audio (median) | vs sentences only | log-mel dB | F0 cents |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for n in ns:
        med = statistics.median(ttfa[n])
        if n:
            d = [distances(w, spoken(speaker, t, n), sr) for w, t in zip(whole, ANSWERS)]
            mel, f0 = statistics.mean(x[0] for x in d), statistics.mean(x[1] for x in d)
        else:
            mel = f0 = 0.0
        rows.append(
            {"first_clause": n, "ttfa_s": med, "ratio": med / base, "mel_db": mel, "f0_cents": f0}
        )
        print(f"| {n or 'off'} | {med * 1000:.0f} ms | {med / base:.2f} | {mel:.2f} | {f0:.0f} |")
    ymel, yf0 = statistics.mean(x[0] for x in yard), statistics.mean(x[1] for x in yard)
    print(f"| yardstick: whole answer 5 % faster | | | {ymel:.2f} | {yf0:.0f} |")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "yardstick": [ymel, yf0]}, indent=1))


if __name__ == "__main__":
    main()
