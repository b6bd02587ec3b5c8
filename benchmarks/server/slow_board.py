"""A board slower than speech, on this machine: does the playback guard keep speech whole?

    sudo python -m benchmarks.server slow-board           # 20 streamed + 20 one-shot per guard
    python -m benchmarks.server slow-board --requests 3 --boards slow   # a quick look (as root)

Home Assistant's own boxes (Yellow: a Pi CM4, Green: an RK3566) and a Pi 4 run the full-size
voice slower than real time. This emulates such a board: the server runs in a CPU-quota
cgroup (`tests/helpers/cgroup.py`: cgroup v1 `cpu.cfs_quota_us`/`cpu.cfs_period_us` or v2
`cpu.max`; needs root, removed afterwards) sized so the voice runs at a chosen real-time
factor, and a listener that keeps time (`benchmarks.lib.wyoming.listen`) plays every answer from its
first chunk at real time and counts the gaps it hears (waits under 20 ms are scheduling
noise, counted apart).

The voice: the full-size benchmark voice (`benchmarks.lib.fullsize`: the real JP-Extra shapes with
RANDOM weights, so speed and lengths are real, the sound is not) in int8 (`--precision int8`,
its graphs made once in the server's cache), `--threads 1` (a quota shared by
spinning worker threads would measure the spinning).

Per board, two servers side by side, `--playback-guard off` and `--playback-guard auto`, each
in its own cgroup with the same quota; requests alternate between them, one at a time:

1. load at full speed, then the quota; calibration: the quota starts from the CPU time the
   voice needs per second of audio (measured on this server) and is corrected from the
   measured one-shot RTF (guard off) until it lies in the board's range; these requests
   (sent to both servers) are also their warm-up at the board's speed;
2. `--requests` streamed (`synthesize-start`, deltas of `--chars-per-token` characters at
   `--tokens-per-s`, `synthesize-stop`) and as many one-shot requests per server, texts of
   two or three sentences (about 6 s of audio).

Boards: `slow` (RTF 1.3-2.0, aiming at 1.6), `just` (RTF ~0.9: just fast enough), `free` (no
quota: RTF well under 0.8; guard on vs off should not change first audio).

Figures per board and mode: gaps (count, seconds) with the guard off and on; first audio with
each; the theoretical minimum first audio D·(r−1) + w for a request of D seconds of audio,
r the board's measured RTF and w the first window's time (median first audio with the guard
off) — playback that starts earlier must wait somewhere — and first audio / that minimum
(target ≤ 1.2). Also the hindsight minimum of each guard-off request: the shortest hold-back
that would have made that very arrival schedule gapless.

Records benchmarks/results/slow-board.md and .json; `--quick`: the `slow` board, 2 rounds,
the tests' small voice (its quota is calibrated the same way).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.lib import RESULTS
from benchmarks.lib.procs import Server
from benchmarks.lib.report import Report, load, log
from benchmarks.lib.stats import median
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, server_args
from benchmarks.lib.wyoming import Pace, listen
from tests.helpers.cgroup import CpuQuota, quota_unavailable

RESULT = "slow-board"
GUARDS = ("off", "auto")
MODES = ("streamed", "one-shot")


@dataclass(frozen=True)
class Board:
    name: str
    rtf: float | None
    """The real-time factor aimed at (None: no quota)."""
    low: float = 0.0
    high: float = float("inf")
    """The range the calibration must reach."""


BOARDS = {
    "slow": Board("slow", 1.6, 1.3, 2.0),
    "just": Board("just", 0.9, 0.8, 1.0),
    "free": Board("free", None, 0.0, 0.8),
}

# Two or three sentences each, about 6 s of audio from the benchmark voice (2.75 frames per
# phone id, `fullsize.py`).
SLOW_TEXTS = (
    "おはようございます。今日は一日晴れて、最高気温は二十三度の予報です。",
    "リビングの照明を消しました。寝室のエアコンは二十六度に設定してあります。",
    "玄関の鍵が開いています。出かける前に、もう一度確認してください。",
    "明日の朝は七時にアラームを鳴らします。天気は曇りのち雨の見込みです。",
    "洗濯機が止まりました。雨が降りそうなので、洗濯物は部屋に干しましょう。",
    "キッチンの電気をつけました。ほかに何かお手伝いできることはありますか？",
    "今夜は冷え込むので、暖房のタイマーを六時に合わせておきますね。",
    "お風呂が沸きました。冷めないうちに、ゆっくり温まってください。",
)


# ---------------------------------------------------------------------- calibration ---


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) process `pid` has used so far."""
    import psutil

    t = psutil.Process(pid).cpu_times()
    return float(t.user + t.system)


