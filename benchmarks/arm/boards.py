"""ESTIMATE (not measured on any board): what to expect on Home Assistant's boards, from the
ARM evidence (`python -m benchmarks.arm.evidence`: instructions executed under qemu, weighed
by each core's published pipe throughput, `cores.py`).

    python -m benchmarks.arm.boards [benchmarks/results/arm-evidence.json] [--answer 3]

Per board: the decoder's throughput-bound cycles per second of audio for each precision on
its core (measured instruction counts × `cores.py`), one anchor for absolute speed, and the
non-decoder work:

- the anchor: hayakoe 1.3.1 on a Raspberry Pi 4B runs at 0.3× real time (RTF 3.3, ONNX
  Runtime, fp32; its README), and our fp32 engine did the same work in 0.8× hayakoe's time
  on x86 (benchmarks/results). So our fp32 RTF on a Pi 4 (4× Cortex-A72, 1.8 GHz assumed) is
  about 2.7; the decoder is `1 − front_share` of it. The ratio of that time to the decoder's
  fp32 cycle bound on 4 cores is the one efficiency factor, applied to every board and
  every precision — the weakest link: int8 kernels may reach their bound less (or more)
  closely than fp32 ones, and the in-order A55 reaches any bound less easily;
- outside the decoder (text encoder, flow, BERT: `--front-share` of fp32 time, measured
  ~0.2 on x86) everything runs fp32 and scales with the core's fp32 decoder speed, except
  the flow's feed-forward convolutions (`--flow-share` of it), int8 with the int8 voice,
  which scale like the decoder's int8 part on that core.

The playback guard holds the first audio of a D-second answer back by about D·(r − 1) when
the real-time factor r is above 1 (`--answer`, default 3 s, a typical Assist reply).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.arm import cores  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "arm-evidence.json"

HAYAKOE_PI4_RTF = 1 / 0.3
OURS_VS_HAYAKOE_FP32 = 0.8


@dataclass(frozen=True)
class Board:
    name: str
    core: str  # a key of evidence.TARGETS / cores.CORES
    cores: int
    ghz: float


BOARDS = (
    Board("Home Assistant Yellow (CM4, 4× Cortex-A72 1.5 GHz)", "cortex-a72", 4, 1.5),
    Board("Home Assistant Green (RK3566, 4× Cortex-A55 1.8 GHz)", "cortex-a55", 4, 1.8),
    Board("Raspberry Pi 4 (4× Cortex-A72 1.8 GHz)", "cortex-a72", 4, 1.8),
    Board("Raspberry Pi 5 (4× Cortex-A76 2.4 GHz)", "cortex-a76", 4, 2.4),
)
ANCHOR = BOARDS[2]


def guard_wait(answer_s: float, rtf: float) -> float:
    """The playback guard's hold before the first audio of an `answer_s`-second answer."""
    return answer_s * max(0.0, rtf - 1.0)


def advice(lo: float, hi: float, precision: str) -> str:
    """Which voice to run on a board whose best full-size voice runs at RTF `lo`–`hi`."""
    if hi <= 0.8:
        return f"a neural voice, {precision}: keeps up with playback"
    if hi <= 1.0:
        return f"a neural voice, {precision}: just keeps up (short waits when busy)"
    if lo <= 2.0:
        return f"a neural voice, {precision}, if that wait per answer is fine; else `openjtalk-mei`"
    return "`openjtalk-mei` (a neural answer waits longer than it lasts)"


def _cycles(res: dict[str, Any], target: str, model: str) -> dict[str, float]:
    """The decoder's throughput-bound cycles per second of audio, by precision, of the
    counts measured on `target`, weighed with the core `model`."""
    from benchmarks.arm import evidence

    return {
        p: evidence.estimate(g["per_audio_second"], model)["cycles"]
        for p, g in res["targets"][target]["graphs"].items()
        if "per_audio_second" in g
    }


