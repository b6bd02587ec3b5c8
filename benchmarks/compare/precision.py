"""int8 vs fp32 decoder on the full-size benchmark voice, and both against hayakoe.

    python -m benchmarks.compare precision            # ours int8 vs ours fp32 (+ recorded hayakoe)
    python -m benchmarks.compare precision --hayakoe  # hayakoe measured live in the same run
    python -m benchmarks.compare side-by-side         # runs this phase too (--no-precision skips)

Rows (medians over `--reps` alternating runs in one run, fresh worker processes):

- real-time factor of `generate()` (medium and long texts), time to first audio of the engine's
  `stream()` and its total time, on an idle machine and with one core kept busy by a spinning
  process (`--busy-reps`);
- Wyoming streaming time to first audio (real servers on loopback, `--precision` set);
- RSS after `prepare()` (one fresh process per variant);
- the fidelity report of the voice's int8 graphs (held-out sentences, int8 vs fp32).

hayakoe: measured live with `--hayakoe` (its own venv, see `drive`); otherwise its columns
stay empty. Records benchmarks/results/precision.md and .json
(`--memory-only`: precision-memory.md and .json). No `--quick` (the full-size voice).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from benchmarks.compare import drive
from benchmarks.lib import RESULTS
from benchmarks.lib.report import Report, log, table
from benchmarks.lib.stats import busy_core, median
from benchmarks.lib.voices import TEXTS, VOICE_NAME
from benchmarks.lib.wyoming import listen

RESULT = "precision"
QUICK = False
VARIANTS = {"ours fp32": "fp32", "ours int8": "int8", "ours auto": "auto"}
"""Variant → `--precision`. `auto` is the measured choice (`engine.int8.measure`: of what
passes the gate, the fastest runtime × precision on this machine), made before `prepare()`
returns (nothing in the background, so no switch happens while it is timed)."""


def _env(precision: str) -> dict[str, str]:
    return {"WYOMING_HAYAKOE_PRECISION": precision, "WYOMING_HAYAKOE_QUANTIZE_IN_BACKGROUND": "0"}


RTF_TEXTS = ("medium", "long")
TTFA_TEXTS = ("short", "medium", "long")


def _workers(with_hayakoe: bool) -> dict[str, Any]:
    workers = {name: drive.start("ours", _env(p), label=name) for name, p in VARIANTS.items()}
    if with_hayakoe:
        workers["hayakoe"] = drive.start("hayakoe")
    return workers


def _speed(root: Path, reps: int, with_hayakoe: bool) -> dict:
    workers = _workers(with_hayakoe)
    try:
        for w in workers.values():
            w.call("prepare", root=str(root), speakers=[VOICE_NAME])
        texts = {k: TEXTS[k] for k in TTFA_TEXTS if k in TEXTS}
        return drive.timed_calls(workers, texts, reps)
    finally:
        for w in workers.values():
            w.close()


def _memory(root: Path, with_hayakoe: bool) -> dict:
    out = {}
    names = [*VARIANTS, *(["hayakoe"] if with_hayakoe else [])]
    for name in names:
        if name == "hayakoe":
            w = drive.start("hayakoe")
        else:
            w = drive.start("ours", _env(VARIANTS[name]), label=name)
        try:
            r = w.call("prepare", root=str(root), speakers=[VOICE_NAME])
            out[name] = {"rss_after_prepare": r["rss"], "prepare_s": r["prepare_s"]}
        finally:
            w.close()
    return out


def _wyoming(root: Path, reps: int, with_hayakoe: bool) -> dict:
    texts = {k: TEXTS[k] for k in ("short", "medium") if k in TEXTS}
    servers = {
        name: drive.server("ours", root, _env(p), label=name) for name, p in VARIANTS.items()
    }
    if with_hayakoe:
        servers["hayakoe"] = drive.server("hayakoe", root)
    raw: dict[str, dict[str, list[float]]] = {n: {} for n in servers}

    async def ttfa(name: str, text: str) -> float:
        port = servers[name].port
        return (await listen("127.0.0.1", port, text, VOICE_NAME, streamed=True)).first_audio_s

    async def go() -> None:
        for s in servers.values():
            await s.wait_ready()
        for name in servers:
            for text in texts.values():
                await ttfa(name, text)
        for rep in range(reps):
            order = list(servers) if rep % 2 == 0 else list(servers)[::-1]
            for key, text in texts.items():
                for name in order:
                    raw[name].setdefault(key, []).append(await ttfa(name, text))

    try:
        asyncio.run(go())
    finally:
        for s in servers.values():
            s.stop()
    return {n: {k: median(v) for k, v in per.items()} for n, per in raw.items()}


def _fidelity(root: Path) -> dict | None:
    """The fidelity report of the voice's int8 graphs in the benchmark cache."""
    found = sorted((drive.OURS_CACHE / "int8").glob(f"{VOICE_NAME}-*/fidelity.json"))
    if not found:
        return None
    return json.loads(found[-1].read_text(encoding="utf-8"))