def quota_for(cpu_per_audio_s: float, rtf: float) -> float:
    """CPUs that make a voice needing `cpu_per_audio_s` CPU seconds per second of audio run
    at real-time factor `rtf` (where nothing but the quota holds it back)."""
    return cpu_per_audio_s / rtf


async def cpu_per_audio(port: int, pid: int, texts: tuple[str, ...], voice: str | None) -> float:
    """CPU seconds the server process `pid` spends per second of audio, one-shot requests."""
    audio = 0.0
    c0 = cpu_seconds(pid)
    for text in texts:
        heard = await listen("127.0.0.1", port, text, voice, streamed=False)
        audio += heard.clock.audio_s
    return (cpu_seconds(pid) - c0) / max(audio, 1e-9)


# --------------------------------------------------------------------------- servers ---


@dataclass
class Guarded:
    """One of the two servers of a board, its quota and what its listener heard."""

    guard: str
    server: Server
    voice: str
    quota: CpuQuota | None = None
    heard: list[dict[str, Any]] = field(default_factory=list)


def start_servers(board: str, root: Path, voice: str, threads: int) -> dict[str, Guarded]:
    servers = {}
    for guard in GUARDS:
        args = [*server_args(root, voice), "--precision", "int8"]
        args += ["--no-quantize-in-background"]  # int8 from the first request, never a switch
        args += ["--threads", str(threads), "--playback-guard", guard]
        label = f"slow-board-{board}-guard-{guard}"
        servers[guard] = Guarded(guard, Server(args, label=label), voice)
    return servers


def stop_servers(servers: dict[str, Guarded]) -> None:
    for s in servers.values():
        if s.quota is not None:
            s.quota.remove()  # a throttled server would take long to drain and stop
    for s in servers.values():
        s.server.stop()


# -------------------------------------------------------------------------- requests ---


async def one(server: Guarded, text: str, mode: str, pace: Pace) -> dict[str, Any]:
    port = server.server.port
    heard = await listen(
        "127.0.0.1", port, text, server.voice, streamed=mode == "streamed", pace=pace
    )
    return {"mode": mode, "chars": len(text), **heard.summary()}


async def calibrate(servers: dict[str, Guarded], board: Board, pace: Pace, threads: int) -> dict:
    """Set both servers' quota so the guard-off one-shot RTF lies in the board's range (a
    quota above `threads` CPUs cannot be used: there the machine itself is too slow)."""
    off = servers["off"]
    need = await cpu_per_audio(off.server.port, off.server.proc.pid, SLOW_TEXTS[:2], off.voice)
    found: dict[str, Any] = {"cpu_per_audio_s": need, "steps": []}
    if board.rtf is None:
        for s in servers.values():  # warm-up, both servers alike
            await one(s, SLOW_TEXTS[0], "one-shot", pace)
        return found
    cpus = quota_for(need, board.rtf)
    for s in servers.values():
        s.quota = CpuQuota(f"{board.name}-{s.guard}", cpus)
        s.quota.create()
        s.quota.add(s.server.proc.pid)
    rtf = float("nan")
    for step in range(5):
        for s in servers.values():
            assert s.quota is not None
            s.quota.set(cpus)
        rtfs = []
        for i in range(2):
            text = SLOW_TEXTS[(step * 2 + i) % len(SLOW_TEXTS)]
            for s in servers.values():
                r = await one(s, text, "one-shot", pace)
                if s.guard == "off":
                    rtfs.append(r["total_s"] / r["audio_s"])
        rtf = median(rtfs)
        found["steps"].append({"cpus": cpus, "rtf": rtf})
        log(f"  {board.name}: {cpus:.3f} CPUs → RTF {rtf:.2f} (aim {board.rtf})")
        if board.low <= rtf <= board.high and abs(rtf / board.rtf - 1) < 0.15:
            break
        if cpus >= threads:  # the quota no longer holds it back: the machine is the limit
            found["saturated"] = True
            log(f"  {board.name}: RTF {rtf:.2f} with a quota it cannot use up: machine too busy")
            break
        cpus = min(cpus * rtf / board.rtf, float(threads))
    found.update(cpus=servers["off"].quota.cpus if servers["off"].quota else None, rtf=rtf)
    return found


