"""Our engine against hayakoe 1.3.1 (its CPU/ONNX path) on the same files and texts, in one
run so the ratios compare like with like (`python -m benchmarks.compare side-by-side`, about
30 min on 2 cores). The full-size random-weight voice and hayakoe's torch-free venv are built
once into benchmarks/.cache/; ours runs fp32, as hayakoe does, and both get `voices.OPTIONS`
(sdp_ratio 0: durations from the deterministic predictor, so both make as many frames).
Phases (`drive`): memory (fresh processes; `--mem-reps`), speed (`--reps`), Wyoming (our
server against a minimal one around hayakoe's `astream()`; `--wyoming-reps`), and the
`precision` part (int8 and auto; its own precision.md and .json). Records
benchmarks/results/latest.json, .md and .png; `--update-readme` puts the table into
docs/measurements.md. No `--quick`: `render --quick` checks the tables."""

from __future__ import annotations

import argparse
import json
import os

from benchmarks.compare import drive, precision
from benchmarks.compare.render import provenance, render_chart, render_side_by_side
from benchmarks.lib import REPO, RESULTS
from benchmarks.lib.report import Report, load, log
from benchmarks.lib.voices import OPTIONS, TEXTS, fullsize_root

RESULT = "latest"
QUICK = False
VARIANTS = {"ours": precision.VARIANTS["ours fp32"], "hayakoe": drive.Variant("hayakoe")}
WYOMING_TEXTS = ("short", "medium", "assist")
README = REPO / "docs" / "measurements.md"
MARKERS = "<!-- bench:start -->", "<!-- bench:end -->"


def _texts(names: str) -> dict[str, str]:
    if unknown := set(names.split(",")) - set(TEXTS):
        raise argparse.ArgumentTypeError(f"unknown: {sorted(unknown)}; known: {list(TEXTS)}")
    return {k: TEXTS[k] for k in names.split(",")}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reps", type=int, default=3, help="rounds of the speed phase")
    parser.add_argument("--mem-reps", type=int, default=1, help="rounds of the memory phase")
    parser.add_argument("--wyoming-reps", type=int, help="rounds over Wyoming (--reps)")
    for phase in ("memory", "speed", "wyoming", "precision"):
        parser.add_argument(f"--no-{phase}", action="store_true", help=f"skip the {phase} phase")
    parser.add_argument("--texts", type=_texts, default=TEXTS, help=",".join(TEXTS) + " or some")
    parser.add_argument("--update-readme", action="store_true", help=f"the table into {README}")


def run(args: argparse.Namespace) -> Report:
    if args.quick:
        raise SystemExit("side-by-side has no --quick (hayakoe's venv, the full-size voice)")
    texts: dict[str, str] = args.texts
    reps, wyoming_reps = args.reps, args.wyoming_reps or args.reps
    root, _ = fullsize_root(), drive.hayakoe_python()
    out = args.out = args.out or RESULTS / RESULT
    out.parent.mkdir(parents=True, exist_ok=True)
    report = Report("Against hayakoe 1.3.1, side by side")
    results = report.data = {
        "date_utc": report.started,
        "machine": {**report.machine, "load_avg_start": report.load_start},
        "options": OPTIONS,
        "texts": {k: {"chars": len(v)} for k, v in texts.items()},
        "reps": reps,
    }
    wy_texts = {k: v for k, v in texts.items() if k in WYOMING_TEXTS}
    phases = {
        "memory": lambda: drive.memory(root, VARIANTS, args.mem_reps, texts),
        "speed": lambda: drive.speed(root, VARIANTS, texts, reps),
        "wyoming": lambda: drive.wyoming(root, VARIANTS, wy_texts, wyoming_reps, oneshot=True),
    }
    for name, phase in phases.items():
        if not getattr(args, f"no_{name}"):
            log(f"phase: {name}")
            results[name] = phase()  # written at once: an interrupted run keeps its figures
            out.with_suffix(".json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    if not args.no_precision:  # a report of its own, beside this one
        log("phase: precision")
        part = precision.measured(root, reps, 1, True, wyoming_reps, texts)
        part.emit(out.parent / "precision")
        results["precision"] = part.data
    results["machine"]["load_avg_end"] = load()
    report.note(md := render_side_by_side(results))
    render_chart(results, out.with_suffix(".png"))
    if args.update_readme:  # the block between the bench markers of docs/measurements.md
        head, rest = README.read_text(encoding="utf-8").split(MARKERS[0], 1)
        chart = f"![benchmark chart]({os.path.relpath(out.with_suffix('.png'), README.parent)})"
        block = f"{MARKERS[0]}\n{provenance(results)}\n\n{md}\n\n{chart}\n{MARKERS[1]}"
        README.write_text(head + block + rest.split(MARKERS[1], 1)[1], encoding="utf-8")
    return report
