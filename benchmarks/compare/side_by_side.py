"""Benchmark our engine against hayakoe 1.3.1, side by side, on the same files and texts.

    python -m benchmarks.compare side-by-side    # everything (about 30 min on 2 cores)
    python -m benchmarks.compare side-by-side --reps 1 --no-ablation --no-wyoming  # a look

What it does (all figures are medians over `--reps` alternating runs, in one run, so the
ratios ours/hayakoe compare like with like on the same machine at the same time):

1. builds (once, cached in benchmarks/.cache/) the full-size random-weight voice
   (`benchmarks.lib.fullsize`) and hayakoe's own torch-free venv (`pip install hayakoe==1.3.1`);
2. memory, one fresh process per engine and measurement: RSS and peak RSS after
   `prepare()` with one voice, peak RSS while speaking every text, RSS added per extra
   speaker (two more copies of the voice);
3. speed, both engines loaded side by side and called in turn (order alternating): wall
   time and real-time factor of `generate()`, time to first audio of `stream()`;
4. Wyoming: our server and a minimal Wyoming server around hayakoe's `astream()` (hayakoe has
   none; see `hayakoe_runner`), each on 127.0.0.1, timed by a real TCP client: time to first
   audio, one-shot `synthesize` and streaming (`synthesize-start/-chunk/-stop`);
5. ablation: our engine with one change turned off, against our engine, to show what each
   kept change is worth;
6. precision (the `precision` part): ours int8 / ours fp32 / hayakoe in the same run (RTF, time to
   first audio of `stream()` and of Wyoming streaming, RSS after prepare, idle and with one
   core busy) and the fidelity report of the voice's int8 graphs.

Both engines get the same options (`voices.OPTIONS`): speed 1, sdp_ratio 0 (durations from
the deterministic predictor, so both make the same number of frames), noise 0.6, noise_w 0.8.
Records benchmarks/results/latest.json, latest.md and latest.png (`--update-readme`: the
table into docs/measurements.md too). No `--quick`: it needs hayakoe's venv (PyPI) and the
full-size voice; `render --quick` checks the report code on the recorded figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from benchmarks.compare.drive import hayakoe_python, server, start, timed_calls
from benchmarks.lib import REPO, RESULTS
from benchmarks.lib.report import Report, log, machine
from benchmarks.lib.stats import median
from benchmarks.lib.voices import OPTIONS, TEXTS, VOICE_NAME
from benchmarks.lib.wyoming import listen

RESULT = "latest"
QUICK = False
ABLATIONS: dict[str, dict[str, Any]] = {
    # name: environment of the variant (the change turned off), what it is, what to time
    "windows": {
        "env": {"WYOMING_HAYAKOE_FIRST_WINDOW": "0"},
        "what": "sub-sentence streaming (windowed decoder)",
        "texts": ("short", "medium", "long"),
        "generate": False,
        "stream": True,
    },
    "release": {
        "env": {"WYOMING_HAYAKOE_RELEASE_MEMORY": "0"},
        "what": "decoder activation memory given back after each request",
        "texts": ("medium", "long"),
        "generate": True,
        "stream": False,
        "memory": True,
    },
}


# ----------------------------------------------------------------------------- phases ---


def phase_memory(root: Path, reps: int) -> dict:
    """RSS after prepare / peak / while speaking, and per extra speaker (fresh processes)."""
    out: dict[str, dict[str, list[float]]] = {"hayakoe": {}, "ours": {}}
    for rep in range(reps):
        for engine in ("ours", "hayakoe") if rep % 2 else ("hayakoe", "ours"):
            rec = out[engine]
            w = start(engine)
            try:
                r = w.call("prepare", root=str(root), speakers=[VOICE_NAME])
                rec.setdefault("rss_after_prepare", []).append(r["rss"])
                rec.setdefault("peak_after_prepare", []).append(r["hwm"])
                rec.setdefault("prepare_s", []).append(r["prepare_s"])
                for text in TEXTS.values():
                    w.call("generate", speaker=VOICE_NAME, text=text, options=OPTIONS)
                    w.call(
                        "stream", speaker=VOICE_NAME, text=text, options=OPTIONS, first_only=True
                    )
                rec.setdefault("peak_while_speaking", []).append(w.call("mem")["hwm"])
            finally:
                w.close()
            # Per extra speaker: each speaker speaks once after it is added, so that heap
            # freed while loading the previous one (and reused by the next) does not hide
            # or inflate what a speaker really holds once in use.
            w = start(engine)
            try:
                short = TEXTS.get("short", next(iter(TEXTS.values())))
                rss = []
                for i, name in enumerate((VOICE_NAME, "bench2", "bench3")):
                    if i == 0:
                        w.call("prepare", root=str(root), speakers=[name])
                    else:
                        w.call("add_speakers", speakers=[name])
                    rss.append(w.call("generate", speaker=name, text=short, options=OPTIONS)["rss"])
                r1, r2, r3 = rss
                rec.setdefault("rss_per_extra_speaker", []).append((r3 - r1) / 2)
                rec.setdefault("rss_1_voice_used", []).append(r1)
                rec.setdefault("rss_3_voices_used", []).append(r3)
                log(
                    f"memory {engine}: after prepare {r1 / 2**20:.0f} MiB, "
                    f"+{(r2 - r1) / 2**20:.0f}, "
                    f"+{(r3 - r2) / 2**20:.0f} MiB per extra speaker"
                )
            finally:
                w.close()
    return {e: {k: median(v) for k, v in rec.items()} for e, rec in out.items()}


def phase_speed(root: Path, reps: int) -> dict:
    workers = {"hayakoe": start("hayakoe"), "ours": start("ours")}
    try:
        for w in workers.values():
            w.call("prepare", root=str(root), speakers=[VOICE_NAME])
        return timed_calls(workers, TEXTS, reps)
    finally:
        for w in workers.values():
            w.close()


def phase_exactness(root: Path) -> dict:
    """Windowed vs whole decoding (and our cut graphs vs hayakoe's) on the full-size voice."""
    with start("ours", label="ours-exactness") as w:
        return w.call("exactness", root=str(root), speaker=VOICE_NAME)


def phase_ablation(root: Path, reps: int, names: list[str]) -> dict:
    """Our engine with one change off vs our engine: ratio on/off for the affected figures."""
    results = {}
    for name in names:
        spec = ABLATIONS[name]
        texts = {k: TEXTS[k] for k in spec["texts"] if k in TEXTS}
        workers = {
            "on": start("ours", label="ours"),
            "off": start("ours", spec["env"], label=f"ours-no-{name}"),
        }
        try:
            for w in workers.values():
                w.call("prepare", root=str(root), speakers=[VOICE_NAME])
            res = timed_calls(
                workers, texts, reps, generate=spec["generate"], stream=spec["stream"]
            )
        finally:
            for w in workers.values():
                w.close()
        results[name] = {
            "turns_off": spec["what"],
            "env": spec["env"],
            "on": res["on"],
            "off": res["off"],
            "memory": spec.get("memory", False),
        }
        log(f"ablation {name} done")
    return results


def phase_wyoming(root: Path, reps: int) -> dict:
    texts = {k: TEXTS[k] for k in ("short", "medium", "assist") if k in TEXTS}
    servers = {e: server(e, root) for e in ("hayakoe", "ours")}
    raw: dict[str, dict[str, dict[str, list[float]]]] = {e: {t: {} for t in texts} for e in servers}

    async def once(e: str, text: str, streamed: bool) -> Any:
        return await listen("127.0.0.1", servers[e].port, text, VOICE_NAME, streamed=streamed)

    async def run() -> None:
        for s in servers.values():
            await s.wait_ready()
        for e in servers:  # warm-up
            for text in texts.values():
                await once(e, text, False)
        for rep in range(reps):
            order = list(servers) if rep % 2 == 0 else list(servers)[::-1]
            for key, text in texts.items():
                for e in order:
                    rec = raw[e][key]
                    r = await once(e, text, False)
                    rec.setdefault("oneshot_ttfa_s", []).append(r.first_audio_s)
                    rec.setdefault("oneshot_wall_s", []).append(r.total_s)
                    rec.setdefault("audio_s", []).append(r.clock.audio_s)
                    r = await once(e, text, True)
                    rec.setdefault("streaming_ttfa_s", []).append(r.first_audio_s)
                    rec.setdefault("streaming_wall_s", []).append(r.total_s)
            log(f"wyoming: rep {rep + 1}/{reps} done")

    try:
        asyncio.run(run())
    finally:
        for s in servers.values():
            s.stop()
    return {
        e: {t: {k: median(v) for k, v in m.items()} for t, m in per.items()}
        for e, per in raw.items()
    }


# ----------------------------------------------------------------------------- report ---

README = REPO / "docs" / "measurements.md"
"""Where `--update-readme` puts the table (the README links to it)."""
_START, _END = "<!-- bench:start -->", "<!-- bench:end -->"


def update_readme(md: str, chart: Path) -> None:
    """Replace the block between the bench markers of docs/measurements.md with `md`, chart."""
    text = README.read_text(encoding="utf-8")
    if _START not in text or _END not in text:
        log(f"{README.relative_to(REPO)} has no bench markers; not updated")
        return
    rel = os.path.relpath(chart, README.parent)
    block = f"{_START}\n{md.strip()}\n\n![benchmark chart]({rel})\n{_END}"
    head, rest = text.split(_START, 1)
    _, tail = rest.split(_END, 1)
    README.write_text(head + block + tail, encoding="utf-8")
    log(f"{README.relative_to(REPO)} updated")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reps", type=int, default=3, help="timed repetitions per text")
    parser.add_argument("--mem-reps", type=int, default=1, help="memory runs per engine")
    parser.add_argument("--wyoming-reps", type=int, help="repetitions over Wyoming (--reps)")
    parser.add_argument("--ablation-reps", type=int, help="repetitions per ablation (--reps)")
    for phase in ("memory", "speed", "wyoming", "ablation", "precision"):
        parser.add_argument(f"--no-{phase}", action="store_true", help=f"skip the {phase} phase")
    parser.add_argument(
        "--ablation", action="append", choices=sorted(ABLATIONS), help="only these (repeatable)"
    )
    parser.add_argument("--texts", help="comma-separated subset of " + ",".join(TEXTS))
    parser.add_argument(
        "--update-readme", action="store_true", help="the table into docs/measurements.md too"
    )


def run(args: argparse.Namespace) -> Report:
    from benchmarks.compare.precision import phase_precision
    from benchmarks.compare.precision import render as render_precision
    from benchmarks.compare.report import render_chart, render_markdown
    from benchmarks.lib.voices import fullsize_root

    if args.quick:
        raise SystemExit("side-by-side has no --quick (hayakoe's venv, the full-size voice)")
    if args.texts:
        keep = [t.strip() for t in args.texts.split(",")]
        unknown = [t for t in keep if t not in TEXTS]
        if unknown:
            raise SystemExit(f"unknown text(s) {unknown}; known: {list(TEXTS)}")
        for key in [k for k in TEXTS if k not in keep]:
            del TEXTS[key]
    out = args.out or RESULTS / RESULT
    t_start = time.time()
    log("building / checking the full-size random voice")
    root = fullsize_root()
    hayakoe_python()
    results: dict[str, Any] = {
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "machine": {**machine(), "load_avg_start": os.getloadavg()},
        "options": OPTIONS,
        "texts": {k: {"chars": len(v)} for k, v in TEXTS.items()},
        "reps": args.reps,
    }
    out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:  # after every phase, so an interrupted run still leaves its figures
        results["elapsed_s"] = time.time() - t_start
        text = json.dumps(results, indent=2, ensure_ascii=False)
        out.with_suffix(".json").write_text(text, encoding="utf-8")

    phases = [
        ("exactness", True, lambda: phase_exactness(root)),
        ("memory", not args.no_memory, lambda: phase_memory(root, args.mem_reps)),
        ("speed", not args.no_speed, lambda: phase_speed(root, args.reps)),
        (
            "wyoming",
            not args.no_wyoming,
            lambda: phase_wyoming(root, args.wyoming_reps or args.reps),
        ),
        (
            "ablation",
            not args.no_ablation,
            lambda: phase_ablation(
                root, args.ablation_reps or args.reps, args.ablation or sorted(ABLATIONS)
            ),
        ),
        (
            "precision",
            not args.no_precision,
            lambda: phase_precision(root, args.reps, 1, True, args.wyoming_reps or args.reps),
        ),
    ]
    for name, wanted, phase in phases:
        if wanted:
            log(f"phase: {name}")
            results[name] = phase()
            save()
    if "precision" in results:
        (out.parent / "precision.md").write_text(
            render_precision(results["precision"]) + "\n", encoding="utf-8"
        )
    results["machine"]["load_avg_end"] = os.getloadavg()
    md = render_markdown(results)
    render_chart(results, out.with_suffix(".png"))
    if args.update_readme:
        update_readme(md, out.with_suffix(".png"))
    report = Report("Against hayakoe 1.3.1, side by side")
    report.note(md)
    report.data = results
    args.out = out
    return report
