"""A board slower than speech, emulated here: does the playback guard keep speech whole?

    sudo python -m benchmarks.server slow-board        # 20 streamed + 20 one-shot per guard
    sudo python -m benchmarks.server slow-board --boards slow --requests 3   # a quick look

Home Assistant's boxes (Yellow: a Pi CM4, Green: an RK3566) and a Pi 4 run the full-size
voice slower than real time. Here two servers, `--playback-guard off` and `auto`, each run in
a CPU-quota cgroup of its own (root only, removed afterwards; `tests/helpers/cgroup.py`) sized
so the voice runs at the board's real-time factor, and get the same requests in turn; a
listener that keeps time (`benchmarks.lib.wyoming.listen`) plays every answer from its first
chunk and counts the gaps it hears (waits under 20 ms: scheduling noise, counted apart). The
voice: the full-size benchmark voice (`benchmarks.lib.fullsize`, RANDOM weights: speed and
lengths are real, the sound is not) in int8, `--threads 1` (a quota shared by spinning
workers would measure the spinning).

Calibration (also the warm-up): the quota starts from the CPU time the voice needs per second
of audio and is corrected from the guard-off one-shot RTF until that lies in the board's range
(`slow`: 1.3-2.0, aiming at 1.6; `just`: ~0.9; `free`: no quota, under 0.8, where the guard
should not change first audio). Then `--requests` rounds (`stats.alternate`) of a streamed
(`--chars-per-token` characters at `--tokens-per-s`) and a one-shot request, two or three
sentences, to each server.

Per board and mode: gaps (count, seconds) and first audio with the guard off and on; the
least first audio a gap-free schedule allows, D·(r−1) + w (D: the answer's audio, r: the
measured RTF, w: first audio with the guard off), and first audio with the guard / that
(target ≤ 1.2); the hindsight minimum (the shortest hold-back that would have made each
guard-off answer gapless). Records slow-board.{md,json} (`--update`: the boards not run now
kept from the last JSON); `--quick`: the `slow` board, 2 rounds, the tests' small voice.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.lib import RESULTS
from benchmarks.lib.procs import Server
from benchmarks.lib.report import Report, load, log
from benchmarks.lib.stats import alternate, median
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, fullsize_root, server_args, small_root
from benchmarks.lib.wyoming import Pace, listen
from tests.helpers.cgroup import CpuQuota, quota_unavailable

RESULT = "slow-board"
GUARDS = ("off", "auto")
MODES = ("streamed", "one-shot")


@dataclass(frozen=True)
class Board:
    """The real-time factor aimed at (None: no quota) and the range calibration must reach."""

    name: str
    rtf: float | None
    low: float
    high: float


BOARDS = {
    "slow": Board("slow", 1.6, 1.3, 2.0),
    "just": Board("just", 0.9, 0.8, 1.0),
    "free": Board("free", None, 0.0, 0.8),
}

# Two or three sentences each, about 5 s of audio from the benchmark voice.
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


async def cpu_per_audio(port: int, pid: int, texts: Sequence[str], voice: str | None) -> float:
    """CPU seconds (user + system) server process `pid` spends per second of audio, one-shot.
    A quota of that / r CPUs makes the voice run at RTF r."""
    import psutil

    process = psutil.Process(pid)
    start, audio = sum(process.cpu_times()[:2]), 0.0
    for text in texts:
        audio += (await listen("127.0.0.1", port, text, voice, streamed=False)).clock.audio_s
    return (sum(process.cpu_times()[:2]) - start) / max(audio, 1e-9)


class Guarded:
    """One of a board's two servers (`--playback-guard GUARD`) and its quota."""

    def __init__(self, board: str, guard: str, flags: list[str], voice: str, pace: Pace) -> None:
        self.voice, self.pace, self.asked = voice, pace, 0
        label = f"slow-board-{board}-{guard}"
        self.server = Server([*flags, "--playback-guard", guard], label=label)
        self.quota: CpuQuota | None = None

    def ask(self, text: str, mode: str) -> dict[str, Any]:
        """One request, listened to in real time: its figures."""
        port, streamed = self.server.port, mode == "streamed"
        heard = listen("127.0.0.1", port, text, self.voice, streamed=streamed, pace=self.pace)
        figures = asyncio.run(heard).summary()
        self.asked += 1
        if self.asked % 10 == 0:
            log(f"  {self.server.label}: {self.asked} requests")
        return {"mode": mode, "chars": len(text), **figures}


