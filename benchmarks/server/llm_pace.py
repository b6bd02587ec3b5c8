"""First audio of replies streamed at a language model's pace, through the real server: the
stream's first part cut at a clause (the default) against whole sentences only (the
baseline, `--first-clause 0`), same run.

    python -m benchmarks.server llm-pace --repeat 3

Each of `benchmarks.lib.texts.LLM_REPLIES` (24 replies: openings short and long, with and
without a comma, English names, numbers) goes to each server as Wyoming `synthesize-chunk`
deltas of 2 characters every 50 ms (40 characters a second, `--cps`), in turn, `--repeat`
rounds, idle and then with one core busy. First audio is timed from the first delta by a
listener that keeps time (`benchmarks.lib.wyoming.listen`). The voice: the full-size
benchmark voice in int8 (`benchmarks.lib.fullsize`, RANDOM weights: lengths and speed are
real, the sound is not); `--quick`: the tests' small voice, 3 replies, idle only.
"""

from __future__ import annotations

import argparse
import asyncio
import math
from collections.abc import Sequence
from functools import partial
from typing import NamedTuple

from benchmarks.lib import CACHE
from benchmarks.lib.listener import MIN_GAP_S
from benchmarks.lib.procs import Server
from benchmarks.lib.report import Report, log
from benchmarks.lib.stats import alternate, busy_core, median
from benchmarks.lib.texts import LLM_REPLIES
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, fullsize_root, server_args, small_root
from benchmarks.lib.wyoming import Pace, listen

RESULT = "llm-pace"
BASELINE = "whole sentences"
VARIANTS: dict[str, tuple[str, ...]] = {
    BASELINE: ("--first-clause", "0"),
    "at a clause of 12+ characters (before)": ("--first-clause", "12"),
    "at a clause (default)": (),
}
"""Each server's flags beyond the voice's."""
CHARS_PER_DELTA = 2
TARGET_S = 0.8


class Heard(NamedTuple):
    """One answer as the listener heard it (seconds from the first delta)."""

    first_s: float
    gaps: int
    gap_s: float


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeat", type=int, default=3, help="rounds per reply (default 3)")
    p.add_argument("--cps", type=float, default=40.0, help="characters a second (default 40)")
    p.add_argument("--no-busy", action="store_true", help="idle only")


def p90(values: Sequence[float]) -> float:
    """The 90th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)] if ordered else float("nan")


def run(args: argparse.Namespace) -> Report:
    report = Report("First audio at a language model's pace")
    if args.quick:
        root, voice, replies, reps, loads = small_root(), SMALL_VOICE, LLM_REPLIES[:3], 1, [False]
    else:
        root, voice, replies, reps = fullsize_root(), VOICE_NAME, LLM_REPLIES, args.repeat
        loads = [False] if args.no_busy else [False, True]
    pace = Pace(tokens_per_s=args.cps / CHARS_PER_DELTA, chars_per_token=CHARS_PER_DELTA)
    flags = [*server_args(root, voice), "--precision", "int8", "--no-quantize-in-background"]
    flags += ["--cache-dir", str(CACHE / "llm-pace")]
    servers: dict[str, Server] = {}
    results: dict[str, dict[str, list[list[Heard]]]] = {}
    try:
        for name, extra in VARIANTS.items():  # one after another: the first makes the int8
            server = Server([*flags, *extra], label=f"llm-pace-{len(servers)}")
            servers[name] = server
            asyncio.run(server.wait_ready())

        def first_audio(server: Server, text: str) -> Heard:
            listened = listen("127.0.0.1", server.port, text, voice, streamed=True, pace=pace)
            heard = asyncio.run(listened)
            return Heard(heard.first_audio_s, heard.clock.gap_count, heard.clock.gap_s)

        for server in servers.values():  # warm-up: a connection and a reply each
            first_audio(server, "はい、わかりました。")
        for busy in loads:
            label = "one core busy" if busy else "idle"
            log(f"llm-pace: {len(replies)} replies x {reps} rounds, {label}")
            with busy_core(busy):
                per_reply = [
                    alternate({n: partial(first_audio, s, t) for n, s in servers.items()}, reps)
                    for t in replies
                ]
            results[label] = {n: [r[n] for r in per_reply] for n in servers}
    finally:
        for server in servers.values():
            server.stop()

    rows = []
    for label, per in results.items():
        base = [median(h.first_s for h in r) for r in per[BASELINE]]
        for name, rounds in per.items():
            firsts = [median(h.first_s for h in r) for r in rounds]
            ratio = median(f / b for f, b in zip(firsts, base, strict=True))
            verdict = "" if name == BASELINE else (" ✅" if median(firsts) <= TARGET_S else " ❌")
            heard = [h for r in rounds for h in r]
            rows.append(
                [
                    label,
                    name,
                    f"{median(firsts) * 1000:.0f}{verdict}",
                    f"{p90(firsts) * 1000:.0f}",
                    f"{ratio:.2f}",
                    sum(f <= TARGET_S for f in firsts),
                    f"{sum(h.gaps > 0 for h in heard) / len(heard):.0%}",
                    f"{median(h.gap_s for h in heard if h.gaps) * 1000:.0f}"
                    if any(h.gaps for h in heard)
                    else "",
                ]
            )
    report.note(
        f"Voice {voice} ({'the tests small voice' if args.quick else 'full-size, RANDOM weights'})"
        f" in int8; {len(replies)} replies, deltas of {CHARS_PER_DELTA} characters at "
        f"{args.cps:g} characters/s; per reply the median of {reps} rounds (servers in turn), "
        f"then the median and p90 over replies; ratio: median over replies of first audio / "
        f"whole sentences' first audio. Target: median ≤ {TARGET_S * 1000:.0f} ms."
    )
    report.note(
        "Gaps: answers in which the listener, playing from the first chunk in real time, had "
        f"to wait for audio (over {MIN_GAP_S * 1000:.0f} ms; `benchmarks.lib.listener`), and "
        "the median of their waits in all."
    )
    report.table(
        [
            "load",
            "first part",
            "first audio median ms",
            "p90 ms",
            "/ whole sentences",
            "≤ 0.8 s",
            "answers with a gap",
            "gap ms",
        ],
        rows,
        "llrrrrrr",
    )
    detail = []
    for i, text in enumerate(replies):
        cells = [
            f"{median(h.first_s for h in per[n][i]) * 1000:.0f}"
            for per in results.values()
            for n in per
        ]
        detail.append([text[:24] + ("…" if len(text) > 24 else ""), *cells])
    head = [f"{label}: {n}" for label, per in results.items() for n in per]
    report.table(["reply", *head], detail, "l" + "r" * len(head))
    report.data.update({"replies": list(replies), "heard": results, "cps": args.cps})
    return report
