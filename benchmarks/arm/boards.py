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


def advice(rtf: float, precision: str) -> str:
    """Which voice to run on a board whose best full-size voice runs at `rtf`."""
    if rtf <= 0.8:
        return f"a neural voice, {precision} (keeps up with playback)"
    if rtf <= 1.0:
        return f"a neural voice, {precision} (just keeps up; short waits when busy)"
    if rtf <= 2.0:
        return (
            f"a neural voice, {precision}, if a wait before each answer is fine; "
            "else `openjtalk-mei`"
        )
    return "`openjtalk-mei` (a neural answer waits longer than it lasts)"


def decoder_cycles(res: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per core: the decoder's throughput-bound cycles per second of audio, by precision."""
    out: dict[str, dict[str, float]] = {}
    for key, t in res["targets"].items():
        out[key] = {
            p: g["estimate"][key]["cycles"]
            for p, g in t["graphs"].items()
            if key in g.get("estimate", {})
        }
    return out


def estimate(
    res: dict[str, Any], front_share: float = 0.2, flow_share: float = 0.48
) -> list[dict[str, Any]]:
    """One row per board (see the module doc)."""
    cyc = decoder_cycles(res)
    anchor_rtf = HAYAKOE_PI4_RTF * OURS_VS_HAYAKOE_FP32
    anchor_s = cyc[ANCHOR.core]["fp32"] / (ANCHOR.cores * ANCHOR.ghz * 1e9)
    k = anchor_rtf * (1 - front_share) / anchor_s  # real time over the bound
    rows = []
    for b in BOARDS:
        c = cyc[b.core]
        dec = {p: k * n / (b.cores * b.ghz * 1e9) for p, n in c.items()}
        front = dec["fp32"] * front_share / (1 - front_share)
        ratio8 = c["int8"] / c["fp32"]
        rtf = {
            "fp32": dec["fp32"] + front,
            "int8": dec["int8"] + front * (1 - flow_share) + front * flow_share * ratio8,
        }
        if "fp16" in dec:
            rtf["fp16"] = dec["fp16"] + front  # the decoder alone in fp16
        best = min(rtf, key=lambda p: rtf[p])
        rows.append(
            {
                "board": b.name,
                "core": b.core,
                "int8_vs_fp32": ratio8,
                "fp16_vs_fp32": c["fp16"] / c["fp32"] if "fp16" in c else None,
                "rtf": rtf,
                "best": best,
            }
        )
    return rows


def table(rows: list[dict[str, Any]], answer: float) -> str:
    lines = [
        "| board | decoder int8 / fp32 | fp32 RTF | int8 RTF | wait, best | which voice |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        rtf, best = r["rtf"], r["best"]
        lines.append(
            f"| {r['board']} | {r['int8_vs_fp32']:.2f}× | {rtf['fp32']:.1f} | {rtf['int8']:.1f} | "
            f"{guard_wait(answer, rtf[best]):.1f} s | {advice(rtf[best], best)} |"
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
        if r["fp16_vs_fp32"] is not None:
            print(f"{r['board']}: decoder fp16 / fp32 {r['fp16_vs_fp32']:.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