def phase_precision(
    root: Path, reps: int, busy_reps: int, with_hayakoe: bool, wyoming_reps: int
) -> dict:
    """All the figures above, as one dict (saved by the caller)."""
    results: dict[str, Any] = {"load_avg_start": list(os.getloadavg())}
    log("precision: making / finding the int8 graphs (first prepare with int8)")
    t0 = time.perf_counter()
    # prepare waits for the graphs (not made in the background)
    with drive.start("ours", _env("int8"), label="ours int8 (make)") as w:
        w.call("prepare", root=str(root), speakers=[VOICE_NAME])
    results["int8_ready_s"] = time.perf_counter() - t0
    results["fidelity"] = _fidelity(root)
    log("precision: the auto choice (measured once, kept in the cache)")
    with drive.start("ours", _env("auto"), label="ours auto (measure)") as w:
        r = w.call("prepare", root=str(root), speakers=[VOICE_NAME])
    results["auto_choice"] = "; ".join(f"{n} runs {v}" for n, v in (r.get("runs") or {}).items())
    results["auto_measure_s"] = r.get("prepare_s")
    log("precision: memory")
    results["memory"] = _memory(root, with_hayakoe)
    log("precision: speed, idle")
    results["idle"] = _speed(root, reps, with_hayakoe)
    if busy_reps:
        log("precision: speed, one core busy")
        with busy_core():
            results["busy"] = _speed(root, busy_reps, with_hayakoe)
    if wyoming_reps:
        log("precision: Wyoming streaming")
        results["wyoming"] = _wyoming(root, wyoming_reps, with_hayakoe)
    results["load_avg_end"] = list(os.getloadavg())
    results["hayakoe_live"] = with_hayakoe
    return results


# ------------------------------------------------------------------------------ report ---


def _fmt(v: float | None, unit: str = "") -> str:
    if v is None or v != v:
        return "–"
    if unit == "MiB":
        return f"{v / 2**20:,.0f}"
    return f"{v:.3f}" if v < 10 else f"{v:.1f}"


def render(results: dict) -> str:
    """Markdown table: ours fp32 | ours int8 | int8/fp32 | hayakoe | int8/hayakoe (target);
    the hayakoe columns are empty unless it ran (`--hayakoe`)."""
    rows: list[list[object]] = []

    def row(
        name: str,
        text: str,
        f: float,
        i: float,
        h: float | None,
        target: float | None,
        a: float | None = None,
    ):
        ratio_h = i / h if h else None
        ok = "" if target is None or ratio_h is None else (" ✅" if ratio_h <= target else " ❌")
        tgt = f"≤ {target:g}×{ok}" if target is not None else ""
        unit = "MiB" if "MiB" in name else ""
        ratio = f"{ratio_h:.2f}×" if ratio_h else "–"
        rows.append([name, text, _fmt(f, unit), _fmt(i, unit), f"{i / f:.2f}×", _fmt(h, unit)])
        auto_h = f"{a / h:.2f}×" if a is not None and h else "–"
        rows[-1] += [ratio, tgt, _fmt(a, unit), auto_h]

    for cond, label in (("idle", "idle"), ("busy", "one core busy")):
        if not (per := results.get(cond)):
            continue
        f32, i8, hk = per["ours fp32"], per["ours int8"], per.get("hayakoe", {})
        au = per.get("ours auto", {})
        idle = cond == "idle"
        for key, texts, name, target in (
            ("rtf", RTF_TEXTS, "RTF `generate()`", 0.5),
            ("ttfa_s", TTFA_TEXTS, "TTFA (s) engine `stream()`", 0.25),
        ):
            for text in texts:
                h = hk.get(text, {}).get(key)
                row(
                    f"{name}, {label}",
                    text,
                    f32[text][key],
                    i8[text][key],
                    h,
                    target if idle else None,
                    au.get(text, {}).get(key),
                )
        for text in RTF_TEXTS:
            f = f32[text]["stream_wall_s"] / f32[text]["wall_s"]
            i = i8[text]["stream_wall_s"] / i8[text]["wall_s"]
            name = f"`stream()` / `generate()` total time, {label}"
            rows.append([name, text, f"{f:.2f}", f"{i:.2f}", f"{i / f:.2f}×", "", "", "≤ 1.15"])
            rows[-1] += ["", ""]
    if wy := results.get("wyoming"):
        for text in wy["ours fp32"]:
            h = wy.get("hayakoe", {}).get(text)
            row(
                "TTFA (s) Wyoming streaming",
                text,
                wy["ours fp32"][text],
                wy["ours int8"][text],
                h,
                None,
                wy.get("ours auto", {}).get(text),
            )
    if mem := results.get("memory"):
        f, i = mem["ours fp32"]["rss_after_prepare"], mem["ours int8"]["rss_after_prepare"]
        row(
            "RSS after `prepare()` (MiB)",
            "1 voice",
            f,
            i,
            mem.get("hayakoe", {}).get("rss_after_prepare"),
            0.6,
            mem.get("ours auto", {}).get("rss_after_prepare"),
        )
    head = ["measure", "text", "ours fp32", "ours int8", "int8 / fp32", "hayakoe"]
    tail = ["int8 / hayakoe", "target", "ours auto", "auto / hayakoe"]
    out = "\n".join(table([*head, *tail], rows, "llrrrrrlrr"))
    if choice := results.get("auto_choice"):
        out += f"\n\n`auto` chose: {choice}"
    if fid := results.get("fidelity"):
        th = fid["thresholds"]
        out += (
            f"\n\nFidelity of the benchmark voice's int8 graphs ({len(fid['sentences'])} held-out "
            f"sentences, int8 front and decoder vs fp32 ones, same inputs and noise): "
            f"audible-band SNR min "
            f"{fid['snr_db_min']:.1f} dB (gate ≥ {th['min_snr_db']:g}), mean "
            f"{fid['snr_db_mean']:.1f} dB; log-mel distance {fid['logmel_db_mean']:.2f} dB "
            f"(≤ {th['max_logmel_db']:g}); MCD {fid['mcd_db_mean']:.2f} dB "
            f"(≤ {th['max_mcd_db']:g}) — gate {'passed' if fid['passed'] else 'FAILED'}."
        )
    return out


