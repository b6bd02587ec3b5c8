"""The web page's "Speak" against Wyoming: time to the first audio and to the end, same server.

Starts the real program (`python -m wyoming_hayakoe --http ...`) on the embedded voice, then
sends the same text alternately as a Wyoming one-shot `synthesize` (the time to the first
`audio-chunk`, `wyoming_client.listen`) and as the page sends it, ``POST /api/speak`` (the
time to the first PCM bytes of the streamed answer, read as the browser's `fetch` reads it),
and prints the medians and their ratios (HTTP / Wyoming). Run:

    python benchmarks/bench_web.py [--rounds 10] [--voice openjtalk-mei]

The figures are for the embedded voice (HTS; whole sentences), which needs no download.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

import aiohttp  # noqa: E402
from wyoming_client import listen, wait_ready  # noqa: E402

from tests.helpers.net import free_port  # noqa: E402

TEXT = "おはようございます。今日の天気は晴れ、最高気温は二十三度です。傘はいりません。"


async def speak_http(url: str, text: str, voice: str) -> tuple[float, float, float]:
    """(first audio, end, audio seconds) of one ``POST /api/speak``."""
    async with aiohttp.ClientSession() as session:
        t0 = time.perf_counter()
        async with session.post(
            url + "api/speak", json={"text": text, "voice": voice}, headers={"Origin": url[:-1]}
        ) as r:
            r.raise_for_status()
            rate = int(r.headers["X-Sample-Rate"])
            first = None
            size = 0
            async for chunk in r.content.iter_any():
                if chunk and first is None:
                    first = time.perf_counter() - t0
                size += len(chunk)
        end = time.perf_counter() - t0
    return (first if first is not None else end), end, size / 2 / rate


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--voice", default="openjtalk-mei")
    args = p.parse_args()
    port, http_port = free_port(), free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wyoming_hayakoe",
            "--uri",
            f"tcp://127.0.0.1:{port}",
            "--http",
            f"127.0.0.1:{http_port}",
            "--voice",
            args.voice,
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{http_port}/"
    try:
        await wait_ready("127.0.0.1", port, timeout=120)
        await listen("127.0.0.1", port, TEXT, args.voice, streamed=False)  # warm both paths
        await speak_http(url, TEXT, args.voice)
        wy_first, wy_end, web_first, web_end, audio = [], [], [], [], []
        for _ in range(args.rounds):
            heard = await listen("127.0.0.1", port, TEXT, args.voice, streamed=False)
            wy_first.append(heard.first_audio_s)
            wy_end.append(heard.total_s)
            first, end, seconds = await speak_http(url, TEXT, args.voice)
            web_first.append(first)
            web_end.append(end)
            audio.append(seconds)
    finally:
        proc.terminate()
        proc.wait(30)
    med = statistics.median
    print(f"voice {args.voice}, {args.rounds} rounds each, alternating; text {len(TEXT)} chars")
    print(f"audio {med(audio):.2f} s per request")
    print("| path | first audio (median) | end (median) | RTF |")
    print("| --- | --- | --- | --- |")
    for name, first, end in (
        ("Wyoming synthesize", wy_first, wy_end),
        ("HTTP /api/speak", web_first, web_end),
    ):
        rtf = med(end) / med(audio)
        print(f"| {name} | {med(first) * 1000:.0f} ms | {med(end) * 1000:.0f} ms | {rtf:.3f} |")
    print(
        f"HTTP / Wyoming: first audio {med(web_first) / med(wy_first):.2f}x, "
        f"end {med(web_end) / med(wy_end):.2f}x"
    )


if __name__ == "__main__":
    asyncio.run(main())
