"""Soak: many mixed requests against a real server process; does anything grow?

    python -m benchmarks.server soak                    # 1000 requests, embedded + small voice
    python -m benchmarks.server soak --requests 200 --neural none
    python -m benchmarks.server soak --neural fullsize  # the full-size random voice

The program on loopback serves the embedded voice (`openjtalk-mei`) and a neural one (`small`:
the tests' random-weight JP-Extra voice and tiny BERT; `fullsize`: `benchmarks.lib.fullsize`).
Requests go over TCP, `--concurrency` at a time, in a fixed pseudo-random mix: one-shot,
streamed in 4-character deltas, and both abandoned by a connection reset after the first
audio (a stream whose only sentence is still open: after a second); both voices, three styles
each, short to long texts (numbers, Latin words); `describe` every 25th. Every
`--sample-every` requests, once the server is idle, its RSS, open fds and threads are read
(psutil). After the first `--warmup` requests (default a fifth: caches, arenas, lazily made
pools) the goal is RSS within ±5 % of the warm-up sample, fds and threads not above it.
Prints a table, plots soak.png, exits 1 when a goal or a request failed.
`tests/benchmarks/test_soak.py`: 200 requests, the same checks (`--quick`: 100).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from wyoming.audio import AudioChunk
from wyoming.error import Error
from wyoming.event import async_read_event, async_write_events
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeVoice

from benchmarks.lib import RESULTS
from benchmarks.lib.procs import Server, program_env
from benchmarks.lib.report import Report, log, table
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, fullsize_root, small_root
from wyoming_hayakoe.client import WyomingClient, deltas_of

RESULT = "soak"
EMBEDDED = "openjtalk-mei"
STYLES = {EMBEDDED: ("Neutral", "Calm", "Bright"), "neural": ("Neutral", "Happy", "Sad")}
NEURAL = {"small": (SMALL_VOICE, small_root), "fullsize": (VOICE_NAME, fullsize_root)}
RSS_TOLERANCE = 0.05
"""After warm-up, RSS stays within this fraction of the warm-up sample."""
MIB = 2**20

TEXTS = (
    "こんにちは。",
    "はい、キッチンの電気をつけました。",
    "今日はいい天気ですね。散歩に行きましょう！",
    "午後三時十五分に、洗濯が終わりました。",
    "リビングの温度は23.5度、湿度は48%です。",
    "Spotifyで音楽を再生します。ボリュームは30です。",
    "玄関のドアは施錠されています。窓も閉まっています。ほかに何かお手伝いできることはありますか？",
    (
        "本日の予定をお知らせします。午前九時から、駅前の会議室で月例の打ち合わせがあります。"
        "お昼は取引先の方と一緒に、近くのそば屋で食事をする予定です。"
        "帰りにスーパーで牛乳と卵を買うのを忘れないでください。"
    ),
)
KINDS = (("one-shot", 4), ("stream", 4), ("abandon-stream", 1), ("abandon-one-shot", 1))
"""Request kinds and their weights in the mix."""


@dataclass
class SoakConfig:
    """What one soak run does."""

    requests: int = 1000
    sample_every: int = 50
    warmup: int | None = None
    """Requests before the reference sample (default: a fifth, at least one sample interval)."""
    concurrency: int = 4
    seed: int = 0
    neural: str = "small"
    """`small`, `fullsize` or `none` (embedded voice only)."""
    server_args: tuple[str, ...] = ()
    timeout_s: float = 120.0
    """Longest wait for one request's answer."""

    @property
    def warmup_requests(self) -> int:
        every = self.sample_every
        warm = self.warmup if self.warmup is not None else self.requests // 5
        return max(every, (warm + every - 1) // every * every)


@dataclass
class Sample:
    """The server process after `requests` requests."""

    requests: int
    elapsed_s: float
    rss_bytes: int
    fds: int
    threads: int

    def __str__(self) -> str:
        return (
            f"{self.requests:5d} requests  {self.elapsed_s:6.0f} s  RSS "
            f"{self.rss_bytes / MIB:7.1f} MiB  fds {self.fds}  threads {self.threads}"
        )


@dataclass
class SoakResult:
    config: SoakConfig
    samples: list[Sample] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    exit_code: int | None = None

    @property
    def warm(self) -> Sample:
        return next(s for s in self.samples if s.requests >= self.config.warmup_requests)

    def after_warmup(self) -> list[Sample]:
        return [s for s in self.samples if s.requests >= self.warm.requests]

    def problems(self) -> list[str]:
        """Every goal that was missed, in words (empty: the soak passed)."""
        out = self.failures[:10]
        if len(self.failures) > 10:
            out.append(f"... and {len(self.failures) - 10} more failed requests")
        if not self.samples or self.samples[-1].requests < self.config.requests:
            return out + ["the run did not reach its last sample"]
        warm = self.warm
        for s in self.after_warmup():
            after = f"after {s.requests} requests"
            if abs((ratio := s.rss_bytes / warm.rss_bytes) - 1) > RSS_TOLERANCE:
                out.append(f"RSS {after} is {ratio:.3f}× the warm-up sample")
            if s.fds > warm.fds:
                out.append(f"open fds grew: {warm.fds} → {s.fds} {after}")
            if s.threads > warm.threads:
                out.append(f"threads grew: {warm.threads} → {s.threads} {after}")
        if self.exit_code not in (0, None):
            out.append(f"the server exited with {self.exit_code} on SIGTERM")
        return out

    def table(self) -> str:
        warm = self.warm if self.samples else None
        head = ["requests", "elapsed s", "RSS MiB", "RSS / warm-up", "open fds", "threads"]
        rows = [
            [
                f"{s.requests}{' (warm-up)' if s is warm else ''}",
                f"{s.elapsed_s:.0f}",
                f"{s.rss_bytes / MIB:.1f}",
                f"{s.rss_bytes / warm.rss_bytes:.3f}" if warm else "-",
                s.fds,
                s.threads,
            ]
            for s in self.samples
        ]
        return "\n".join(table(head, rows, "r" * len(head)))

    def summary(self) -> str:
        if not self.samples:
            return "no samples"
        warm, end = self.warm, self.samples[-1]
        ratios = [s.rss_bytes / warm.rss_bytes for s in self.after_warmup()]
        mix = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        return (
            f"{end.requests} requests ({mix}) in {end.elapsed_s:.0f} s; after warm-up "
            f"({warm.requests} requests) RSS {min(ratios):.3f}–{max(ratios):.3f}× "
            f"(end {end.rss_bytes / warm.rss_bytes:.3f}×), fds {warm.fds} → {end.fds}, "
            f"threads {warm.threads} → {end.threads}"
        )


async def settled(
    server: Server, idle: Sample | None, limit_s: float = 10.0
) -> tuple[int, int, int]:
    """`Server.usage` once the requests' threads and connections are gone (fds and threads
    back to `idle`'s, or steady for a second when there is none; what is still there
    `limit_s` after the last answer is growth), RSS the lowest reading over the next 3 s (an
    idle server hands freed heap back a second or two after its last request:
    `wyoming_hayakoe.memory.IdleHeapTrim`), so only memory still held (a leak) raises it."""
    deadline, seen = time.monotonic() + limit_s, []
    while True:
        rss, fds, threads = server.usage()
        seen.append((fds, threads))
        back = idle is not None and fds <= idle.fds and threads <= idle.threads
        steady = idle is None and len(seen) >= 10 and len(set(seen[-10:])) == 1
        if back or steady or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    for _ in range(12):
        await asyncio.sleep(0.25)
        rss = min(rss, server.usage()[0])
    return rss, fds, threads


@dataclass(frozen=True)
class Request:
    index: int
    kind: str
    voice: str
    """`name:style`"""
    text: str


def plan(config: SoakConfig, neural: str | None) -> list[Request]:
    """The fixed pseudo-random request mix (voices in turn)."""
    rng = random.Random(config.seed)
    kinds = [kind for kind, weight in KINDS for _ in range(weight)]
    voices = [(EMBEDDED, STYLES[EMBEDDED])] + ([(neural, STYLES["neural"])] if neural else [])
    out = []
    for i in range(config.requests):
        voice, styles = voices[i % len(voices)]
        kind, style = rng.choice(kinds), rng.choice(styles)
        out.append(Request(i, kind, f"{voice}:{style}", rng.choice(TEXTS)))
    return out


async def _first_audio(reader: asyncio.StreamReader) -> None:
    while (event := await async_read_event(reader)) is not None:
        if AudioChunk.is_type(event.type):
            return
        if Error.is_type(event.type):
            raise RuntimeError(f"error instead of audio: {event.data.get('text')}")
    raise ConnectionError("connection closed before the first audio")


async def abandon(port: int, req: Request) -> None:
    """A client gone mid-answer (crashed, off Wi-Fi): the connection reset after the first
    audio, or, for a stream whose only sentence is still open, after a second. The project's
    client always ends a request cleanly, so this one writes the events itself."""
    voice = SynthesizeVoice(name=req.voice)
    if stream := req.kind == "abandon-stream":
        deltas = [SynthesizeChunk(text=delta).event() for delta in deltas_of(req.text, 4)]
        events = [SynthesizeStart(voice=voice).event(), *deltas]
    else:
        events = [Synthesize(text=req.text, voice=voice).event()]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        await async_write_events(events, writer)
        with contextlib.suppress(asyncio.TimeoutError) if stream else contextlib.nullcontext():
            await asyncio.wait_for(_first_audio(reader), 1.0 if stream else 120.0)
    finally:
        writer.transport.abort()  # a reset, not a close


async def send(port: int, req: Request, timeout: float) -> None:
    """One request; raises when the answer is wrong."""
    client = WyomingClient(f"tcp://127.0.0.1:{port}", timeout=timeout)
    if req.index % 25 == 0:
        await client.describe()
    if req.kind.startswith("abandon"):
        return await abandon(port, req)
    if req.kind == "one-shot":
        spoken = await client.speak(req.text, req.voice)
    else:
        spoken = await client.speak_streamed(deltas_of(req.text, 4), req.voice)
    if not spoken.pcm:
        raise RuntimeError("no audio")


async def soak(config: SoakConfig, progress: Callable[[str], None] = log) -> SoakResult:
    """Run the soak; never raises for a failed goal (see `SoakResult.problems`)."""
    neural = None if config.neural == "none" else NEURAL[config.neural]
    result = SoakResult(config)
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        args = ["--voice", EMBEDDED, "--cache-dir", tmp, "--max-queue", "64", *config.server_args]
        if neural is not None:
            root = neural[1]()
            args += ["--voice", f"{neural[0]}={root}", "--bert-source", str(root)]
        server = Server(args, label="soak", env=program_env({"OMP_NUM_THREADS": "1"}))
        try:
            await server.wait_ready(600)
            idle = Sample(0, 0.0, *await settled(server, None))  # the floor for fds/threads
            progress(f"ready: {idle}")
            gate, started = asyncio.Semaphore(config.concurrency), time.monotonic()

            async def one(req: Request) -> None:
                async with gate:
                    result.counts[req.kind] = result.counts.get(req.kind, 0) + 1
                    try:
                        await send(server.port, req, config.timeout_s)
                    except Exception as exc:  # noqa: BLE001 - counted, reported
                        what = f"request {req.index} ({req.kind}, {req.voice})"
                        result.failures.append(f"{what}: {exc!r}")

            requests = plan(config, neural[0] if neural else None)
            for first in range(0, len(requests), config.sample_every):
                batch = requests[first : first + config.sample_every]
                await asyncio.gather(*(one(r) for r in batch))
                usage = await settled(server, idle)
                idle = Sample(first + len(batch), time.monotonic() - started, *usage)
                result.samples.append(idle)
                progress(f"{idle}  failed {len(result.failures)}")
        finally:
            result.exit_code = server.stop()
            if result.exit_code != 0 or result.failures:
                progress("server log (end):\n" + server.log())
    return result


def plot(result: SoakResult, path: Path) -> None:
    """RSS relative to the warm-up sample, and fds/threads, against requests served."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs, warm = [s.requests for s in result.samples], result.warm
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    top.plot(xs, [s.rss_bytes / warm.rss_bytes for s in result.samples], marker="o")
    top.axhspan(1 - RSS_TOLERANCE, 1 + RSS_TOLERANCE, color="green", alpha=0.1, label="±5 %")
    top.set_ylabel("RSS / warm-up RSS")
    top.set_title(f"Soak: {result.summary()}", fontsize=8, wrap=True)
    bottom.plot(xs, [s.fds for s in result.samples], marker="o", label="open fds")
    bottom.plot(xs, [s.threads for s in result.samples], marker="s", label="threads")
    bottom.set_xlabel("requests served")
    for ax in (top, bottom):
        ax.axvline(warm.requests, color="grey", linestyle="--", label="warm-up")
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def add_arguments(p: argparse.ArgumentParser) -> None:
    for name in ("requests", "sample_every", "concurrency", "seed"):
        p.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(SoakConfig, name))
    p.add_argument("--warmup", type=int, help="warm-up requests (default: a fifth)")
    p.add_argument("--neural", choices=(*NEURAL, "none"), default="small")


def run(args: argparse.Namespace) -> Report:
    given = {name: getattr(args, name) for name in ("sample_every", "warmup", "concurrency")}
    requests = 100 if args.quick else args.requests
    config = SoakConfig(requests, **given, seed=args.seed, neural=args.neural)
    report = Report(f"Soak: {config.requests} mixed requests against the running server")
    result = asyncio.run(soak(config))
    problems = result.problems()
    report.note(result.table())
    report.note(result.summary())
    report.note("\n".join(f"FAIL: {p}" for p in problems) or "Every goal met.")
    report.data = {**asdict(result), "summary": result.summary(), "failed": int(bool(problems))}
    if result.samples and not args.quick:
        plot(result, (args.out or RESULTS / RESULT).with_suffix(".png"))
    return report