def calibrate(servers: dict[str, Guarded], board: Board, threads: int) -> dict[str, Any]:
    """Set both servers' quota so the guard-off one-shot RTF lies in the board's range (a
    quota above `threads` CPUs cannot be used up: there the machine itself is too slow)."""
    off = servers["off"]
    pid = off.server.proc.pid
    need = asyncio.run(cpu_per_audio(off.server.port, pid, SLOW_TEXTS[:2], off.voice))
    found: dict[str, Any] = {"cpu_per_audio_s": need, "steps": []}
    if board.rtf is None:
        for s in servers.values():  # the warm-up, both servers alike
            s.ask(SLOW_TEXTS[0], "one-shot")
        return found
    cpus, rtf, texts = need / board.rtf, float("nan"), itertools.cycle(SLOW_TEXTS)
    quotas = {g: CpuQuota(f"{board.name}-{g}", cpus) for g in servers}
    for guard, quota in quotas.items():
        servers[guard].quota = quota
        quota.create()
        quota.add(servers[guard].server.proc.pid)
    for _ in range(5):
        for quota in quotas.values():
            quota.set(cpus)
        asked = [
            {g: s.ask(t, "one-shot") for g, s in servers.items()}
            for t in (next(texts), next(texts))
        ]
        rtf = median(a["off"]["total_s"] / a["off"]["audio_s"] for a in asked)
        found["steps"].append({"cpus": cpus, "rtf": rtf})
        log(f"  {board.name}: {cpus:.3f} CPUs → RTF {rtf:.2f} (aim {board.rtf})")
        if board.low <= rtf <= board.high and abs(rtf / board.rtf - 1) < 0.15:
            break
        if cpus >= threads:
            found["saturated"] = True
            log(f"  {board.name}: RTF {rtf:.2f} with a quota it cannot use up: machine too busy")
            break
        cpus = min(cpus * rtf / board.rtf, float(threads))
    found.update(cpus=quotas["off"].cpus, rtf=rtf)
    return found


def run_board(board: Board, root: Path, voice: str, args: argparse.Namespace) -> dict[str, Any]:
    """Calibrate, then `args.requests` rounds of every guard and mode in turn."""
    pace = Pace(args.tokens_per_s, args.chars_per_token)
    flags = [*server_args(root, voice), "--precision", "int8", "--threads", str(args.threads)]
    flags += ["--no-quantize-in-background"]  # int8 from the first request, never a switch
    servers = {g: Guarded(board.name, g, flags, voice, pace) for g in GUARDS}

    def asker(guard: str, mode: str) -> Callable[[], dict[str, Any]]:
        texts = itertools.cycle(SLOW_TEXTS)  # round i: text i, to every guard and mode
        return lambda: servers[guard].ask(next(texts), mode)

    try:
        for s in servers.values():
            asyncio.run(s.server.wait_ready())
        calibration = calibrate(servers, board, args.threads)
        heard = alternate({f"{g} {m}": asker(g, m) for m in MODES for g in GUARDS}, args.requests)
        throttled = {g: s.quota.throttled() if s.quota else 0 for g, s in servers.items()}
    finally:
        for s in servers.values():
            if s.quota is not None:
                s.quota.remove()  # a throttled server would take long to drain and stop
            s.server.stop()
    return {
        "board": asdict(board),
        "calibration": calibration,
        "throttled_periods": throttled,
        "requests": {g: [r for m in MODES for r in heard[f"{g} {m}"]] for g in GUARDS},
    }


