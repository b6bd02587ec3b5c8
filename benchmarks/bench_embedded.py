"""Time-to-first-audio (TTFA) and real-time factor (RTF) of the embedded OpenJTalk voice.

Measured three ways, in one run, on the same texts:

- baseline: `pyopenjtalk.tts(text)` — the whole text at once, as the library does it
  (its time is also its time to first audio);
- engine:   `Speaker.stream(text)` — sentence by sentence;
- wyoming:  the real server (``python -m wyoming_hayakoe`` in a subprocess) driven by the
  wyoming library's TCP client — one-shot ``synthesize`` and streaming
  (``synthesize-start``/``synthesize-chunk`` of 8 characters/``synthesize-stop``).

TTFA is from the request to the first audio; RTF = synthesis time / audio duration (lower
is faster). Ratios are against the baseline's time for the same text.

    python benchmarks/bench_embedded.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TEXTS = {
    "short (1 sentence)": "こんにちは、今日はいい天気ですね。",
    "medium (3 sentences)": (
        "明日の天気は晴れのち曇りです。最高気温は二十三度の予想です。傘は要らないでしょう。"
    ),
    "long (12 sentences)": (
        "リビングの電気を消しました。寝室のエアコンを二十六度に設定しました。"
        "玄関の鍵は閉まっています。明日の朝七時にアラームをセットしました。"
        "今週の予定は三件あります。月曜日は歯医者の予約があります。"
        "水曜日は友達と夕食の約束です。金曜日は会社の飲み会があります。"
        "冷蔵庫の牛乳が少なくなっています。買い物リストに追加しました。"
        "今夜は雨が降るかもしれません。洗濯物を取り込んでおきましょう。"
    ),
}


def _median(values: list[float]) -> float:
    return statistics.median(values)


def bench_baseline(text: str, repeat: int) -> tuple[float, float]:
    import pyopenjtalk

    times, duration = [], 0.0
    for _ in range(repeat):
        t0 = time.perf_counter()
        audio, sr = pyopenjtalk.tts(text)
        times.append(time.perf_counter() - t0)
        duration = len(audio) / sr
    return _median(times), duration


def bench_engine(speaker, text: str, repeat: int) -> tuple[float, float, float]:
    ttfa, total, duration = [], [], 0.0
    for _ in range(repeat):
        t0 = time.perf_counter()
        first = None
        samples = 0
        for chunk in speaker.stream(text):
            if first is None and len(chunk.data):
                first = time.perf_counter() - t0
            samples += len(chunk.data)
        total.append(time.perf_counter() - t0)
        ttfa.append(first or 0.0)
        duration = samples / speaker.sample_rate
    return _median(ttfa), _median(total), duration


async def _wyoming_once(port: int, text: str, streaming: bool) -> tuple[float, float, float]:
    from wyoming.client import AsyncTcpClient
    from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop

    async with AsyncTcpClient("127.0.0.1", port) as client:
        t0 = time.perf_counter()
        if streaming:
            await client.write_event(SynthesizeStart().event())
            for i in range(0, len(text), 8):
                await client.write_event(SynthesizeChunk(text=text[i : i + 8]).event())
            await client.write_event(SynthesizeStop().event())
            end = "synthesize-stopped"
        else:
            await client.write_event(Synthesize(text=text).event())
            end = "audio-stop"
        first, nbytes, rate = None, 0, 48000
        while True:
            event = await client.read_event()
            assert event is not None
            if event.type == "audio-chunk" and event.payload:
                if first is None:
                    first = time.perf_counter() - t0
                nbytes += len(event.payload)
                rate = event.data["rate"]
            if event.type == end:
                break
        return first or 0.0, time.perf_counter() - t0, nbytes / 2 / rate


def bench_wyoming(port: int, text: str, repeat: int, streaming: bool) -> tuple[float, float, float]:
    runs = [asyncio.run(_wyoming_once(port, text, streaming)) for _ in range(repeat)]
    return _median([r[0] for r in runs]), _median([r[1] for r in runs]), runs[-1][2]


def start_server() -> tuple[subprocess.Popen, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "wyoming_hayakoe", "--uri", f"tcp://127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "Ready" in line:
            break
    else:
        raise RuntimeError("server did not start")
    return proc, port


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from engine import EMBEDDED_VOICE_NAME, TTS

    speaker = TTS().load(EMBEDDED_VOICE_NAME).prepare(warmup=True).speakers[EMBEDDED_VOICE_NAME]
    proc, port = start_server()
    rows = []
    try:
        bench_wyoming(port, "はい。", 1, False)  # warm the connection path
        for label, text in TEXTS.items():
            base_t, base_d = bench_baseline(text, args.repeat)
            e_ttfa, e_total, e_dur = bench_engine(speaker, text, args.repeat)
            w_ttfa, w_total, w_dur = bench_wyoming(port, text, args.repeat, streaming=False)
            s_ttfa, s_total, s_dur = bench_wyoming(port, text, args.repeat, streaming=True)
            rows.append((label, "baseline pyopenjtalk.tts", base_t, base_t, base_d, base_t))
            rows.append((label, "engine Speaker.stream", e_ttfa, e_total, e_dur, base_t))
            rows.append((label, "wyoming synthesize", w_ttfa, w_total, w_dur, base_t))
            rows.append((label, "wyoming streaming", s_ttfa, s_total, s_dur, base_t))
    finally:
        proc.terminate()
        proc.wait(timeout=15)

    print(f"embedded voice {EMBEDDED_VOICE_NAME}, {os.cpu_count()} CPU(s), median of {args.repeat}")
    header = (
        f"{'text':22} {'path':26} {'TTFA ms':>8} {'TTFA/base':>9} "
        f"{'total ms':>9} {'audio s':>8} {'RTF':>6}"
    )
    print(header)
    print("-" * len(header))
    for label, path, ttfa, total, dur, base in rows:
        print(
            f"{label:22} {path:26} {ttfa * 1000:8.0f} {ttfa / base:9.2f} {total * 1000:9.0f} "
            f"{dur:8.2f} {total / dur:6.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
