"""The Japanese text frontend: time per sentence of each stage, against OpenJTalk's own
analysis (`pyopenjtalk.run_frontend`, the baseline) in the same run.

The golden sentences (less the one the reference rejects) and eight smart-home sentences for
the rewrite pass, through `normalize_text`, `analyze` (normalise + g2p + ids), `with_blanks`,
`rewrite`, `rewrite` + `analyze` (what a request runs), `split_sentences` (the whole set as
one text), `SentenceSplitter` (8-character deltas): medians of `--repeats` alternating passes.
"""

from __future__ import annotations

import argparse
import json

from benchmarks.engine.common import walls
from benchmarks.lib import REPO
from benchmarks.lib.report import Report

RESULT = None
BASELINE = "openjtalk run_frontend (baseline)"
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


def run(args: argparse.Namespace) -> Report:
    import pyopenjtalk

    from engine.text import SentenceSplitter, analyze, normalize_text, rewrite, split_sentences

    golden = (REPO / "tests" / "data" / "frontend_golden.jsonl").read_text("utf-8")
    texts = [json.loads(line)["text"] for line in golden.splitlines()]
    texts = [t for t in texts if t.strip() and "まっーたく" not in t] + EXTRA
    texts = texts[:8] if args.quick else texts
    repeats = 1 if args.quick else args.repeats
    norms = [normalize_text(t) for t in texts]
    analyses = [analyze(t) for t in texts]
    whole = "".join(texts)

    def feed_deltas() -> None:
        splitter = SentenceSplitter()
        for i in range(0, len(whole), 8):
            splitter.feed(whole[i : i + 8])
        splitter.flush()

    stages = {
        BASELINE: lambda: [pyopenjtalk.run_frontend(t) for t in norms],
        "normalize_text": lambda: [normalize_text(t) for t in texts],
        "analyze": lambda: [analyze(t) for t in texts],
        "with_blanks": lambda: [a.with_blanks() for a in analyses],
        "rewrite": lambda: [rewrite(t) for t in texts],
        "rewrite + analyze": lambda: [analyze(rewrite(t)) for t in texts],
        "split_sentences (whole text)": lambda: split_sentences(whole),
        "SentenceSplitter (8-char deltas)": feed_deltas,
    }
    per = {name: s / len(texts) for name, s in walls(stages, repeats).items()}
    report = Report("Frontend, time per sentence")
    report.note(
        f"{len(texts)} sentences, {sum(map(len, texts)) / len(texts):.1f} characters on "
        f"average, median of {repeats} passes."
    )
    report.table(
        ["stage", "µs / sentence", "× baseline"],
        [(name, f"{s * 1e6:.1f}", f"{s / per[BASELINE]:.2f}") for name, s in per.items()],
    )
    report.data["seconds_per_sentence"] = per
    return report
