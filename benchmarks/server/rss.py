"""Memory of a real server process, for sizing containers (Kubernetes requests and limits).

    python -m benchmarks.server rss

Each configuration is a server process of its own on loopback, measured with psutil: RSS
once it says Ready (voices loaded and prepared), the peak while it answers `--requests`
synthesize requests (sampled every 20 ms), and RSS a second after them (a warm, idle
replica). Configurations: the embedded voice `openjtalk-mei`; a neural voice with the real
JP-Extra shapes and the full-size int8 BERT (random weights: memory depends on shapes, not
values; `benchmarks.lib.fullsize`), `--quick`: the tests' small voice, 2 requests.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile

from benchmarks.lib.procs import Server
from benchmarks.lib.report import Report
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, fullsize_root, server_args, small_root
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


async def measure(args: list[str], voice: str, requests: int) -> list[str]:
    """Seconds to Ready, then RSS at Ready, peak while speaking and idle after (MiB), of a
    server started with `args` asked `requests` times for `voice`."""
    with tempfile.TemporaryDirectory() as cache:
        with Server([*args, "--cache-dir", cache], label=f"rss-{voice}") as server:
            ready_s = await server.wait_ready()
            ready = peak = server.usage()[0]
            done = asyncio.Event()

            async def sample() -> None:
                nonlocal peak
                while not done.is_set():
                    peak = max(peak, server.usage()[0])
                    await asyncio.sleep(0.02)

            sampler = asyncio.create_task(sample())
            for i in range(requests):
                spoken = await WyomingClient(server.uri).speak(TEXTS[i % len(TEXTS)], voice)
                assert spoken.seconds > 0.3, f"{voice}: no audio"
            done.set()
            await sampler
            await asyncio.sleep(1.0)
            idle = server.usage()[0]
    return [f"{ready_s:.1f}", *(f"{b / MIB:,.0f}" for b in (ready, peak, idle))]


def run(args: argparse.Namespace) -> Report:
    requests = 2 if args.quick else args.requests
    if args.quick:
        neural = ("small random-weight voice", server_args(small_root(), SMALL_VOICE), SMALL_VOICE)
    else:
        neural = ("full-size neural voice (int8 BERT)", server_args(fullsize_root()), VOICE_NAME)
    runs = [("embedded openjtalk-mei", ["--voice", "openjtalk-mei"], "openjtalk-mei"), neural]
    report = Report(f"Server RSS, {requests} requests each (MiB)")
    report.table(
        ["configuration", "start → Ready (s)", "RSS at Ready", "peak while speaking", "idle after"],
        [[label, *asyncio.run(measure(flags, voice, requests))] for label, flags, voice in runs],
    )
    return report
