"""Every door after the request service (issue 54) against the code before it.

    python -m benchmarks.server doors --repeat 9            # against BASE (default below)
    python -m benchmarks.server doors --base 2ee64b6 --voice fullsize

Two server processes on loopback with the same voice and flags: one from a git worktree of
`--base` (the commit before the request service and its bounds), one from this checkout.
Alternating rounds (which server first swaps every round, and the doors' order reverses every
other round) of the same request through each door on each server: Wyoming one-shot
``synthesize`` (first audio, last audio), the page's ``/api/speak`` streamed PCM (first byte,
last byte), OpenAI's ``/v1/audio/speech`` as ``pcm`` (first byte, last byte) and VOICEVOX's
``/synthesis`` of the text's AudioQuery (made before the clock starts; the WAV's last byte).
The audio is the same on both servers, so the ratio of last-byte times is the ratio of the
real-time factors. Idle, then with one core kept busy, in the same run; each figure is the
median of the per-round ratios after / before. The issue's bound: ≤ 1.05 for each.

`--voice small` (default, and `--quick`: 2 rounds, idle): the tests' small voice in fp32,
where the request path's own cost weighs most; `fullsize`: the full-size random-weight voice
in fp32 (its sound is not a trained voice's; its speed and the path's cost are real).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from statistics import median

import aiohttp

from benchmarks.lib import REPO
from benchmarks.lib.procs import Server, program_env
from benchmarks.lib.report import Report, log
from benchmarks.lib.stats import busy_core
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, fullsize_root, server_args, small_root
from tests.helpers.net import free_port
from wyoming_hayakoe.client import WyomingClient

RESULT = "doors"
BASE = "2ee64b6"
"""The last commit before the request service (issue 54)."""
TEXT = "リビングの照明を消しました。エアコンは二十五度の冷房で動いています。"

Timing = tuple[float, float]
"""(first audio, last audio), seconds from the request."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeat", type=int, default=9, help="rounds idle, and again busy")
    p.add_argument("--no-busy", action="store_true", help="skip the one-core-busy rounds")
    p.add_argument("--base", default=BASE, help="the commit to compare against")
    p.add_argument("--voice", choices=("small", "fullsize"), default="small")


class Doors:
    """One server's four doors, timed."""

    def __init__(self, server: Server, page: int, api: int, voice: str) -> None:
        self.wyoming = WyomingClient(server.uri, timeout=300)
        self.page = f"http://127.0.0.1:{page}"
        self.api = f"http://127.0.0.1:{api}"
        self.voice = voice
        self.query: object = None
        self.style = 0

    async def prepare(self, s: aiohttp.ClientSession) -> None:
        async with s.get(f"{self.api}/speakers") as r:
            speakers = {sp["name"]: sp for sp in await r.json()}
        self.style = speakers[self.voice]["styles"][0]["id"]
        params = {"text": TEXT, "speaker": self.style}
        async with s.post(f"{self.api}/audio_query", params=params) as r:
            self.query = await r.json()

    async def wyoming_one_shot(self, s: aiohttp.ClientSession) -> Timing:
        spoken = await self.wyoming.speak(TEXT, self.voice)
        assert spoken.first_audio_s is not None
        return spoken.first_audio_s, spoken.total_s

    async def _streamed(self, s: aiohttp.ClientSession, url: str, body: object) -> Timing:
        t0 = time.perf_counter()
        first = None
        async with s.post(url, json=body) as r:
            assert r.status == 200, await r.text()
            async for _ in r.content.iter_any():
                first = first or time.perf_counter() - t0
        assert first is not None
        return first, time.perf_counter() - t0

    async def page_speak(self, s: aiohttp.ClientSession) -> Timing:
        body = {"text": TEXT, "voice": self.voice}
        return await self._streamed(s, f"{self.page}/api/speak", body)

    async def openai(self, s: aiohttp.ClientSession) -> Timing:
        body = {"model": "tts-1", "voice": self.voice, "input": TEXT, "response_format": "pcm"}
        return await self._streamed(s, f"{self.api}/v1/audio/speech", body)

    async def synthesis(self, s: aiohttp.ClientSession) -> Timing:
        t0 = time.perf_counter()
        url = f"{self.api}/synthesis"
        async with s.post(url, params={"speaker": self.style}, json=self.query) as r:
            assert r.status == 200, await r.text()
            await r.read()
        took = time.perf_counter() - t0
        return took, took  # a whole WAV: its first byte is its last audio

    def table(self) -> dict[str, Callable[[aiohttp.ClientSession], Awaitable[Timing]]]:
        return {
            "Wyoming one-shot": self.wyoming_one_shot,
            "page /api/speak": self.page_speak,
            "OpenAI pcm": self.openai,
            "VOICEVOX /synthesis": self.synthesis,
        }


