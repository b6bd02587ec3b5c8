"""Benchmark the Japanese text frontend: time per sentence for each stage.

Stages, per sentence (the 63 golden sentences, without the one the reference rejects, plus
smart-home sentences that exercise the rewrite pass):

- baseline: ``pyopenjtalk.run_frontend`` alone (OpenJTalk's own analysis);
- ``normalize_text``; ``analyze`` (normalise + g2p + ids); ``with_blanks``;
- ``rewrite`` (the pass before analyze); ``rewrite`` + ``analyze`` (what TTS runs);
- ``split_sentences`` on the whole set as one text, and ``SentenceSplitter`` fed 8-char deltas.

Each stage is timed as the median of ``--repeats`` runs over all sentences after a warm-up and
printed in microseconds per sentence and as a ratio to the OpenJTalk baseline of the same run.

    python benchmarks/bench_frontend.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EXTRA = [
    "明日の朝7:30にアラームをセットしました。",
    "外の気温は-3℃、湿度は45%です。",
    "Home AssistantのWi-Fi接続が切れました。",
    "リビングのLEDライトを50%にしました。",
    "消費電力は1.5kWh、電気代は$5.99です。",
    "2026/11/29（日）の予定は3件です。",
    "時速60km/hで走行中です。",
    "USB-CケーブルでCPUの温度センサーをつなぎました。",
]


def _sentences() -> list[str]:
    lines = (
        (ROOT / "tests" / "data" / "frontend_golden.jsonl").read_text(encoding="utf-8").splitlines()
    )
    texts = [json.loads(line)["text"] for line in lines]
    texts = [t for t in texts if t.strip() and "まっーたく" not in t]
    return texts + EXTRA


def _time(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    import pyopenjtalk

    from engine.text import SentenceSplitter, analyze, normalize_text, rewrite, split_sentences

    texts = _sentences()
    norms = [normalize_text(t) for t in texts]
    analyses = [analyze(t) for t in texts]
    n = len(texts)
    whole = "".join(texts)

    def feed_deltas() -> None:
        s = SentenceSplitter()
        for i in range(0, len(whole), 8):
            s.feed(whole[i : i + 8])
        s.flush()

    stages: list[tuple[str, Callable[[], object]]] = [
        ("openjtalk run_frontend (baseline)", lambda: [pyopenjtalk.run_frontend(t) for t in norms]),
        ("normalize_text", lambda: [normalize_text(t) for t in texts]),
        ("analyze", lambda: [analyze(t) for t in texts]),
        ("with_blanks", lambda: [a.with_blanks() for a in analyses]),
        ("rewrite", lambda: [rewrite(t) for t in texts]),
        ("rewrite + analyze", lambda: [analyze(rewrite(t)) for t in texts]),
        ("split_sentences (whole text)", lambda: split_sentences(whole)),
        ("SentenceSplitter (8-char deltas)", feed_deltas),
    ]
    results = [(name, _time(fn, args.repeats) / n) for name, fn in stages]
    base = results[0][1]
    mean_chars = sum(map(len, texts)) / n
    print(
        f"frontend benchmark: {n} sentences, {mean_chars:.1f} characters on average, median of "
        f"{args.repeats}"
    )
    print(f"{'stage':38} {'µs/sentence':>12} {'× baseline':>11}")
    for name, sec in results:
        print(f"{name:38} {sec * 1e6:12.1f} {sec / base:11.2f}")


if __name__ == "__main__":
    main()
