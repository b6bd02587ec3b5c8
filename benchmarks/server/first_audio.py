"""First audio and end through each front end of one real server, against `pyopenjtalk.tts`
of the whole text (the baseline, this process, same run; its time is its first audio).

The program (`python -m wyoming_hayakoe --http ...`) serves `--voice` (default the embedded
`openjtalk-mei`, which needs no download); the same text goes, in turn, `--repeat` rounds:

- Wyoming one-shot `synthesize` and streamed (`synthesize-start`, 8-character deltas back to
  back, `synthesize-stop`), timed by a listener that keeps time (`benchmarks.lib.wyoming`);
- the web page's ``POST /api/speak``, read as the browser's `fetch` reads it (first PCM bytes);
- `say --server URI --play` and `say --play` (the voice loaded by `say` itself), started as a
  cron job would start them, with a stand-in ``aplay`` first on PATH that notes when its
  first and last bytes arrive (from the start of the process: interpreter and imports
  included).

Texts of 1, 3 and 12 sentences (`benchmarks.engine.embedded`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.engine.embedded import TEXTS, baseline
from benchmarks.lib import REPO
from benchmarks.lib.procs import Server, program_env
from benchmarks.lib.report import Report
from benchmarks.lib.stats import median
from benchmarks.lib.wyoming import listen
from tests.helpers.net import free_port

RESULT = None
PLAYER = """#!{python}
import os, sys, time
first = None
while chunk := sys.stdin.buffer.read1(1 << 20):
    first = first or time.time()
with open(os.environ["BENCH_PLAYER_TIMES"], "w") as f:
    f.write(f"{{first}} {{time.time()}}")
"""
"""A stand-in `aplay`: the wall-clock times of its first and last bytes."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--voice", default="openjtalk-mei")


async def speak_http(url: str, text: str, voice: str) -> dict[str, float]:
    """One ``POST /api/speak``: first PCM bytes, end, seconds of audio."""
    import aiohttp

    async with aiohttp.ClientSession() as session:
        t0 = time.perf_counter()
        headers = {"Origin": url.rstrip("/")}
        async with session.post(
            url + "api/speak", json={"text": text, "voice": voice}, headers=headers
        ) as r:
            r.raise_for_status()
            rate, first, size = int(r.headers["X-Sample-Rate"]), None, 0
            async for chunk in r.content.iter_any():
                first = first or time.perf_counter() - t0
                size += len(chunk)
        end = time.perf_counter() - t0
    return {"ttfa": first or end, "wall": end, "audio": size / 2 / rate}


def say(args: list[str], text: str, work: Path) -> dict[str, float]:
    """One `say ... --play` with the stand-in player: first audio and end from the start."""
    times = work / "times"
    times.unlink(missing_ok=True)
    env = program_env({"PATH": f"{work}{os.pathsep}{os.environ.get('PATH', '')}"})
    env["BENCH_PLAYER_TIMES"] = str(times)
    started = time.time()
    argv = [sys.executable, "-m", "wyoming_hayakoe", "say", text, "--play", *args]
    subprocess.run(argv, env=env, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    first, end = (float(x) for x in times.read_text().split())
    return {"ttfa": first - started, "wall": end - started, "audio": float("nan")}


async def measure(args: argparse.Namespace, work: Path) -> dict[str, dict[str, list[dict]]]:
    http = free_port()
    url = f"http://127.0.0.1:{http}/"
    texts = dict(list(TEXTS.items())[:1]) if args.quick else TEXTS
    repeat = 1 if args.quick else args.repeat
    out: dict[str, dict[str, list[dict]]] = {label: {} for label in texts}
    with Server(["--http", f"127.0.0.1:{http}", "--voice", args.voice], label="first-audio") as srv:
        await srv.wait_ready()

        async def wyoming(text: str, streamed: bool) -> dict[str, float]:
            heard = await listen(
                "127.0.0.1", srv.port, text, args.voice, streamed=streamed, chunk_chars=8
            )
            return {
                "ttfa": heard.first_audio_s,
                "wall": heard.total_s,
                "audio": heard.clock.audio_s,
            }

        paths = {
            "pyopenjtalk.tts (baseline)": lambda t: asyncio.to_thread(baseline, t),
            "Wyoming synthesize": lambda t: wyoming(t, False),
            "Wyoming streaming (8-character deltas)": lambda t: wyoming(t, True),
            "page POST /api/speak": lambda t: speak_http(url, t, args.voice),
            "say --server": lambda t: asyncio.to_thread(
                say, ["--server", srv.uri, "--voice", args.voice], t, work
            ),
            "say (voice loaded by say)": lambda t: asyncio.to_thread(
                say, ["--voice", args.voice], t, work
            ),
        }
        for path in list(paths)[1:4]:  # warm-up: the connection paths, once each
            await paths[path]("はい。")
        for label, text in texts.items():
            names = list(paths)
            for rep in range(repeat):
                for name in names if rep % 2 == 0 else names[::-1]:
                    out[label].setdefault(name, []).append(await paths[name](text))
    return out


def run(args: argparse.Namespace) -> Report:
    with tempfile.TemporaryDirectory(prefix="first-audio-") as tmp:
        work = Path(tmp)
        player = work / "aplay"
        player.write_text(PLAYER.format(python=sys.executable))
        player.chmod(0o755)
        runs = asyncio.run(measure(args, work))
    report = Report(f"First audio by front end, voice {args.voice}")
    rows = []
    for label, per in runs.items():
        base = median(r["ttfa"] for r in per["pyopenjtalk.tts (baseline)"])
        audio = median(r["audio"] for r in per["Wyoming synthesize"])
        for name, rs in per.items():
            ttfa, wall = median(r["ttfa"] for r in rs), median(r["wall"] for r in rs)
            rows.append(
                (
                    label,
                    name,
                    f"{ttfa * 1000:.0f}",
                    f"{ttfa / base:.2f}",
                    f"{wall * 1000:.0f}",
                    f"{wall / audio:.3f}",
                )
            )
    n = len(next(iter(next(iter(runs.values())).values())))
    report.note(
        f"Medians of {n} rounds (paths in turn, order reversed every other round). TTFA / base: "
        "against `pyopenjtalk.tts` of the same text; RTF: end / audio length; `say` rows from "
        "the start of its process."
    )
    report.table(["text", "path", "TTFA ms", "TTFA / base", "end ms", "RTF"], rows, "llrrrr")
    report.data["runs"] = runs
    return report