def memory_only(root: Path, with_hayakoe: bool) -> dict[str, Any]:
    """RSS after `prepare()`: ours fp32, ours int8 (graphs made first) and hayakoe, in one
    run."""
    results: dict[str, Any] = {"load_avg_start": list(os.getloadavg())}
    with drive.start("ours", _env("int8"), label="ours int8 (make)") as w:
        w.call("prepare", root=str(root), speakers=[VOICE_NAME])
    results["memory"] = _memory(root, with_hayakoe)
    results["load_avg_end"] = list(os.getloadavg())
    return results


def render_memory(results: dict) -> str:
    mem = results["memory"]
    f, i = mem["ours fp32"]["rss_after_prepare"], mem["ours int8"]["rss_after_prepare"]
    h = mem.get("hayakoe", {}).get("rss_after_prepare")
    cells: list[object] = ["full-size benchmark voice", f"{f / 2**20:,.0f}", f"{i / 2**20:,.0f}"]
    cells.append(f"{i / f:.2f}×")
    if h:
        cells += [
            f"{h / 2**20:,.0f}",
            f"{i / h:.2f}×",
            f"≤ 0.65× {'✅' if i / h <= 0.65 else '❌'}",
        ]
    else:
        cells += ["–", "–", ""]
    head = ["RSS after `prepare()`, 1 voice (MiB)", "ours fp32", "ours int8", "int8 / fp32"]
    return "\n".join(table([*head, "hayakoe", "int8 / hayakoe", "target"], [cells], "lrrrrrl"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--busy-reps", type=int, default=1)
    parser.add_argument("--wyoming-reps", type=int, default=1)
    parser.add_argument("--hayakoe", action="store_true", help="measure hayakoe live too")
    parser.add_argument(
        "--memory-only", action="store_true", help="only RSS after prepare() (precision-memory)"
    )


def run(args: argparse.Namespace) -> Report:
    from benchmarks.lib.voices import fullsize_root

    if args.quick:
        raise SystemExit("precision has no --quick (the full-size voice)")
    root = fullsize_root()
    report = Report("int8 against fp32" + (" and hayakoe" if args.hayakoe else ""))
    if args.memory_only:
        report.data = memory_only(root, args.hayakoe)
        report.note(render_memory(report.data))
        args.out = args.out or RESULTS / "precision-memory"
        return report
    report.data = phase_precision(root, args.reps, args.busy_reps, args.hayakoe, args.wyoming_reps)
    report.note(render(report.data))
    return report