def worktree(rev: str, where: Path) -> Path:
    """A checkout of `rev` beside this one (git worktree, removed by the caller)."""
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(where), rev],
        check=True,
        capture_output=True,
    )
    return where


Rounds = dict[str, dict[str, list[Timing]]]
"""server label → door → timings, round by round."""


async def _rounds(servers: dict[str, Doors], reps: int) -> Rounds:
    out: Rounds = {label: {door: [] for door in d.table()} for label, d in servers.items()}
    async with aiohttp.ClientSession() as s:
        for doors in servers.values():
            await doors.prepare(s)
            for door in doors.table().values():  # warm: first use allocates
                await door(s)
        labels = list(servers)
        for rep in range(reps):
            order = labels if rep % 2 == 0 else labels[::-1]
            names = list(servers[labels[0]].table())
            names = names if rep % 4 < 2 else names[::-1]
            for name in names:
                for label in order:
                    out[label][name].append(await servers[label].table()[name](s))
    return out


async def measure(
    flags: list[str], voice: str, reps: int, base: Path, busy: bool
) -> dict[str, Rounds]:
    loads = {"idle": False, "one core busy": True} if busy else {"idle": False}
    ports = {label: (free_port(), free_port()) for label in ("before", "after")}
    servers = {
        label: Server(
            [*flags, "--http", f"127.0.0.1:{page}", "--engine-api-port", str(api),
             "--no-library"],
            label=f"doors-{label}",
            env=program_env({"PYTHONPATH": str(root)}),
            cwd=root,
        )
        for label, root, (page, api) in (
            ("before", base, ports["before"]),
            ("after", REPO, ports["after"]),
        )
    }  # fmt: skip
    results: dict[str, Rounds] = {}
    with servers["before"], servers["after"]:
        for server in servers.values():
            await server.wait_ready()
        doors = {label: Doors(server, *ports[label], voice) for label, server in servers.items()}
        for load, spin in loads.items():
            log(f"{reps} rounds, {load}")
            with busy_core(spin):
                results[load] = await _rounds(doors, reps)
    return results


def _ratio(rounds: Rounds, door: str, which: int) -> float:
    after, before = rounds["after"][door], rounds["before"][door]
    return median([a[which] / b[which] for a, b in zip(after, before, strict=True)])


def run(args: argparse.Namespace) -> Report:
    reps = 2 if args.quick else args.repeat
    busy = not (args.quick or args.no_busy)
    if args.voice == "fullsize" and not args.quick:
        root, voice = fullsize_root(), VOICE_NAME
        flags = [*server_args(root), "--precision", "fp32"]
    else:
        root, voice = small_root(), SMALL_VOICE
        flags = [*server_args(root, SMALL_VOICE), "--precision", "fp32"]
    with tempfile.TemporaryDirectory() as tmp:
        base = worktree(args.base, Path(tmp) / "base")
        try:
            flags += ["--cache-dir", str(Path(tmp) / "cache")]
            results = asyncio.run(measure(flags, voice, reps, base, busy))
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)],
                check=False,
                capture_output=True,
            )
    report = Report(
        f"Each door after the request service against {args.base}, {reps} alternating "
        f"rounds per load, {voice} in fp32" + (" (random weights)" if voice == VOICE_NAME else "")
    )
    rows = []
    for load, rounds in results.items():
        for door in rounds["after"]:
            before = median(t[1] for t in rounds["before"][door])
            after = median(t[1] for t in rounds["after"][door])
            rows.append(
                [
                    load,
                    door,
                    f"{before:.3f}",
                    f"{after:.3f}",
                    f"{_ratio(rounds, door, 0):.3f}",
                    f"{_ratio(rounds, door, 1):.3f}",
                ]
            )
    report.table(
        ["load", "door", "before, last s", "after, last s", "first audio a/b", "RTF a/b"],
        rows,
        align="llrrrr",
    )
    report.note(
        "a/b: the median of the per-round ratios after / before (the same request, the same "
        "audio). First audio: the first audio event or body byte; RTF: the last byte's time "
        "(the audio is the same). The issue's bound: ≤ 1.05 for each."
    )
    report.data.update(
        base=args.base,
        ratios={
            load: {
                door: {"first": _ratio(r, door, 0), "rtf": _ratio(r, door, 1)}
                for door in r["after"]
            }
            for load, r in results.items()
        },
    )
    return report
