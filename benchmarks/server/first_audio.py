"""First audio and end through each front end of one real server, against `pyopenjtalk.tts`
of the whole text (the baseline, in this process, same run; its time is its first audio).

    python -m benchmarks.server first-audio --repeat 7

The program (`--http`) serves `--voice` (default the embedded `openjtalk-mei`). Texts of 1, 3
and 12 sentences (`benchmarks.engine.embedded`) go through every path in turn, `--repeat`
rounds: Wyoming one-shot `synthesize` and streamed (8-character deltas back to back), timed
by a listener that keeps time (`benchmarks.lib.wyoming.listen`), and streamed with a 2 s pause
after the first sentence's chunk (an LLM calling a tool: the first audio must not wait for
the next chunk, `--stream-quiet`); the web page's
`POST /api/speak`, read as the browser's `fetch` reads it; `say --server URI --play` and
`say --play` (the voice loaded by `say` itself), started as a cron job would start them, with
a stand-in `aplay` first on PATH noting when its first and last bytes arrive (from the start
of the process: interpreter and imports included).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path

from benchmarks.engine.embedded import BASELINE, TEXTS, baseline
from benchmarks.lib import REPO
from benchmarks.lib.procs import Server, program_env
from benchmarks.lib.report import Report
from benchmarks.lib.stats import Figures, alternate, medians
from benchmarks.lib.wyoming import listen
from engine.text.splitter import split_sentences
from tests.helpers.net import free_port
from wyoming_hayakoe.client import ServerAddress, WyomingClient, deltas_of

RESULT = None
PAUSE_S = 2.0
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


async def speak_http(url: str, text: str, voice: str) -> Figures:
    """One `POST /api/speak`: first PCM bytes, end, seconds of audio."""
    import aiohttp

    async with aiohttp.ClientSession() as session:
        t0 = time.perf_counter()
        body, headers = {"text": text, "voice": voice}, {"Origin": url.rstrip("/")}
        async with session.post(url + "api/speak", json=body, headers=headers) as r:
            r.raise_for_status()
            rate, first, size = int(r.headers["X-Sample-Rate"]), None, 0
            async for chunk in r.content.iter_any():
                first = first or time.perf_counter() - t0
                size += len(chunk)
        end = time.perf_counter() - t0
    return {"ttfa": first or end, "wall": end, "audio": size / 2 / rate}


def say(args: list[str], text: str, work: Path) -> Figures:
    """One `say ... --play` with the stand-in player: first audio and end from the start."""
    times = work / "times"
    times.unlink(missing_ok=True)
    path = f"{work}{os.pathsep}{os.environ.get('PATH', '')}"
    env = program_env({"PATH": path, "BENCH_PLAYER_TIMES": str(times)})
    started = time.time()
    argv = [sys.executable, "-m", "wyoming_hayakoe", "say", text, "--play", *args]
    subprocess.run(argv, env=env, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    first, end = (float(x) for x in times.read_text().split())
    return {"ttfa": first - started, "wall": end - started, "audio": float("nan")}


def paths(server: Server, url: str, voice: str, work: Path) -> dict[str, Callable[[str], Figures]]:
    """Each front end: text → figures."""

    def paused(text: str) -> Figures:
        """The first sentence in one chunk, 2 s of nothing, the rest in 8-character deltas;
        first audio from the first chunk (sent as the connection opens)."""
        first = split_sentences(text)[0]
        rest = text[text.index(first) + len(first) :]

        async def deltas() -> AsyncIterator[str]:
            yield first
            await asyncio.sleep(PAUSE_S)
            for delta in deltas_of(rest, 8):
                yield delta

        client = WyomingClient(ServerAddress("127.0.0.1", server.port), timeout=600.0)
        spoken = asyncio.run(client.speak_streamed(deltas(), voice))
        audio = spoken.frames / spoken.rate
        return {"ttfa": spoken.first_audio_s or 0.0, "wall": spoken.total_s, "audio": audio}

    def wyoming(text: str, streamed: bool) -> Figures:
        listened = listen("127.0.0.1", server.port, text, voice, streamed=streamed, chunk_chars=8)
        heard = asyncio.run(listened)
        return {"ttfa": heard.first_audio_s, "wall": heard.total_s, "audio": heard.clock.audio_s}

    return {
        BASELINE: baseline,
        "Wyoming synthesize": partial(wyoming, streamed=False),
        "Wyoming streaming (8-character deltas)": partial(wyoming, streamed=True),
        "Wyoming streaming, 2 s pause after the first sentence": paused,
        "page POST /api/speak": lambda text: asyncio.run(speak_http(url, text, voice)),
        "say --server": partial(say, ["--server", server.uri, "--voice", voice], work=work),
        "say (voice loaded by say)": partial(say, ["--voice", voice], work=work),
    }


def run(args: argparse.Namespace) -> Report:
    report = Report(f"First audio by front end, voice {args.voice}")
    texts = dict(list(TEXTS.items())[:1]) if args.quick else TEXTS
    reps = 1 if args.quick else args.repeat
    http = f"127.0.0.1:{free_port()}"
    server = Server(["--http", http, "--voice", args.voice], label="first-audio")
    with tempfile.TemporaryDirectory(prefix="first-audio-") as tmp, server:
        work = Path(tmp)
        (work / "aplay").write_text(PLAYER.format(python=sys.executable))
        (work / "aplay").chmod(0o755)
        asyncio.run(server.wait_ready())
        ways = paths(server, f"http://{http}/", args.voice, work)
        for name in list(ways)[1:4]:  # warm-up: the connection paths, once each
            ways[name]("はい。")
        runs = {
            label: alternate({name: partial(way, text) for name, way in ways.items()}, reps)
            for label, text in texts.items()
        }
    rows = []
    for label, per in runs.items():
        base = medians(per[BASELINE])["ttfa"]
        audio = medians(per["Wyoming synthesize"])["audio"]
        for name, figures in per.items():
            ttfa, wall = (medians(figures)[k] for k in ("ttfa", "wall"))
            row = [f"{ttfa * 1000:.0f}", f"{ttfa / base:.2f}", f"{wall * 1000:.0f}"]
            rows.append([label, name, *row, f"{wall / audio:.3f}"])
    report.note(
        f"Medians of {reps} rounds (paths in turn, order reversed every other round). TTFA / "
        "base: against `pyopenjtalk.tts` of the same text; RTF: end / audio length; `say` rows "
        "from the start of its process."
    )
    report.table(["text", "path", "TTFA ms", "TTFA / base", "end ms", "RTF"], rows, "llrrrr")
    report.data["runs"] = runs
    return report
