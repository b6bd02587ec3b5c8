"""Soak: many mixed requests against a real server process; does anything grow?

    python -m benchmarks.server soak                    # 1000 requests, embedded + small voice
    python -m benchmarks.server soak --requests 200 --neural none
    python -m benchmarks.server soak --neural fullsize  # the full-size random voice

The server is `python -m wyoming_hayakoe` on 127.0.0.1, serving the embedded voice
(``openjtalk-mei``) and a neural one: ``small`` (default) is the tests' small random-weight
JP-Extra voice with the tests' tiny BERT (`benchmarks.lib.voices.small_root`); ``fullsize``
is the full-size random voice (`benchmarks.lib.fullsize`). Requests are sent over
TCP with the project's client (`wyoming_hayakoe.client`), `--concurrency` at a time, in a
fixed pseudo-random mix:

- one-shot ``synthesize``, read to ``audio-stop``;
- streaming ``synthesize-start`` / deltas / ``synthesize-stop``, read to ``synthesize-stopped``;
- abandoned streams and one-shots: the client resets the connection after the first audio
  (a stream whose only sentence is still open: after a second);
- both voices, several styles each, short to long texts (with numbers and Latin words).

Every `--sample-every` requests (when none is in flight and the server's threads have
settled) the server's RSS, open file descriptors and threads are read with psutil. The first
`--warmup` requests warm up (caches, arenas, lazily created pools); after them the goal is
RSS within ±5 % of the warm-up sample and fds/threads not above it. The run prints a table
(Markdown), records it with a PNG plot, and exits 1 when a goal or a request failed.
`tests/benchmarks/test_soak.py` runs 200 requests with the same checks (`--quick`: 100).
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

from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeVoice

from benchmarks.lib import RESULTS
from benchmarks.lib.procs import Server, program_env
from benchmarks.lib.report import Report, log
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME
from wyoming_hayakoe.client import ServerAddress, WyomingClient, deltas_of

RESULT = "soak"
EMBEDDED = "openjtalk-mei"
EMBEDDED_STYLES = ("Neutral", "Calm", "Bright")
NEURAL_STYLES = ("Neutral", "Happy", "Sad")

RSS_TOLERANCE = 0.05
"""After warm-up, RSS stays within this fraction of the warm-up sample."""

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
    """``small``, ``fullsize`` or ``none`` (embedded voice only)."""
    server_args: tuple[str, ...] = ()
    timeout_s: float = 120.0
    """Longest wait for one request's answer."""

    @property
    def warmup_requests(self) -> int:
        warm = self.warmup if self.warmup is not None else self.requests // 5
        every = self.sample_every
        return max(every, (warm + every - 1) // every * every)


@dataclass
class Sample:
    """The server process after `requests` requests."""

    requests: int
    elapsed_s: float
    rss_bytes: int
    fds: int
    threads: int


@dataclass
class SoakResult:
    config: SoakConfig
    samples: list[Sample] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    exit_code: int | None = None

    @property
    def warm(self) -> Sample:
        target = self.config.warmup_requests
        return next(s for s in self.samples if s.requests >= target)

    def after_warmup(self) -> list[Sample]:
        return [s for s in self.samples if s.requests >= self.warm.requests]

    def rss_ratios(self) -> list[float]:
        return [s.rss_bytes / self.warm.rss_bytes for s in self.after_warmup()]

    def problems(self) -> list[str]:
        """Every goal that was missed, in words (empty: the soak passed)."""
        out = list(self.failures[:10])
        if len(self.failures) > 10:
            out.append(f"... and {len(self.failures) - 10} more failed requests")
        if not self.samples or self.samples[-1].requests < self.config.requests:
            return out + ["the run did not reach its last sample"]
        warm = self.warm
        for s in self.after_warmup():
            ratio = s.rss_bytes / warm.rss_bytes
            if abs(ratio - 1) > RSS_TOLERANCE:
                out.append(f"RSS after {s.requests} requests is {ratio:.3f}× the warm-up sample")
            if s.fds > warm.fds:
                out.append(f"open fds grew: {warm.fds} → {s.fds} after {s.requests} requests")
            if s.threads > warm.threads:
                out.append(
                    f"threads grew: {warm.threads} → {s.threads} after {s.requests} requests"
                )
        if self.exit_code not in (0, None):
            out.append(f"the server exited with {self.exit_code} on SIGTERM")
        return out

    def table(self) -> str:
        warm = self.warm if self.samples else None
        lines = [
            "| requests | elapsed s | RSS MiB | RSS / warm-up | open fds | threads |",
            "| ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for s in self.samples:
            ratio = f"{s.rss_bytes / warm.rss_bytes:.3f}" if warm else "-"
            mark = " (warm-up)" if warm is s else ""
            lines.append(
                f"| {s.requests}{mark} | {s.elapsed_s:.0f} | {s.rss_bytes / 2**20:.1f} | {ratio} "
                f"| {s.fds} | {s.threads} |"
            )
        return "\n".join(lines)

    def summary(self) -> str:
        if not self.samples:
            return "no samples"
        ratios = self.rss_ratios()
        warm, end = self.warm, self.samples[-1]
        mix = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        return (
            f"{end.requests} requests ({mix}) in {end.elapsed_s:.0f} s; after warm-up "
            f"({warm.requests} requests) RSS {min(ratios):.3f}–{max(ratios):.3f}× "
            f"(end {end.rss_bytes / warm.rss_bytes:.3f}×), fds {warm.fds} → {end.fds}, "
            f"threads {warm.threads} → {end.threads}"
        )


# -- the server --------------------------------------------------------------------------------
def neural_voice(kind: str) -> tuple[str, Path] | None:
    """(voice name, hayakoe-layout root) of the neural voice to soak, or None."""
    from benchmarks.lib.voices import fullsize_root, small_root

    if kind == "none":
        return None
    if kind == "small":
        return SMALL_VOICE, small_root()
    if kind == "fullsize":
        return VOICE_NAME, fullsize_root()
    raise ValueError(f"--neural must be small, fullsize or none, not {kind!r}")


def start(config: SoakConfig, neural: tuple[str, Path] | None, workdir: Path) -> Server:
    """The program on loopback: the embedded voice, the neural one, a cache of its own."""
    args = ["--voice", EMBEDDED]
    if neural is not None:
        name, root = neural
        args += ["--voice", f"{name}={root}", "--bert-source", str(root)]
    args += ["--cache-dir", str(workdir / "cache"), "--max-queue", "64", *config.server_args]
    return Server(args, label="soak", env=program_env({"OMP_NUM_THREADS": "1"}))


async def settled(
    server: Server,
    idle: tuple[int, int, int] | None,
    limit_s: float = 10.0,
    quiet_s: float = 3.0,
) -> tuple[int, int, int]:
    """`usage` once the requests' threads and connections are gone: when fds and threads
    are back to the figures of `idle` (the previous sample), or have been steady for a
    second when there is none, at most `limit_s` after the last answer. A worker may
    outlive its client by the length of the sentence it was rendering; what is still
    there after `limit_s` is growth.

    RSS is then the lowest of readings over `quiet_s` seconds: an idle server hands
    freed heap back a second or two after its last request
    (`wyoming_hayakoe.memory.IdleHeapTrim`), so this is the resident size of the idle
    server, which only memory still held (a leak) can raise."""
    deadline = time.monotonic() + limit_s
    seen: list[tuple[int, int]] = []
    while True:
        rss, fds, threads = server.usage()
        if idle is not None and fds <= idle[1] and threads <= idle[2]:
            break
        seen.append((fds, threads))
        if idle is None and len(seen) >= 10 and len(set(seen[-10:])) == 1:
            break
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    quiet_until = time.monotonic() + quiet_s
    while time.monotonic() < quiet_until:
        await asyncio.sleep(0.25)
        rss = min(rss, server.usage()[0])
    return rss, fds, threads


# -- the requests -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Request:
    index: int
    kind: str
    voice: str
    style: str
    text: str


def plan(config: SoakConfig, neural: str | None) -> list[Request]:
    """The fixed pseudo-random request mix."""
    rng = random.Random(config.seed)
    kinds = [k for k, w in KINDS for _ in range(w)]
    voices = [(EMBEDDED, EMBEDDED_STYLES)] + ([(neural, NEURAL_STYLES)] if neural else [])
    out = []
    for i in range(config.requests):
        voice, styles = voices[i % len(voices)]
        out.append(Request(i, rng.choice(kinds), voice, rng.choice(styles), rng.choice(TEXTS)))
    return out


async def _first_audio(client: AsyncTcpClient, timeout: float) -> None:
    while (event := await asyncio.wait_for(client.read_event(), timeout)) is not None:
        if event.type == "audio-chunk":
            return
        if event.type == "error":
            raise RuntimeError(f"error instead of audio: {event.data.get('text')}")
    raise ConnectionError("connection closed before the first audio")


async def abandon(port: int, req: Request) -> None:
    """A client gone mid-answer: the connection reset (what a client that crashes or loses
    Wi-Fi does) after the first audio, or, for a stream whose only sentence is still open,
    after a second. The project's client always ends a request cleanly, so this one writes
    the events itself."""
    voice = SynthesizeVoice(name=f"{req.voice}:{req.style}")
    client = AsyncTcpClient("127.0.0.1", port)
    await client.connect()
    try:
        if req.kind == "abandon-one-shot":
            await client.write_event(Synthesize(text=req.text, voice=voice).event())
            await _first_audio(client, 120.0)
        else:
            await client.write_event(SynthesizeStart(voice=voice).event())
            for delta in deltas_of(req.text, 4):
                await client.write_event(SynthesizeChunk(text=delta).event())
            with contextlib.suppress(asyncio.TimeoutError):
                await _first_audio(client, 1.0)
        writer = client._writer  # noqa: SLF001 - the wyoming client exposes no abort
        if writer is not None:
            writer.transport.abort()
    finally:
        await client.disconnect()


async def send(port: int, req: Request, timeout: float) -> None:
    """One request through the project's client; raises when the answer is wrong."""
    client = WyomingClient(ServerAddress("127.0.0.1", port), timeout=timeout)
    if req.index % 25 == 0:
        await client.describe()
    voice = f"{req.voice}:{req.style}"
    if req.kind.startswith("abandon"):
        await abandon(port, req)
        return
    if req.kind == "one-shot":
        spoken = await client.speak(req.text, voice)
    else:
        spoken = await client.speak_streamed(deltas_of(req.text, 4), voice)
    if not spoken.pcm:
        raise RuntimeError("no audio")


async def soak(config: SoakConfig, progress: Callable[[str], None] = log) -> SoakResult:
    """Run the soak; never raises for a failed goal (see `SoakResult.problems`)."""
    neural = neural_voice(config.neural)
    result = SoakResult(config)
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        server = start(config, neural, Path(tmp))
        try:
            await server.wait_ready(600)
            idle = await settled(server, None)  # loaded and idle: the floor for fds/threads
            progress(f"ready: RSS {idle[0] / 2**20:.1f} MiB, fds {idle[1]}, threads {idle[2]}")
            requests = plan(config, neural[0] if neural else None)
            gate = asyncio.Semaphore(config.concurrency)
            started = time.monotonic()

            async def one(req: Request) -> None:
                async with gate:
                    try:
                        await send(server.port, req, config.timeout_s)
                    except Exception as exc:  # noqa: BLE001 - counted, reported
                        result.failures.append(
                            f"request {req.index} ({req.kind}, {req.voice}): {exc!r}"
                        )
                    result.counts[req.kind] = result.counts.get(req.kind, 0) + 1

            for first in range(0, len(requests), config.sample_every):
                batch = requests[first : first + config.sample_every]
                await asyncio.gather(*(one(r) for r in batch))
                rss, fds, threads = await settled(server, idle)
                idle = (rss, fds, threads)
                sample = Sample(first + len(batch), time.monotonic() - started, rss, fds, threads)
                result.samples.append(sample)
                progress(
                    f"{sample.requests:5d} requests  {sample.elapsed_s:6.0f} s  "
                    f"RSS {rss / 2**20:7.1f} MiB  fds {fds}  threads {threads}  "
                    f"failed {len(result.failures)}"
                )
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

    xs = [s.requests for s in result.samples]
    warm = result.warm
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    top.plot(xs, [s.rss_bytes / warm.rss_bytes for s in result.samples], marker="o")
    top.axhspan(1 - RSS_TOLERANCE, 1 + RSS_TOLERANCE, color="green", alpha=0.1, label="±5 %")
    top.axvline(warm.requests, color="grey", linestyle="--", label="warm-up")
    top.set_ylabel("RSS / warm-up RSS")
    top.set_title(f"Soak: {result.summary()}", fontsize=8, wrap=True)
    top.legend(fontsize=8)
    bottom.plot(xs, [s.fds for s in result.samples], marker="o", label="open fds")
    bottom.plot(xs, [s.threads for s in result.samples], marker="s", label="threads")
    bottom.axvline(warm.requests, color="grey", linestyle="--")
    bottom.set_xlabel("requests served")
    bottom.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--requests", type=int, default=1000)
    p.add_argument("--sample-every", type=int, default=50)
    p.add_argument("--warmup", type=int, default=None, help="warm-up requests (default: a fifth)")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--neural", choices=("small", "fullsize", "none"), default="small")


def run(args: argparse.Namespace) -> Report:
    config = SoakConfig(
        requests=100 if args.quick else args.requests,
        sample_every=args.sample_every,
        warmup=args.warmup,
        concurrency=args.concurrency,
        seed=args.seed,
        neural=args.neural,
    )
    result = asyncio.run(soak(config))
    report = Report(f"Soak: {config.requests} mixed requests against the running server")
    report.note(result.table())
    report.note(result.summary())
    problems = result.problems()
    report.note("\n".join(f"FAIL: {p}" for p in problems) or "Every goal met.")
    report.data = {
        "config": asdict(config),
        "samples": [asdict(s) for s in result.samples],
        "counts": result.counts,
        "failures": result.failures,
        "summary": result.summary(),
        "failed": 1 if problems else 0,
    }
    if result.samples and not args.quick:
        plot(result, (args.out or RESULTS / RESULT).with_suffix(".png"))
    return report
