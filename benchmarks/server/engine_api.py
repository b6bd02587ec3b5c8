"""The engine APIs against Wyoming on the same server, and the memory they cost.

    python -m benchmarks.server engine-api --repeat 7 [--busy]

Two server processes on loopback with the same voice: one with `--engine-api-port`, one
without. On the first, rounds (order reversed every other round) of: a Wyoming one-shot
`synthesize` of the text (time to its last audio) against `POST /synthesis` of the same
text's `AudioQuery` (the query made before the clock starts; time to the WAV's last byte),
and Wyoming streamed text (the whole text as one delta; time to first audio) against
OpenAI's `POST /v1/audio/speech` streamed as `pcm` (time to the first body byte). Memory:
both servers' RSS at Ready and after the rounds (the one without the APIs answers the same
Wyoming requests). The issue's bounds: `/synthesis` ≤ 1.05× Wyoming one-shot, OpenAI first
byte ≤ 1.1× Wyoming first audio, RSS with the APIs ≤ 1.05× without. `--quick`: the tests'
small voice, 2 rounds; otherwise the full-size random-weight voice (`benchmarks.lib.voices`).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from statistics import median

import aiohttp

from benchmarks.lib.procs import Server
from benchmarks.lib.report import Report
from benchmarks.lib.stats import busy_core
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, fullsize_root, server_args, small_root
from tests.helpers.net import free_port
from wyoming_hayakoe.client import WyomingClient

RESULT = None
TEXT = "リビングの照明を消しました。エアコンは二十五度の冷房で動いています。"
MIB = 2**20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--busy", action="store_true", help="one core kept busy meanwhile")


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


async def measure(
    flags: list[str], voice: str, reps: int
) -> tuple[dict[str, list[float]], list[int]]:
    with tempfile.TemporaryDirectory() as cache:
        port = free_port()
        with_api = Server(
            [*flags, "--cache-dir", cache, "--engine-api-port", str(port)], label="api-on"
        )
        without = Server([*flags, "--cache-dir", cache], label="api-off")
        with with_api, without:
            await with_api.wait_ready()
            await without.wait_ready()
            ready = [with_api.usage()[0], without.usage()[0]]
            times = await _rounds(with_api, f"http://127.0.0.1:{port}", voice, reps)
            plain = WyomingClient(without.uri, timeout=300)
            for _ in range(reps * 2):
                await plain.speak(TEXT, voice)
                await plain.speak_streamed([TEXT], voice)
            after = [with_api.usage()[0], without.usage()[0]]
    return times, ready + after


def run(args: argparse.Namespace) -> Report:
    reps = 2 if args.quick else args.repeat
    if args.quick:
        flags, voice = server_args(small_root(), SMALL_VOICE), SMALL_VOICE
    else:
        flags, voice = server_args(fullsize_root()), VOICE_NAME
    with busy_core(args.busy):
        times, rss = asyncio.run(measure(flags, voice, reps))
    m = {name: median(v) for name, v in times.items()}
    report = Report(
        f"Engine APIs against Wyoming, {reps} rounds{' (one core busy)' if args.busy else ''}"
    )
    report.table(
        ["path", "median (s)", "against Wyoming"],
        [
            ["wyoming one-shot (to the end)", f"{m['wyoming one-shot']:.3f}", "1.00"],
            [
                "/synthesis (to the end)",
                f"{m['/synthesis']:.3f}",
                f"{m['/synthesis'] / m['wyoming one-shot']:.2f}",
            ],
            ["wyoming streamed (first audio)", f"{m['wyoming streamed first audio']:.3f}", "1.00"],
            [
                "openai streamed pcm (first byte)",
                f"{m['openai first byte']:.3f}",
                f"{m['openai first byte'] / m['wyoming streamed first audio']:.2f}",
            ],
        ],
    )
    report.table(
        ["server", "RSS at Ready (MiB)", "RSS after the rounds (MiB)"],
        [
            ["with the engine APIs", f"{rss[0] / MIB:,.0f}", f"{rss[2] / MIB:,.0f}"],
            ["without", f"{rss[1] / MIB:,.0f}", f"{rss[3] / MIB:,.0f}"],
        ],
    )
    report.note(f"RSS with / without after the rounds: {rss[2] / rss[3]:.3f}")
    return report