async def run_board(board: Board, root: Path, voice: str, args: argparse.Namespace) -> dict:
    pace = Pace(args.tokens_per_s, args.chars_per_token)
    servers = start_servers(board.name, root, voice, args.threads)
    try:
        for s in servers.values():
            await s.server.wait_ready()
        cal = await calibrate(servers, board, pace, args.threads)
        for i in range(args.requests):
            text = SLOW_TEXTS[i % len(SLOW_TEXTS)]
            for mode in MODES:
                order = GUARDS if (i + MODES.index(mode)) % 2 == 0 else GUARDS[::-1]
                for guard in order:
                    servers[guard].heard.append(await one(servers[guard], text, mode, pace))
            if (i + 1) % 5 == 0:
                log(f"  {board.name}: {i + 1}/{args.requests} rounds")
        throttled = {g: s.quota.throttled() if s.quota else 0 for g, s in servers.items()}
    finally:
        stop_servers(servers)
    return {
        "board": board.__dict__,
        "calibration": cal,
        "throttled_periods": throttled,
        "requests": {g: s.heard for g, s in servers.items()},
    }


# ----------------------------------------------------------------------------- report ---


def summarize(res: dict) -> dict[str, dict[str, float]]:
    """Per mode: the figures of the table."""
    out = {}
    for mode in MODES:
        off = [r for r in res["requests"]["off"] if r["mode"] == mode]
        on = [r for r in res["requests"]["auto"] if r["mode"] == mode]
        if not off or not on:
            continue
        r = median([x["total_s"] / x["audio_s"] for x in off])
        w = median([x["first_audio_s"] for x in off])
        minima = [x["audio_s"] * max(r - 1.0, 0.0) + w for x in on]
        ratios = [x["first_audio_s"] / m for x, m in zip(on, minima)]
        out[mode] = {
            "requests": len(on),
            "audio_s": median([x["audio_s"] for x in off]),
            "rtf": r,
            "off_gaps": sum(x["gaps"] for x in off),
            "off_gap_s": sum(x["gap_s"] for x in off),
            "off_requests_with_gaps": sum(1 for x in off if x["gaps"]),
            "on_gaps": sum(x["gaps"] for x in on),
            "on_gap_s": sum(x["gap_s"] for x in on),
            "off_first_audio_s": w,
            "on_first_audio_s": median([x["first_audio_s"] for x in on]),
            "minimum_s": median(minima),
            "on_over_minimum": median(ratios),
            "on_over_minimum_max": max(ratios),
            "hindsight_s": median([x["gapless_start_s"] for x in off]),
            "noise_waits": sum(x["noise_waits"] for x in off + on),
            "noise_s_max": max(x["noise_s"] for x in off + on),
        }
    return out


HEADER = (
    "board|mode|RTF|audio (s)|guard off: gaps (count, s)|guard on: gaps (count, s)|"
    "first audio off (s)|first audio on (s)|D·(r−1)+w (s)|on / minimum (median, max)|"
    "hindsight gapless start, off (s)|on / off first audio"
).split("|")


def _aim(board: Board, rtf: float) -> str:
    """A mark where the measured RTF missed the board's range (a saturated machine)."""
    if board.low <= rtf <= board.high:
        return ""
    return f" (aim {board.low:g}–{board.high:g}: missed)"


