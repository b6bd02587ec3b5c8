"""The Japanese text frontend: time per sentence for each stage, against OpenJTalk's own
analysis in the same run.

Sentences: the 63 golden sentences (without the one the reference rejects) and smart-home
sentences that exercise the rewrite pass. Stages: ``pyopenjtalk.run_frontend`` (the
baseline), ``normalize_text``, ``analyze`` (normalise + g2p + ids), ``with_blanks``,
``rewrite``, ``rewrite`` + ``analyze`` (what a request runs), ``split_sentences`` on the
whole set as one text, ``SentenceSplitter`` fed 8-character deltas. Each: the median of
``--repeats`` passes over all sentences after a warm-up.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from benchmarks.lib import REPO
from benchmarks.lib.report import Report
from benchmarks.lib.stats import median

RESULT = None
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


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeats", type=int, default=7)


def sentences() -> list[str]:
    golden = REPO / "tests" / "data" / "frontend_golden.jsonl"
    texts = [json.loads(line)["text"] for line in golden.read_text("utf-8").splitlines()]
    return [t for t in texts if t.strip() and "まっーたく" not in t] + EXTRA


def _time(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return median(runs)


def run(args: argparse.Namespace) -> Report:
    import pyopenjtalk

    from engine.text import SentenceSplitter, analyze, normalize_text, rewrite, split_sentences

    texts = sentences()[:8] if args.quick else sentences()
    repeats = 1 if args.quick else args.repeats
    norms = [normalize_text(t) for t in texts]
    analyses = [analyze(t) for t in texts]
    whole = "".join(texts)

    def feed_deltas() -> None:
        s = SentenceSplitter()
        for i in range(0, len(whole), 8):
            s.feed(whole[i : i + 8])
        s.flush()

    stages: dict[str, Callable[[], object]] = {
        "openjtalk run_frontend (baseline)": lambda: [pyopenjtalk.run_frontend(t) for t in norms],
        "normalize_text": lambda: [normalize_text(t) for t in texts],
        "analyze": lambda: [analyze(t) for t in texts],
        "with_blanks": lambda: [a.with_blanks() for a in analyses],
        "rewrite": lambda: [rewrite(t) for t in texts],
        "rewrite + analyze": lambda: [analyze(rewrite(t)) for t in texts],
        "split_sentences (whole text)": lambda: split_sentences(whole),
        "SentenceSplitter (8-char deltas)": feed_deltas,
    }
    per = {name: _time(fn, repeats) / len(texts) for name, fn in stages.items()}
    base = per["openjtalk run_frontend (baseline)"]
    report = Report("Frontend, time per sentence")
    report.note(
        f"{len(texts)} sentences, {sum(map(len, texts)) / len(texts):.1f} characters on "
        f"average, median of {repeats} passes."
    )
    report.table(
        ["stage", "µs / sentence", "× baseline"],
        [(n, f"{s * 1e6:.1f}", f"{s / base:.2f}") for n, s in per.items()],
    )
    report.data["seconds_per_sentence"] = per
    return report
