"""The engine APIs against Wyoming on the same server, and the memory they cost (issue 47).

    python -m benchmarks.server engine-api --repeat 9

Two server processes on loopback with the same voice: one with `--engine-api-port`, one
without. On the first, alternating rounds (order reversed every other round) of: a Wyoming
one-shot `synthesize` of the text (time to its last audio) against `POST /synthesis` of the
same text's `AudioQuery` (the query made before the clock starts; time to the WAV's last
byte), and Wyoming streamed text (the whole text as one delta; time to first audio) against
OpenAI's `POST /v1/audio/speech` streamed as `pcm` (time to the first body byte). The
rounds run idle, then with one core kept busy, in the same run; each figure is the median of
the per-round ratios. Memory: both servers' RSS at Ready and after every round (the one
without the APIs answers the same Wyoming requests). The issue's bounds: `/synthesis` ≤
1.05× Wyoming one-shot, OpenAI first byte ≤ 1.1× Wyoming first audio, RSS with the APIs ≤
1.05× without.

The full-size random-weight voice (`benchmarks.lib.voices`) runs int8 (`--precision int8`),
its graphs made once by `wyoming-hayakoe quantize` into `benchmarks/.cache/engine-api/`
(minutes, the first time only). `--quick`: the tests' small voice in fp32, 2 rounds, idle.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import tempfile
import time
from pathlib import Path
from statistics import median

import aiohttp

from benchmarks.lib import CACHE
from benchmarks.lib.procs import OURS, Server, program_env
from benchmarks.lib.report import Report, log
from benchmarks.lib.stats import busy_core
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, fullsize_root, server_args, small_root
from tests.helpers.net import free_port
from wyoming_hayakoe.client import WyomingClient

RESULT = "engine-api"
TEXT = "リビングの照明を消しました。エアコンは二十五度の冷房で動いています。"
MIB = 2**20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeat", type=int, default=9, help="rounds idle, and again busy")
    p.add_argument("--no-busy", action="store_true", help="skip the one-core-busy rounds")


async def _rounds(server: Server, api: str, voice: str, reps: int) -> dict[str, list[float]]:
    client = WyomingClient(server.uri, timeout=300)
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{api}/speakers") as r:
            speakers = {sp["name"]: sp for sp in await r.json()}
        style = speakers[voice]["styles"][0]["id"]
        async with s.post(f"{api}/audio_query", params={"text": TEXT, "speaker": style}) as r:
            query = await r.json()

        async def one_shot() -> float:
            t0 = time.perf_counter()
            await client.speak(TEXT, voice)
            return time.perf_counter() - t0

        async def synthesis() -> float:
            t0 = time.perf_counter()
            async with s.post(f"{api}/synthesis", params={"speaker": style}, json=query) as r:
                assert r.status == 200, await r.text()
                await r.read()
            return time.perf_counter() - t0

        async def streamed() -> float:
            spoken = await client.speak_streamed([TEXT], voice)
            assert spoken.first_audio_s is not None
            return spoken.first_audio_s

        async def openai_first() -> float:
            body = {"model": "tts-1", "voice": voice, "input": TEXT, "response_format": "pcm"}
            t0 = time.perf_counter()
            first = None
            async with s.post(f"{api}/v1/audio/speech", json=body) as r:
                assert r.status == 200, await r.text()
                async for _ in r.content.iter_any():
                    first = first or time.perf_counter() - t0
            assert first is not None
            return first

        variants = {
            "wyoming one-shot": one_shot,
            "/synthesis": synthesis,
            "wyoming streamed first audio": streamed,
            "openai first byte": openai_first,
        }
        out: dict[str, list[float]] = {name: [] for name in variants}
        names = list(variants)
        for rep in range(reps):
            for name in names if rep % 2 == 0 else names[::-1]:
                out[name].append(await variants[name]())
    return out


PAIRS = {"/synthesis": "wyoming one-shot", "openai first byte": "wyoming streamed first audio"}
"""Each API path → the Wyoming path it is held against, round by round."""


def quantize(root: Path, voice: str, cache: Path) -> None:
    """`voice` of `root` in int8 in `cache`, made by the real command (kept when valid:
    seconds)."""
    log(f"wyoming-hayakoe quantize into {cache} (minutes the first time)")
    subprocess.run(
        [
            *OURS,
            "quantize",
            "--name",
            voice,
            "--bert-source",
            str(root),
            "--cache-dir",
            str(cache),
            str(root),
        ],
        check=True,
        env=program_env(),
    )


async def measure(
    flags: list[str], voice: str, reps: int, cache: Path, busy: bool
) -> tuple[dict[str, dict[str, list[float]]], list[int]]:
    port = free_port()
    with_api = Server(
        [*flags, "--cache-dir", str(cache), "--engine-api-port", str(port)], label="api-on"
    )
    without = Server([*flags, "--cache-dir", str(cache)], label="api-off")
    loads = {"idle": False, "one core busy": True} if busy else {"idle": False}
    times: dict[str, dict[str, list[float]]] = {}
    with with_api, without:
        await with_api.wait_ready()
        await without.wait_ready()
        rss = [with_api.usage()[0], without.usage()[0]]
        plain = WyomingClient(without.uri, timeout=300)
        for load, spin in loads.items():
            log(f"{reps} rounds, {load}")
            with busy_core(spin):
                times[load] = await _rounds(with_api, f"http://127.0.0.1:{port}", voice, reps)
            for _ in range(reps * 2):  # the same Wyoming requests on the server without
                await plain.speak(TEXT, voice)
                await plain.speak_streamed([TEXT], voice)
        rss += [with_api.usage()[0], without.usage()[0]]
    return times, rss


def _paired(times: dict[str, list[float]], path: str) -> float:
    base = PAIRS[path]
    return median([a / b for a, b in zip(times[path], times[base], strict=True)])


def run(args: argparse.Namespace) -> Report:
    reps = 2 if args.quick else args.repeat
    if args.quick:
        flags, voice = server_args(small_root(), SMALL_VOICE), SMALL_VOICE
        with tempfile.TemporaryDirectory() as tmp:
            times, rss = asyncio.run(measure(flags, voice, reps, Path(tmp), busy=False))
    else:
        root, voice = fullsize_root(), VOICE_NAME
        flags = [*server_args(root), "--precision", "int8"]
        cache = CACHE / "engine-api"
        quantize(root, voice, cache)
        times, rss = asyncio.run(measure(flags, voice, reps, cache, busy=not args.no_busy))
    report = Report(
        f"Engine APIs against Wyoming on one server, {reps} alternating rounds per load"
        + ("" if args.quick else ", full-size voice in int8 (random weights)")
    )
    rows = []
    for load, t in times.items():
        m = {name: median(v) for name, v in t.items()}
        for path, base in PAIRS.items():
            rows.append(
                [load, base, f"{m[base]:.3f}", path, f"{m[path]:.3f}", f"{_paired(t, path):.3f}"]
            )
    report.table(
        ["load", "Wyoming", "median s", "engine API", "median s", "API / Wyoming"],
        rows,
        align="llrlrr",
    )
    report.note(
        "Times: one-shot and /synthesis to the last byte of audio; streamed and OpenAI pcm "
        "to the first. The ratio is the median of the per-round ratios. Bounds (issue 47): "
        "/synthesis ≤ 1.05, OpenAI first byte ≤ 1.1."
    )
    report.table(
        ["server", "RSS at Ready (MiB)", "RSS after the rounds (MiB)"],
        [
            ["with the engine APIs", f"{rss[0] / MIB:,.0f}", f"{rss[2] / MIB:,.0f}"],
            ["without", f"{rss[1] / MIB:,.0f}", f"{rss[3] / MIB:,.0f}"],
        ],
    )
    report.note(f"RSS with / without after the rounds: {rss[2] / rss[3]:.3f} (bound ≤ 1.05)")
    report.data.update(
        times=times,
        ratios={load: {p: _paired(t, p) for p in PAIRS} for load, t in times.items()},
        rss=rss,
    )
    return report