def render(results: dict, report: Report) -> None:
    rows = []
    for name, res in results["boards"].items():
        board = Board(**res["board"])
        for mode, f in summarize(res).items():
            n = f["requests"]
            rows.append(
                [
                    name,
                    f"{mode} ×{n}",
                    f"{f['rtf']:.2f}{_aim(board, f['rtf'])}",
                    f"{f['audio_s']:.1f}",
                    f"{f['off_gaps']} in {f['off_requests_with_gaps']}/{n}, {f['off_gap_s']:.1f}",
                    f"{f['on_gaps']}, {f['on_gap_s']:.1f}",
                    f"{f['off_first_audio_s']:.2f}",
                    f"{f['on_first_audio_s']:.2f}",
                    f"{f['minimum_s']:.2f}",
                    f"{f['on_over_minimum']:.2f}×, {f['on_over_minimum_max']:.2f}×",
                    f"{f['hindsight_s']:.2f}",
                    f"{f['on_first_audio_s'] / f['off_first_audio_s']:.2f}×",
                ]
            )
    report.table(HEADER, rows, "ll" + "r" * (len(HEADER) - 2))
    notes = [
        f"Voice: {results.get('voice', 'the full-size benchmark voice')} (RANDOM weights: speed "
        "and lengths are real, the sound is not) in int8, `--threads "
        f"{results['threads']}`; each server in its own CPU-quota cgroup "
        "(quota per board below), requests alternating between guard off and guard on.",
        f"Streamed text: deltas of {results['pace']['chars_per_token']} characters at "
        f"{results['pace']['tokens_per_s']:g} tokens/s. RTF: median wall time / audio of the "
        "guard-off requests of that mode. w: median first audio with the guard off (the first "
        "window). Gaps: waits of a real-time listener ≥ 20 ms; shorter waits are scheduling "
        "noise, not counted.",
    ]
    for name, res in results["boards"].items():
        cal = res["calibration"]
        q = f"{cal['cpus']:.3f} CPUs" if cal.get("cpus") else "none"
        per = summarize(res)
        noise = sum(f["noise_waits"] for f in per.values())
        load = res.get("load_avg")
        when = f" (ended {res['when_utc']} UTC, load average {load[0]} → {load[1]})" if load else ""
        saturated = cal.get("saturated") or (cal.get("cpus") or 0) >= results["threads"]
        busy = "; the machine could not give it the CPU aimed at" if saturated else ""
        notes.append(
            f"- {name}{when}: quota {q}; the voice needs {cal['cpu_per_audio_s']:.3f} CPU s per "
            f"s of audio unthrottled; throttled periods {res['throttled_periods']}; "
            f"{noise} waits under 20 ms in all{busy}."
        )
    report.note("\n".join(notes))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--requests",
        type=int,
        default=20,
        help="streamed and one-shot requests per guard and board",
    )
    p.add_argument(
        "--boards", default="slow,just,free", help="comma-separated: " + ", ".join(BOARDS)
    )
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--tokens-per-s", type=float, default=30.0)
    p.add_argument("--chars-per-token", type=int, default=2)
    p.add_argument(
        "--update", action="store_true", help="keep the boards not run now from the last JSON"
    )


def run(args: argparse.Namespace) -> Report:
    names = ["slow"] if args.quick else [b.strip() for b in args.boards.split(",") if b.strip()]
    unknown = [b for b in names if b not in BOARDS]
    if unknown:
        raise SystemExit(f"unknown board(s) {unknown}; known: {list(BOARDS)}")
    if any(BOARDS[b].rtf is not None for b in names) and (reason := quota_unavailable()):
        raise SystemExit(f"a slow board needs a CPU-quota cgroup: {reason}")
    from benchmarks.lib.voices import fullsize_root, small_root

    if args.quick:
        args.requests = 2
    root, voice = (small_root(), SMALL_VOICE) if args.quick else (fullsize_root(), VOICE_NAME)
    report = Report("The playback guard on an emulated slow board")
    results: dict[str, Any] = {
        "threads": args.threads,
        "voice": voice,
        "pace": {"tokens_per_s": args.tokens_per_s, "chars_per_token": args.chars_per_token},
        "boards": {},
    }
    saved = args.out or RESULTS / RESULT
    if args.update and saved.with_suffix(".json").is_file():  # the other boards of the last run
        old = json.loads(saved.with_suffix(".json").read_text(encoding="utf-8"))
        results["boards"] = {k: v for k, v in old["boards"].items() if k not in names}
    for name in names:
        log(f"board {name}")
        start = load()
        res = asyncio.run(run_board(BOARDS[name], root, voice, args))
        res.update(when_utc=time.strftime("%H:%M", time.gmtime()), load_avg=[start, load()])
        res["summary"] = summarize(res)
        results["boards"][name] = res
    render(results, report)
    report.data = results
    return report
