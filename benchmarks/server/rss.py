"""Memory of a real server process, for sizing containers (Kubernetes requests and limits).

For each configuration a server is started as its own process (`python -m wyoming_hayakoe`)
on loopback and measured with psutil: RSS once it says Ready (voices loaded and prepared),
the peak RSS while it answers `--requests` synthesize requests (sampled every 20 ms), and
RSS after them (what a warm, idle replica holds). Configurations: the embedded voice
`openjtalk-mei`, and a neural voice with the real JP-Extra shapes and the full-size int8
BERT (random weights: memory depends on shapes, not values; `benchmarks.lib.fullsize`;
`--quick`: the tests' small voice instead, 2 requests).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile

from benchmarks.lib.procs import Server
from benchmarks.lib.report import Report
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, server_args
from wyoming_hayakoe.client import WyomingClient

RESULT = None
TEXTS = [
    "こんにちは、今日はいい天気ですね。",
    "リビングの照明を消しました。エアコンは二十五度の冷房で動いています。",
    "明日の天気は晴れのち曇り、最高気温は二十八度、降水確率は二十パーセントです。",
]
MIB = 2**20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--requests", type=int, default=15)


async def measure(label: str, args: list[str], requests: int, voice: str) -> list[object]:
    """[label, s to Ready, RSS at Ready, peak while speaking, idle after] (MiB)."""
    with tempfile.TemporaryDirectory() as cache:
        with Server([*args, "--cache-dir", cache], label=f"rss-{voice}") as server:
            ready_s = await server.wait_ready()
            ready = peak = server.usage()[0]
            stop = asyncio.Event()

            async def sample() -> None:
                nonlocal peak
                while not stop.is_set():
                    peak = max(peak, server.usage()[0])
                    await asyncio.sleep(0.02)

            sampler = asyncio.create_task(sample())
            for i in range(requests):
                spoken = await WyomingClient(server.uri).speak(TEXTS[i % len(TEXTS)], voice)
                assert spoken.seconds > 0.3, f"{label}: no audio"
            stop.set()
            await sampler
            await asyncio.sleep(1.0)
            idle = server.usage()[0]
    return [
        label,
        f"{ready_s:.1f}",
        f"{ready / MIB:,.0f}",
        f"{peak / MIB:,.0f}",
        f"{idle / MIB:,.0f}",
    ]


def run(args: argparse.Namespace) -> Report:
    from benchmarks.lib.voices import fullsize_root, small_root

    requests = 2 if args.quick else args.requests
    if args.quick:
        neural = ("small random-weight voice", server_args(small_root(), SMALL_VOICE), SMALL_VOICE)
    else:
        neural = ("full-size neural voice (int8 BERT)", server_args(fullsize_root()), VOICE_NAME)
    runs = [("embedded openjtalk-mei", ["--voice", "openjtalk-mei"], "openjtalk-mei"), neural]
    rows = [asyncio.run(measure(label, a, requests, voice)) for label, a, voice in runs]
    report = Report(f"Server RSS, {requests} requests each (MiB)")
    report.table(
        ["configuration", "start → Ready (s)", "RSS at Ready", "peak while speaking", "idle after"],
        rows,
    )
    return report
