"""int8 vs fp32 decoder on the full-size benchmark voice, and both against hayakoe.

    python benchmarks/precision.py                   # ours int8 vs ours fp32 (+ recorded hayakoe)
    python benchmarks/precision.py --hayakoe         # hayakoe measured live in the same run
    python benchmarks/run.py ...                     # runs this phase too (--no-precision skips)

Rows (medians over `--reps` alternating runs in one run, fresh worker processes):

- real-time factor of `generate()` (medium and long texts), time to first audio of the engine's
  `stream()` and its total time, on an idle machine and with one core kept busy by a spinning
  process (`--busy-reps`);
- Wyoming streaming time to first audio (real servers on loopback, `--precision` set);
- RSS after `prepare()` (one fresh process per variant);
- the fidelity report of the voice's int8 graphs (held-out sentences, int8 vs fp32).

hayakoe: measured live with `--hayakoe` (its own venv, see run.py); otherwise the ratio
hayakoe / ours-fp32 recorded in benchmarks/results/latest.json is applied to this run's
ours-fp32 figure, and the table says so. Writes benchmarks/results/precision.json and
precision.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import harness  # noqa: E402 (after the path set-up)
from common import TEXTS, VOICE_NAME  # noqa: E402

VARIANTS = {"ours fp32": "fp32", "ours int8": "int8"}
RTF_TEXTS = ("medium", "long")
TTFA_TEXTS = ("short", "medium", "long")


def _busy() -> subprocess.Popen:
    """A process that keeps one core busy (the 'one core busy' condition)."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def _workers(with_hayakoe: bool) -> dict[str, Any]:
    workers = {
        name: harness.start("ours", {"WYOMING_HAYAKOE_PRECISION": p}, label=name)
        for name, p in VARIANTS.items()
    }
    if with_hayakoe:
        workers["hayakoe"] = harness.start("hayakoe")
    return workers


def _speed(root: Path, reps: int, with_hayakoe: bool) -> dict:
    workers = _workers(with_hayakoe)
    try:
        for w in workers.values():
            w.call("prepare", root=str(root), speakers=[VOICE_NAME])
        texts = {k: TEXTS[k] for k in TTFA_TEXTS if k in TEXTS}
        return harness.timed_calls(workers, texts, reps)
    finally:
        for w in workers.values():
            w.close()


def _memory(root: Path, with_hayakoe: bool) -> dict:
    out = {}
    names = [*VARIANTS, *(["hayakoe"] if with_hayakoe else [])]
    for name in names:
        if name == "hayakoe":
            w = harness.start("hayakoe")
        else:
            w = harness.start("ours", {"WYOMING_HAYAKOE_PRECISION": VARIANTS[name]}, label=name)
        try:
            r = w.call("prepare", root=str(root), speakers=[VOICE_NAME])
            out[name] = {"rss_after_prepare": r["rss"], "prepare_s": r["prepare_s"]}
        finally:
            w.close()
    return out


def _wyoming(root: Path, reps: int, with_hayakoe: bool) -> dict:
    from wyoming_client import synthesize_streaming, wait_ready

    texts = {k: TEXTS[k] for k in ("short", "medium") if k in TEXTS}
    ports = {
        name: harness.free_port() for name in [*VARIANTS, *(["hayakoe"] if with_hayakoe else [])]
    }
    procs = {}
    for name, port in ports.items():
        if name == "hayakoe":
            procs[name] = harness.start_server("hayakoe", root, port)
        else:
            procs[name] = harness.start_server(
                "ours", root, port, {"WYOMING_HAYAKOE_PRECISION": VARIANTS[name]}, label=name
            )
    raw: dict[str, dict[str, list[float]]] = {n: {} for n in ports}

    async def go() -> None:
        for port in ports.values():
            await wait_ready("127.0.0.1", port, timeout=1800)
        for port in ports.values():
            for text in texts.values():
                await synthesize_streaming("127.0.0.1", port, text, VOICE_NAME)
        for rep in range(reps):
            order = list(ports) if rep % 2 == 0 else list(ports)[::-1]
            for key, text in texts.items():
                for name in order:
                    r = await synthesize_streaming("127.0.0.1", ports[name], text, VOICE_NAME)
                    raw[name].setdefault(key, []).append(r["ttfa_s"])

    try:
        asyncio.run(go())
    finally:
        harness.stop_servers(procs)
    return {n: {k: harness.median(v) for k, v in per.items()} for n, per in raw.items()}


def _fidelity(root: Path) -> dict | None:
    """The fidelity report of the voice's int8 graphs in the benchmark cache."""
    found = sorted((run_cache() / "int8").glob(f"{VOICE_NAME}-*/fidelity.json"))
    if not found:
        return None
    return json.loads(found[-1].read_text(encoding="utf-8"))


def run_cache() -> Path:
    return harness.OURS_CACHE


