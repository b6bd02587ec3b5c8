"""Memory of a real server process, for sizing containers (Kubernetes requests and limits).

    python benchmarks/server_rss.py                      # embedded voice, then the full-size one
    python benchmarks/server_rss.py --root DIR --requests 20

For each configuration a server is started as its own process (`python -m wyoming_hayakoe`)
on loopback and measured with psutil:
- RSS once it says Ready (voices loaded and prepared),
- the peak RSS while it answers `--requests` synthesize requests (sampled every 20 ms),
- RSS after them (what a warm, idle replica holds).
Configurations: the embedded voice `openjtalk-mei`, and a neural voice with the real JP-Extra
shapes and the full-size int8 BERT (random weights: memory depends on shapes, not values),
built by `benchmarks/fullsize.py` (pass --root to use a copy built elsewhere).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from engine import layout
from tests.helpers.net import free_port
from tests.helpers.wyoming_client import speak

TEXTS = [
    "こんにちは、今日はいい天気ですね。",
    "リビングの照明を消しました。エアコンは二十五度の冷房で動いています。",
    "明日の天気は晴れのち曇り、最高気温は二十八度、降水確率は二十パーセントです。",
]
MIB = 1024 * 1024


@dataclass
class Figures:
    name: str
    ready_mib: float
    peak_mib: float
    idle_mib: float
    seconds_to_ready: float


async def measure(name: str, args: list[str], requests: int, voice: str | None) -> Figures:
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    with tempfile.TemporaryDirectory() as cache:
        started = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "wyoming_hayakoe",
            "--uri",
            f"tcp://127.0.0.1:{port}",
            "--cache-dir",
            cache,
            *args,
            cwd=REPO,
            env=env,
            stderr=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL,
        )
        assert proc.stderr is not None
        log: list[str] = []
        while "Ready" not in (line := (await proc.stderr.readline()).decode(errors="replace")):
            log.append(line)
            if not line:
                raise RuntimeError(f"{name}: the server exited:\n{''.join(log)}")
        ready_at = time.monotonic() - started
        drain = asyncio.create_task(proc.stderr.read())
        process = psutil.Process(proc.pid)
        ready = process.memory_info().rss
        peak = ready
        stop = asyncio.Event()

        async def sample() -> None:
            nonlocal peak
            while not stop.is_set():
                peak = max(peak, process.memory_info().rss)
                await asyncio.sleep(0.02)

        sampler = asyncio.create_task(sample())
        for i in range(requests):
            spoken = await speak("127.0.0.1", port, TEXTS[i % len(TEXTS)], voice=voice)
            assert spoken.seconds > 0.3, f"{name}: no audio"
        stop.set()
        await sampler
        await asyncio.sleep(1.0)
        idle = process.memory_info().rss
        proc.terminate()
        await proc.wait()
        drain.cancel()
    return Figures(name, ready / MIB, peak / MIB, idle / MIB, ready_at)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root",
        type=Path,
        default=REPO / "benchmarks" / ".cache" / "fullsize",
        help="the full-size voice root (benchmarks/fullsize.py builds it)",
    )
    parser.add_argument("--requests", type=int, default=15)
    opts = parser.parse_args()
    runs = [("embedded openjtalk-mei", ["--voice", "openjtalk-mei"], "openjtalk-mei")]
    if (opts.root / layout.speaker_prefix("bench", "onnx")).is_dir():
        runs.append(
            (
                "full-size neural voice (int8 BERT)",
                ["--voice", f"bench={opts.root}", "--bert-source", str(opts.root)],
                "bench",
            )
        )
    else:
        print(f"no full-size voice under {opts.root}: run benchmarks/fullsize.py", file=sys.stderr)
    results = [await measure(name, args, opts.requests, voice) for name, args, voice in runs]
    print(f"\nserver RSS, {opts.requests} requests each (MiB)")
    print("| configuration | start → Ready (s) | RSS at Ready | peak while speaking | idle after |")
    print("| --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r.name} | {r.seconds_to_ready:.1f} | {r.ready_mib:,.0f} | {r.peak_mib:,.0f} | "
            f"{r.idle_mib:,.0f} |"
        )


if __name__ == "__main__":
    asyncio.run(main())
