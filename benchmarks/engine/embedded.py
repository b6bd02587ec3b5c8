"""The embedded OpenJTalk voice: time to first audio and real-time factor (time / audio
duration) of the engine's `Speaker.stream` (sentence by sentence) against `pyopenjtalk.tts`
of the whole text (the baseline: its time is its first audio) in one run, on texts of 1, 3
and 12 sentences. Over Wyoming: `python -m benchmarks.server first-audio`.
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from typing import Any

from benchmarks.lib.report import Report
from benchmarks.lib.stats import alternate, medians, ratios, timed

RESULT = None
BASELINE = "pyopenjtalk.tts (baseline)"
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
    """`Speaker.stream` of the text: first audio = its first non-empty chunk."""
    figures = timed(lambda: (chunk for chunk in speaker.stream(text) if len(chunk.data)))
    del figures["cpu"]  # the baseline's figures: first audio, wall, audio
    return {**figures, "audio": speaker.last_pacing.audio_s}


def run(args: argparse.Namespace) -> Report:
    from engine import EMBEDDED_VOICE_NAME, TTS

    repeat = 1 if args.quick else args.repeat
    speaker = TTS().load(EMBEDDED_VOICE_NAME).prepare(warmup=True).speakers[EMBEDDED_VOICE_NAME]
    rows = []
    for label, text in list(TEXTS.items())[: 1 if args.quick else None]:
        engine = partial(engine_stream, speaker, text)
        runs = alternate(
            {BASELINE: partial(baseline, text), "engine Speaker.stream": engine}, repeat
        )
        for path, rounds in runs.items():
            m, r = medians(rounds), ratios(rounds, runs[BASELINE])
            ttfa, rtf = f"{m['ttfa'] * 1000:.0f}", f"{m['wall'] / m['audio']:.3f}"
            rows.append((label, path, ttfa, f"{r['ttfa']:.2f}", rtf))
    report = Report(f"Embedded voice {EMBEDDED_VOICE_NAME}: first audio and RTF")
    report.note(
        f"Medians of {repeat} alternating rounds; TTFA / base: against `pyopenjtalk.tts` of "
        "the same text, round by round."
    )
    report.table(["text", "path", "TTFA ms", "TTFA / base", "RTF"], rows, "llrrr")
    return report