def phase_precision(
    root: Path, reps: int, busy_reps: int, with_hayakoe: bool, wyoming_reps: int
) -> dict:
    """All the figures above, as one dict (saved by the caller)."""
    results: dict[str, Any] = {"load_avg_start": list(__import__("os").getloadavg())}
    harness.log("precision: making / finding the int8 graphs (first prepare with int8)")
    t0 = time.perf_counter()
    make_env = {  # prepare waits for the graphs (not made in the background)
        "WYOMING_HAYAKOE_PRECISION": "int8",
        "WYOMING_HAYAKOE_QUANTIZE_IN_BACKGROUND": "0",
    }
    w = harness.start("ours", make_env, label="ours int8 (make)")
    try:
        w.call("prepare", root=str(root), speakers=[VOICE_NAME])
    finally:
        w.close()
    results["int8_ready_s"] = time.perf_counter() - t0
    results["fidelity"] = _fidelity(root)
    harness.log("precision: memory")
    results["memory"] = _memory(root, with_hayakoe)
    harness.log("precision: speed, idle")
    results["idle"] = _speed(root, reps, with_hayakoe)
    if busy_reps:
        harness.log("precision: speed, one core busy")
        spinner = _busy()
        try:
            results["busy"] = _speed(root, busy_reps, with_hayakoe)
        finally:
            spinner.kill()
            spinner.wait()
    if wyoming_reps:
        harness.log("precision: Wyoming streaming")
        results["wyoming"] = _wyoming(root, wyoming_reps, with_hayakoe)
    results["load_avg_end"] = list(__import__("os").getloadavg())
    results["hayakoe_live"] = with_hayakoe
    return results


# ------------------------------------------------------------------------------ report ---


def _recorded() -> dict | None:
    path = HERE / "results" / "latest.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _fmt(v: float | None, unit: str = "") -> str:
    if v is None or v != v:
        return "–"
    if unit == "MiB":
        return f"{v / 2**20:,.0f}"
    return f"{v:.3f}" if v < 10 else f"{v:.1f}"


def render(results: dict) -> str:
    """Markdown table: ours fp32 | ours int8 | int8/fp32 | hayakoe | int8/hayakoe (target)."""
    rec = _recorded()
    live = results.get("hayakoe_live")
    lines = harness.table_head(
        [
            "measure",
            "text",
            "ours fp32",
            "ours int8",
            "int8 / fp32",
            "hayakoe",
            "int8 / hayakoe",
            "target",
        ],
        "llrrrrrl",
    )

    def hayakoe(cond: str, text: str, key: str, fp32: float) -> float | None:
        if live:
            return results[cond].get("hayakoe", {}).get(text, {}).get(key)
        if rec is None:
            return None
        try:  # recorded ratio hayakoe / ours, applied to this run's ours fp32
            h, o = rec["speed"]["hayakoe"][text][key], rec["speed"]["ours"][text][key]
        except KeyError:
            return None
        return fp32 * h / o

    def row(name: str, text: str, f: float, i: float, h: float | None, target: float | None):
        ratio_h = i / h if h else None
        ok = "" if target is None or ratio_h is None else (" ✅" if ratio_h <= target else " ❌")
        tgt = f"≤ {target:g}×{ok}" if target is not None else ""
        unit = "MiB" if "MiB" in name else ""
        ratio = f"{ratio_h:.2f}×" if ratio_h else "–"
        cells = [name, text, _fmt(f, unit), _fmt(i, unit), f"{i / f:.2f}×", _fmt(h, unit)]
        lines.append(harness.table_row([*cells, ratio, tgt]))

    for cond, label in (("idle", "idle"), ("busy", "one core busy")):
        per = results.get(cond)
        if not per:
            continue
        f32, i8 = per["ours fp32"], per["ours int8"]
        for text in RTF_TEXTS:
            f, i = f32[text]["rtf"], i8[text]["rtf"]
            row(
                f"RTF `generate()`, {label}",
                text,
                f,
                i,
                hayakoe(cond, text, "rtf", f),
                0.5 if cond == "idle" else None,
            )
        for text in TTFA_TEXTS:
            f, i = f32[text]["ttfa_s"], i8[text]["ttfa_s"]
            row(
                f"TTFA (s) engine `stream()`, {label}",
                text,
                f,
                i,
                hayakoe(cond, text, "ttfa_s", f),
                0.25 if cond == "idle" else None,
            )
        for text in RTF_TEXTS:
            f = f32[text]["stream_wall_s"] / f32[text]["wall_s"]
            i = i8[text]["stream_wall_s"] / i8[text]["wall_s"]
            name = f"`stream()` / `generate()` total time, {label}"
            cells = [name, text, f"{f:.2f}", f"{i:.2f}", f"{i / f:.2f}×", "", ""]
            lines.append(harness.table_row([*cells, "≤ 1.15 (item 6)"]))
    wy = results.get("wyoming")
    if wy:
        for text in wy["ours fp32"]:
            f, i = wy["ours fp32"][text], wy["ours int8"][text]
            h = wy.get("hayakoe", {}).get(text)
            if h is None and rec is not None:
                try:
                    r = rec["wyoming"]
                    h = (
                        f
                        * r["hayakoe"][text]["streaming_ttfa_s"]
                        / r["ours"][text]["streaming_ttfa_s"]
                    )
                except KeyError:
                    h = None
            row("TTFA (s) Wyoming streaming", text, f, i, h, None)
    mem = results.get("memory")
    if mem:
        f, i = mem["ours fp32"]["rss_after_prepare"], mem["ours int8"]["rss_after_prepare"]
        h = mem.get("hayakoe", {}).get("rss_after_prepare")
        if h is None and rec is not None:
            m = rec["memory"]
            h = f * m["hayakoe"]["rss_after_prepare"] / m["ours"]["rss_after_prepare"]
        row("RSS after `prepare()` (MiB)", "1 voice", f, i, h, 0.6)
    out = "\n".join(lines)
    fid = results.get("fidelity")
    if fid:
        th = fid["thresholds"]
        out += (
            f"\n\nFidelity of the benchmark voice's int8 graphs ({len(fid['sentences'])} held-out "
            f"sentences, int8 front and decoder vs fp32 ones, same inputs and noise): "
            f"audible-band SNR min "
            f"{fid['snr_db_min']:.1f} dB (gate ≥ {th['min_snr_db']:g}), mean "
            f"{fid['snr_db_mean']:.1f} dB; log-mel distance {fid['logmel_db_mean']:.2f} dB "
            f"(≤ {th['max_logmel_db']:g}); MCD {fid['mcd_db_mean']:.2f} dB "
            f"(≤ {th['max_mcd_db']:g}) — gate {'passed' if fid['passed'] else 'FAILED'}; "
            f"making them took {fid['settings'].get('timings_s')} (seconds)."
        )
    if not live:
        when = rec["date_utc"] if rec else "?"
        out += (
            "\n\nhayakoe was not run here: its column is this run's ours-fp32 figure times the "
            f"hayakoe / ours ratio recorded in benchmarks/results/latest.json ({when} UTC, "
            "same machine and voice), so int8 / hayakoe = (int8 / fp32, this run) × "
            "(ours / hayakoe, recorded)."
        )
    la, lb = results.get("load_avg_start"), results.get("load_avg_end")
    out += f"\n\nLoad average at start {la}, at end {lb} (a shared 2-core machine)."
    return out


