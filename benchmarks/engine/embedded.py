"""The embedded OpenJTalk voice: time to first audio and real-time factor of the engine's
`Speaker.stream` (sentence by sentence) against `pyopenjtalk.tts` of the whole text (the
baseline: its time is also its time to first audio), in one run, on texts of 1, 3 and 12
sentences. RTF = time / audio duration. Over Wyoming: `python -m benchmarks.server
first-audio`.
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from typing import Any

from benchmarks.lib.report import Report
from benchmarks.lib.stats import alternate, median

RESULT = None
TEXTS = {
    "1 sentence": "こんにちは、今日はいい天気ですね。",
    "3 sentences": (
        "明日の天気は晴れのち曇りです。最高気温は二十三度の予想です。傘は要らないでしょう。"
    ),
    "12 sentences": (
        "リビングの電気を消しました。寝室のエアコンを二十六度に設定しました。"
        "玄関の鍵は閉まっています。明日の朝七時にアラームをセットしました。"
        "今週の予定は三件あります。月曜日は歯医者の予約があります。"
        "水曜日は友達と夕食の約束です。金曜日は会社の飲み会があります。"
        "冷蔵庫の牛乳が少なくなっています。買い物リストに追加しました。"
        "今夜は雨が降るかもしれません。洗濯物を取り込んでおきましょう。"
    ),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeat", type=int, default=5)


def baseline(text: str) -> dict[str, float]:
    """`pyopenjtalk.tts` of the whole text: first audio = total time."""
    import pyopenjtalk

    t0 = time.perf_counter()
    audio, sr = pyopenjtalk.tts(text)
    wall = time.perf_counter() - t0
    return {"ttfa": wall, "wall": wall, "audio": len(audio) / sr}


def engine_stream(speaker: Any, text: str) -> dict[str, float]:
    t0 = time.perf_counter()
    first, samples = None, 0
    for chunk in speaker.stream(text):
        if first is None and len(chunk.data):
            first = time.perf_counter() - t0
        samples += len(chunk.data)
    wall = time.perf_counter() - t0
    return {"ttfa": first or wall, "wall": wall, "audio": samples / speaker.sample_rate}


def run(args: argparse.Namespace) -> Report:
    from engine import EMBEDDED_VOICE_NAME, TTS

    repeat = 1 if args.quick else args.repeat
    texts = dict(list(TEXTS.items())[:1]) if args.quick else TEXTS
    speaker = TTS().load(EMBEDDED_VOICE_NAME).prepare(warmup=True).speakers[EMBEDDED_VOICE_NAME]
    report = Report(f"Embedded voice {EMBEDDED_VOICE_NAME}: first audio and RTF")
    rows = []
    for label, text in texts.items():
        runs = alternate(
            {
                "pyopenjtalk.tts (baseline)": partial(baseline, text),
                "engine Speaker.stream": partial(engine_stream, speaker, text),
            },
            repeat,
        )
        base = median(r["ttfa"] for r in runs["pyopenjtalk.tts (baseline)"])
        for path, rs in runs.items():
            ttfa, wall = median(r["ttfa"] for r in rs), median(r["wall"] for r in rs)
            audio = rs[-1]["audio"]
            rows.append(
                (label, path, f"{ttfa * 1000:.0f}", f"{ttfa / base:.2f}", f"{wall / audio:.3f}")
            )
    report.note(f"Medians of {repeat}; TTFA / base: against `pyopenjtalk.tts` of the same text.")
    report.table(["text", "path", "TTFA ms", "TTFA / base", "RTF"], rows, "llrrr")
    return report
