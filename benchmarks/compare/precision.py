"""Ours fp32 / int8 / auto on the full-size random-weight voice, and hayakoe 1.3.1 live in the
same run with `--hayakoe` (`python -m benchmarks.compare precision --hayakoe`; also a phase of
side-by-side). `auto` is the measured choice (`engine.int8.measure`: of what passes the gate,
the fastest runtime × precision here), made before `prepare()` returns, so nothing switches
while timed. Rows (`drive`): `generate()` real-time factor, `stream()` first audio and total
time against `generate()`'s, idle (`--reps`) and with one core kept busy (`--busy-reps`);
Wyoming streaming first audio (`--wyoming-reps`); RSS after `prepare()`; the fidelity report
of the voice's int8 graphs and what `auto` chose. Records benchmarks/results/precision.md and
.json. No `--quick`.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from benchmarks.compare import drive
from benchmarks.compare.render import render_precision
from benchmarks.lib import CACHE
from benchmarks.lib.report import Report, log
from benchmarks.lib.stats import busy_core
from benchmarks.lib.voices import TEXTS, VOICE_NAME, fullsize_root

RESULT = "precision"
QUICK = False
VARIANTS = {
    f"ours {p}": drive.Variant(
        "ours", {"WYOMING_HAYAKOE_PRECISION": p, "WYOMING_HAYAKOE_QUANTIZE_IN_BACKGROUND": "0"}
    )
    for p in ("fp32", "int8", "auto")
}


def _first_prepare(root: Path, name: str) -> dict:
    """int8: makes the graphs (waited for); auto: measures its choice (kept in the cache)."""
    log(f"precision: first prepare of {name}")
    with drive.worker(f"{name} (first)", VARIANTS[name], root) as call:
        return call("prepare")


def measured(
    root: Path, reps: int, busy_reps: int, hayakoe: bool, wyoming_reps: int, texts: dict[str, str]
) -> Report:
    """The report, its figures in `data` (module text)."""
    report = Report("int8 against fp32" + (" and hayakoe" if hayakoe else ""))
    variants = {**VARIANTS, **({"hayakoe": drive.Variant("hayakoe")} if hayakoe else {})}
    res: dict[str, Any] = {"load_avg_start": list(os.getloadavg())}
    t0 = time.perf_counter()
    _first_prepare(root, "ours int8")
    res["int8_ready_s"] = time.perf_counter() - t0
    found = sorted((CACHE / "ours-cache" / "int8").glob(f"{VOICE_NAME}-*/fidelity.json"))
    res["fidelity"] = json.loads(found[-1].read_text(encoding="utf-8")) if found else None
    auto = _first_prepare(root, "ours auto")
    res["auto_choice"] = "; ".join(f"{n} runs {v}" for n, v in auto["runs"].items())
    res["auto_measure_s"] = auto["prepare_s"]
    res["memory"] = drive.memory(root, variants, 1)
    speed_texts = {k: v for k, v in texts.items() if k in ("short", "medium", "long")}
    res["idle"] = drive.speed(root, variants, speed_texts, reps)
    if busy_reps:
        with busy_core():
            res["busy"] = drive.speed(root, variants, speed_texts, busy_reps)
    if wyoming_reps:
        wy_texts = {k: v for k, v in texts.items() if k in ("short", "medium")}
        wy = drive.wyoming(root, variants, wy_texts, wyoming_reps, oneshot=False)
        res["wyoming"] = {
            n: {t: f["streaming_ttfa_s"] for t, f in p.items()} for n, p in wy.items()
        }
    res["load_avg_end"], res["hayakoe_live"] = list(os.getloadavg()), hayakoe
    report.data = res
    report.note(render_precision(res))
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reps", type=int, default=2, help="rounds, idle")
    parser.add_argument("--busy-reps", type=int, default=1, help="rounds, one core busy (0: none)")
    parser.add_argument("--wyoming-reps", type=int, default=1, help="rounds over Wyoming (0: none)")
    parser.add_argument("--hayakoe", action="store_true", help="measure hayakoe live too")


def run(args: argparse.Namespace) -> Report:
    if args.quick:
        raise SystemExit("precision has no --quick (the full-size voice)")
    root = fullsize_root()
    return measured(root, args.reps, args.busy_reps, args.hayakoe, args.wyoming_reps, TEXTS)