def memory_only(root: Path, with_hayakoe: bool) -> int:
    """RSS after `prepare()`: ours fp32, ours int8 (graphs made first) and hayakoe, in one
    run; writes results/precision-memory.json and .md."""
    results: dict[str, Any] = {"load_avg_start": list(__import__("os").getloadavg())}
    w = harness.start("ours", {"WYOMING_HAYAKOE_PRECISION": "int8"}, label="ours int8 (make)")
    try:
        w.call("prepare", root=str(root), speakers=[VOICE_NAME])
    finally:
        w.close()
    results["memory"] = mem = _memory(root, with_hayakoe)
    results["load_avg_end"] = list(__import__("os").getloadavg())
    f, i = mem["ours fp32"]["rss_after_prepare"], mem["ours int8"]["rss_after_prepare"]
    h = mem.get("hayakoe", {}).get("rss_after_prepare")
    lines = [
        "| RSS after `prepare()`, 1 voice (MiB) | ours fp32 | ours int8 | int8 / fp32 | hayakoe "
        "| int8 / hayakoe | target |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
        f"| full-size benchmark voice | {f / 2**20:,.0f} | {i / 2**20:,.0f} | {i / f:.2f}× | "
        + (
            f"{h / 2**20:,.0f} | {i / h:.2f}× | ≤ 0.65× {'✅' if i / h <= 0.65 else '❌'} |"
            if h
            else "– | – | |"
        ),
    ]
    md = "\n".join(lines)
    out = HERE / "results"
    (out / "precision-memory.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    (out / "precision-memory.md").write_text(md + "\n", encoding="utf-8")
    print(md)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description="int8 vs fp32 (and hayakoe) on the full-size voice"
    )
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--busy-reps", type=int, default=1)
    parser.add_argument("--wyoming-reps", type=int, default=1)
    parser.add_argument("--hayakoe", action="store_true", help="measure hayakoe live too")
    parser.add_argument(
        "--memory-only",
        action="store_true",
        help="only RSS after prepare() (writes precision-memory.json/.md)",
    )
    args = parser.parse_args()
    import fullsize

    root = fullsize.build()
    if args.memory_only:
        return memory_only(root, args.hayakoe)
    results = phase_precision(root, args.reps, args.busy_reps, args.hayakoe, args.wyoming_reps)
    out = HERE / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "precision.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    md = render(results)
    (out / "precision.md").write_text(md + "\n", encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