def estimate(
    res: dict[str, Any], front_share: float = 0.2, flow_share: float = 0.48
) -> list[dict[str, Any]]:
    """One row per board (see the module doc): each precision's decoder time against fp32
    and its RTF, as (low, high) over the scenarios — one per core model of the anchor's
    core (`cores.MODELS`: two for the A72, whose pipes also set the anchor's efficiency and
    so every other board's absolute figures)."""
    anchor_rtf = HAYAKOE_PI4_RTF * OURS_VS_HAYAKOE_FP32
    spans: dict[str, dict[str, Any]] = {}
    for scenario in cores.MODELS[ANCHOR.core]:

        def model(core: str, scenario: str = scenario) -> str:
            return scenario if core == ANCHOR.core else cores.MODELS[core][0]

        anchor = _cycles(res, ANCHOR.core, scenario)
        anchor_s = anchor["fp32"] / (ANCHOR.cores * ANCHOR.ghz * 1e9)
        for b in BOARDS:
            if b.core not in res["targets"]:
                continue
            c = _cycles(res, b.core, model(b.core))
            # fp32: the anchor's, scaled by the cycle bound and the clock
            rtf32 = anchor_rtf * (c["fp32"] / (b.cores * b.ghz * 1e9)) / anchor_s
            dec, front = rtf32 * (1 - front_share), rtf32 * front_share
            row = spans.setdefault(
                b.name, {"board": b.name, "core": b.core, "ratio": {}, "rtf": {}}
            )
            values = {"fp32": (1.0, rtf32)}
            for p in c:
                if p != "fp32":
                    r = c[p] / c["fp32"]
                    flow = flow_share if p == "int8" else 0.0  # the engine's int8 front graph
                    values[p] = (r, dec * r + front * (1 - flow) + front * flow * r)
            for p, (r, rtf) in values.items():
                row["ratio"].setdefault(p, []).append(r)
                row["rtf"].setdefault(p, []).append(rtf)
    rows = []
    for row in spans.values():
        row["ratio"] = {p: sorted(set(v)) for p, v in row["ratio"].items() if p != "fp32"}
        row["rtf"] = {p: (min(v), max(v)) for p, v in row["rtf"].items()}
        rows.append(row)
    return rows


def _span(lo: float, hi: float, fmt: str = "{:.1f}", unit: str = "") -> str:
    a, b = fmt.format(lo), fmt.format(hi)
    return f"{a}{unit}" if a == b else f"{a}–{b}{unit}"


def table(rows: list[dict[str, Any]], answer: float) -> str:
    lines = [
        "| board | decoder time int8 / fp32 | fp32 RTF | int8 RTF | wait, int8 | which voice |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        rtf = r["rtf"]
        r8 = r["ratio"]["int8"]
        lo, hi = rtf["int8"]
        best = "int8" if hi < rtf["fp32"][1] else "fp32"
        lines.append(
            f"| {r['board']} | {_span(min(r8), max(r8), '{:.2f}', '×')} | {_span(*rtf['fp32'])} | "
            f"{_span(lo, hi)} | {_span(guard_wait(answer, lo), guard_wait(answer, hi), unit=' s')} "
            f"| {advice(lo, hi, best)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", type=Path, default=RESULTS)
    parser.add_argument(
        "--front-share", type=float, default=0.2, help="fp32 time outside the decoder"
    )
    parser.add_argument(
        "--flow-share",
        type=float,
        default=0.48,
        help="part of that time in the flow's feed-forward convolutions (int8 with the int8 voice)",
    )
    parser.add_argument("--answer", type=float, default=3.0, help="answer length D (s)")
    args = parser.parse_args(argv)
    res = json.loads(args.results.read_text())
    rows = estimate(res, args.front_share, args.flow_share)
    print("ESTIMATE, not measured on any board (method: docs/arm-evidence.md)")
    print(table(rows, args.answer))
    for r in rows:
        if "fp16" in r["ratio"]:
            f16 = r["ratio"]["fp16"]
            print(f"{r['board']}: decoder fp16 / fp32 {_span(min(f16), max(f16), '{:.2f}', '×')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
