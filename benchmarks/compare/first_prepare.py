"""The first `prepare()` on a fresh cache, ours with default options against hayakoe 1.3.1's
on the same files (the full-size random-weight voice), and what `auto` chooses.

Part 1, every round each variant in a new process on a cache of its own made empty for it
(downloads excluded: the voice and BERT are local folders), the order reversed every other
round: ours (`EngineOptions()` defaults: `precision="auto"`, nothing in the background) with
OpenVINO installed and with it hidden, ours again on the cache its first run left (warm),
and hayakoe. Ratios: the medians' ours / hayakoe, and fresh / warm.

Part 2 (`--auto`): the int8 graphs made once into the benchmark's cache (`precision="int8"`,
minutes the first time), then the measurement a server takes in the background, timed and
printed with its choice and every candidate's ratio (it must choose ORT int8 or a faster
gated candidate), then `generate()` real-time factors of `auto` against `int8` (`drive.speed`,
alternating rounds). No `--quick` (the full-size voice).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.compare import drive
from benchmarks.lib import CACHE, REPO
from benchmarks.lib.report import Report, log
from benchmarks.lib.stats import alternate, busy_core
from benchmarks.lib.voices import TEXTS, VOICE_NAME, fullsize_root

RESULT = "first-prepare"
QUICK = False
LIBRARY = {"WYOMING_HAYAKOE_QUANTIZE_IN_BACKGROUND": "0"}  # the library's default
FRESH = CACHE / "fresh"
NO_OPENVINO = CACHE / "no-openvino"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reps", type=int, default=3, help="rounds of fresh prepares")
    parser.add_argument("--busy", action="store_true", help="one core kept busy throughout")
    parser.add_argument("--auto", action="store_true", help="part 2: what auto chooses")
    parser.add_argument("--speed-reps", type=int, default=2, help="part 2: RTF rounds")


def _hide_openvino() -> str:
    """A folder whose `openvino` package fails to import, as where it is not installed."""
    pkg = NO_OPENVINO / "openvino"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text('raise ImportError("hidden by the benchmark")\n')
    return f"{NO_OPENVINO}{os.pathsep}{REPO}"


def _prepare(name: str, variant: drive.Variant, root: Path) -> dict[str, Any]:
    with drive.worker(f"first-prepare {name}", variant, root) as call:
        t0 = time.perf_counter()
        answer = call("prepare")
        answer["wall_s"] = time.perf_counter() - t0
    return answer


def fresh_prepares(root: Path, reps: int) -> dict[str, list[dict[str, Any]]]:
    hidden = _hide_openvino()

    def fresh(name: str, engine: str, env: dict[str, str]) -> dict[str, Any]:
        cache = FRESH / name.replace(" ", "-")
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(parents=True)
        answer = _prepare(name, drive.Variant(engine, {**env, "HAYAKOE_CACHE": str(cache)}), root)
        log(f"first-prepare: {name} {answer['prepare_s']:.1f} s, runs {answer.get('runs')}")
        return answer

    def warm() -> dict[str, Any]:  # ours on the cache its fresh run just left
        cache = FRESH / "ours-defaults"
        return _prepare(
            "warm", drive.Variant("ours", {**LIBRARY, "HAYAKOE_CACHE": str(cache)}), root
        )

    variants = {
        "ours, defaults": lambda: fresh("ours defaults", "ours", LIBRARY),
        "ours, defaults, warm cache": warm,
        "ours, OpenVINO not installed": lambda: fresh(
            "ours no-openvino", "ours", {**LIBRARY, "PYTHONPATH": hidden}
        ),
        "hayakoe 1.3.1": lambda: fresh("hayakoe", "hayakoe", {}),
    }
    return alternate(variants, reps)


def auto_choice(root: Path, speed_reps: int) -> dict[str, Any]:
    """Part 2 (see the module text)."""
    from engine import EngineOptions
    from engine.bert import load_bert
    from engine.neural.build import BuildSettings
    from engine.neural.loader import find_native, load_voice_files
    from engine.options import Precision

    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    made = _prepare(
        "int8", drive.Variant("ours", {**LIBRARY, "WYOMING_HAYAKOE_PRECISION": "int8"}), root
    )
    out["int8_prepare_s"] = time.perf_counter() - t0
    out["int8_runs"] = made["runs"]
    cache = CACHE / "ours-cache"
    bert = load_bert(root, "cpu", cache_dir=cache)
    built = load_voice_files(
        find_native(VOICE_NAME, root, "cpu", cache),
        bert,
        BuildSettings(options=EngineOptions(precision=Precision.AUTO), cache_dir=cache, defer=True),
    )
    job = built.plan.job
    if job is None:  # a measurement kept from an earlier run: read back
        choice = built.plan.choice
        out["measure_s"] = None
    else:
        t0 = time.perf_counter()
        choice = job.choose(job.graphs, progress=lambda line: log(f"measure: {line}"))
        out["measure_s"] = time.perf_counter() - t0
    m = choice.measurement
    out["chosen"] = choice.label
    out["summary"] = m.summary() if m is not None else choice.reason
    out["trials"] = [t.__dict__ for t in m.trials] if m is not None else []
    del built, bert
    variants = {
        name: drive.Variant("ours", {**LIBRARY, "WYOMING_HAYAKOE_PRECISION": p})
        # int8 first: graphs a recipe change left behind are made again before auto looks
        for name, p in (("ours int8", "int8"), ("ours auto", "auto"))
    }
    texts = {k: TEXTS[k] for k in ("medium", "long")}
    out["speed"] = drive.speed(root, variants, texts, speed_reps)
    return out


def run(args: argparse.Namespace) -> Report:
    if args.quick:
        raise SystemExit("first-prepare has no --quick (the full-size voice)")
    root = fullsize_root()
    report = Report("First prepare() on a fresh cache" + (", one core busy" if args.busy else ""))
    res: dict[str, Any] = {"load_avg_start": list(os.getloadavg())}
    with busy_core(args.busy):
        rounds = fresh_prepares(root, args.reps)
    res["prepare"] = rounds
    med = {n: statistics.median(r["prepare_s"] for r in rs) for n, rs in rounds.items()}
    base = med["hayakoe 1.3.1"]
    rows = []
    for name, rs in rounds.items():
        runs = "; ".join(f"{v}" for v in rs[-1].get("runs", {}).values() if v) or "–"
        rows.append([name, f"{med[name]:.1f}", f"{med[name] / base:.2f}×", runs])
    report.table(["variant", "prepare() s (median)", "/ hayakoe", "runs"], rows)
    fresh_warm = med["ours, defaults"] / med["ours, defaults, warm cache"]
    report.note(
        f"fresh / warm cache (ours, defaults): {fresh_warm:.2f}×; "
        f"{args.reps} rounds; full-size voice, random weights"
    )
    if args.auto:
        auto = auto_choice(root, args.speed_reps)
        res["auto"] = auto
        report.note(
            f"auto's measurement (a server's, in the background): {auto['measure_s'] or 0:.1f} s; "
            f"chose {auto['chosen']}: {auto['summary']}"
        )
        speed = auto["speed"]
        rows = []
        for text in ("medium", "long"):
            a, i = speed["ours auto"][text]["rtf"], speed["ours int8"][text]["rtf"]
            rows.append([text, f"{a:.3f}", f"{i:.3f}", f"{a / i:.3f}×"])
        report.table(["text", "RTF auto", "RTF int8", "auto / int8"], rows)
    res["load_avg_end"] = list(os.getloadavg())
    report.data = res
    return report