def summarize(res: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per mode: the figures of the table."""
    out = {}
    for mode in MODES:
        off = [r for r in res["requests"]["off"] if r["mode"] == mode]
        on = [r for r in res["requests"]["auto"] if r["mode"] == mode]
        if not off or not on:
            continue
        rtf = median(x["total_s"] / x["audio_s"] for x in off)
        window = median(x["first_audio_s"] for x in off)
        minima = [x["audio_s"] * max(rtf - 1.0, 0.0) + window for x in on]
        ratios = [x["first_audio_s"] / m for x, m in zip(on, minima, strict=True)]
        out[mode] = {
            "requests": len(on),
            "audio_s": median(x["audio_s"] for x in off),
            "rtf": rtf,
            "off_gaps": sum(x["gaps"] for x in off),
            "off_gap_s": sum(x["gap_s"] for x in off),
            "off_requests_with_gaps": sum(1 for x in off if x["gaps"]),
            "on_gaps": sum(x["gaps"] for x in on),
            "on_gap_s": sum(x["gap_s"] for x in on),
            "off_first_audio_s": window,
            "on_first_audio_s": median(x["first_audio_s"] for x in on),
            "minimum_s": median(minima),
            "on_over_minimum": median(ratios),
            "on_over_minimum_max": max(ratios),
            "hindsight_s": median(x["gapless_start_s"] for x in off),
            "noise_waits": sum(x["noise_waits"] for x in off + on),
            "noise_s_max": max(x["noise_s"] for x in off + on),
        }
    return out


HEADER = (
    "board|mode|RTF|audio (s)|guard off: gaps (count, s)|guard on: gaps (count, s)|"
    "first audio off (s)|first audio on (s)|D·(r−1)+w (s)|on / minimum (median, max)|"
    "hindsight gapless start, off (s)|on / off first audio"
).split("|")


def render(results: dict[str, Any], report: Report) -> None:
    pace, rows = results["pace"], []
    notes = [
        f"Voice: {results['voice']} (RANDOM weights) in int8, `--threads {results['threads']}`, "
        "each server in its own CPU-quota cgroup (quota per board below). Streamed: deltas of "
        f"{pace['chars_per_token']} characters at {pace['tokens_per_s']:g} tokens/s. RTF: median "
        "wall time / audio, guard off. w: median first audio, guard off (the first window). "
        "Gaps: waits of a real-time listener ≥ 20 ms; shorter ones are scheduling noise."
    ]
    for name, res in results["boards"].items():
        board, cal, per = Board(**res["board"]), res["calibration"], summarize(res)
        for mode, f in per.items():
            n, rtf, ok = f["requests"], f["rtf"], board.low <= f["rtf"] <= board.high
            missed = "" if ok else f" (aim {board.low:g}–{board.high:g}: missed)"
            cells = (
                f"{name}|{mode} ×{n}|{rtf:.2f}{missed}|{f['audio_s']:.1f}|"
                f"{f['off_gaps']} in {f['off_requests_with_gaps']}/{n}, {f['off_gap_s']:.1f}|"
                f"{f['on_gaps']}, {f['on_gap_s']:.1f}|{f['off_first_audio_s']:.2f}|"
                f"{f['on_first_audio_s']:.2f}|{f['minimum_s']:.2f}|"
                f"{f['on_over_minimum']:.2f}×, {f['on_over_minimum_max']:.2f}×|"
                f"{f['hindsight_s']:.2f}|{f['on_first_audio_s'] / f['off_first_audio_s']:.2f}×"
            )
            rows.append(cells.split("|"))
        load_avg, quota, when = res.get("load_avg"), cal.get("cpus"), ""
        if load_avg:
            when = f" (ended {res['when_utc']} UTC, load average {load_avg[0]} → {load_avg[1]})"
        saturated = cal.get("saturated") or (quota or 0) >= results["threads"]
        busy = "; the machine could not give it the CPU aimed at" if saturated else ""
        notes.append(
            f"- {name}{when}: quota "
            f"{f'{quota:.3f} CPUs' if quota else 'none'}; the voice needs "
            f"{cal['cpu_per_audio_s']:.3f} CPU s per s of audio unthrottled; throttled periods "
            f"{res['throttled_periods']}; {sum(f['noise_waits'] for f in per.values())} waits "
            f"under 20 ms in all{busy}."
        )
    report.table(HEADER, rows, "ll" + "r" * (len(HEADER) - 2))
    report.note("\n".join(notes))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--requests", type=int, default=20, help="per mode, guard and board")
    p.add_argument("--boards", default="slow,just,free", help="comma-separated: slow, just, free")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--tokens-per-s", type=float, default=30.0)
    p.add_argument("--chars-per-token", type=int, default=2)
    p.add_argument("--update", action="store_true", help="keep the other boards of the last JSON")


def run(args: argparse.Namespace) -> Report:
    names = ["slow"] if args.quick else [b.strip() for b in args.boards.split(",") if b.strip()]
    if unknown := [b for b in names if b not in BOARDS]:
        raise SystemExit(f"unknown board(s) {unknown}; known: {list(BOARDS)}")
    if any(BOARDS[b].rtf is not None for b in names) and (reason := quota_unavailable()):
        raise SystemExit(f"a slow board needs a CPU-quota cgroup: {reason}")
    if args.quick:
        args.requests = 2
    root, voice = (small_root(), SMALL_VOICE) if args.quick else (fullsize_root(), VOICE_NAME)
    pace = {"tokens_per_s": args.tokens_per_s, "chars_per_token": args.chars_per_token}
    results: dict[str, Any] = {"threads": args.threads, "voice": voice, "pace": pace, "boards": {}}
    report = Report("The playback guard on an emulated slow board")
    saved = (args.out or RESULTS / RESULT).with_suffix(".json")
    if args.update and saved.is_file():
        old = json.loads(saved.read_text(encoding="utf-8"))["boards"]
        results["boards"] = {k: v for k, v in old.items() if k not in names}
    for name in names:
        log(f"board {name}")
        start = load()
        res = run_board(BOARDS[name], root, voice, args)
        res.update(when_utc=time.strftime("%H:%M", time.gmtime()), load_avg=[start, load()])
        results["boards"][name] = {**res, "summary": summarize(res)}
    render(results, report)
    report.data = results
    return report
