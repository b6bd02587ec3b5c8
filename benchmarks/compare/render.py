"""Render the recorded results again: benchmarks/results/latest.json (`--json`) and the
precision.json beside it, into their .md (and latest.png) beside them; `--quick`: the tables
only, nothing written. Every table is "measure | text | a column per variant | ratios", a
row's target (≤) marked on its first ratio; the chart shows the side-by-side ratios.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.lib import RESULTS
from benchmarks.lib.report import Report, table

RESULT = None
LOADS = ("load_avg_start", "load_avg_end")
TEXT_ORDER = ("short", "medium", "long", "assist")
Row = tuple[str, str, dict[str, Any], float | None]
"""measure, text, the figure per variant (bytes if the measure ends in "(MiB)"), target."""
SIDE_BY_SIDE = ("ours", "hayakoe"), [("ours", "hayakoe")]
PRECISION = (
    ("ours fp32", "ours int8", "ours auto", "hayakoe"),
    [("ours int8", "hayakoe"), ("ours auto", "hayakoe"), ("ours int8", "ours fp32")],
)
"""The variants' columns, and the ratios' (numerator, denominator)."""


def _cell(value: float | None, mib: bool) -> str:
    if value is None or math.isnan(value):
        return "–"
    return f"{value / 2**20:,.0f}" if mib else f"{value:.3f}" if value < 10 else f"{value:.2f}"


def _ratio(values: dict[str, Any], num: str, den: str) -> float | None:
    a, b = values.get(num), values.get(den)
    return None if a is None or not b or math.isnan(a + b) else a / b


def render_table(columns: tuple[tuple[str, ...], list[tuple[str, str]]], rows: list[Row]) -> str:
    variants, ratios = columns
    body = []
    for measure, text, values, target in rows:
        mib = measure.endswith("(MiB)")
        body.append([measure, text, *(_cell(values.get(v), mib) for v in variants)])
        for i, pair in enumerate(ratios):
            r = _ratio(values, *pair)
            cell = "–" if r is None else f"{r:.2f}×"
            if r is not None and i == 0 and target is not None:
                cell += f" {'✅' if r <= target else '❌'} (≤ {target:g})"
            body[-1].append(cell)
    names = [" / ".join(v.removeprefix("ours ") for v in pair) for pair in ratios]
    head = ["measure", "text", *(f"{v} 1.3.1" if v == "hayakoe" else v for v in variants), *names]
    return "\n".join(table(head, body, "ll" + "r" * (len(variants) + len(ratios))))


def per_text(
    section: dict[str, dict[str, dict[str, float]]],
    measure: str,
    figure: str,
    targets: Mapping[str, float | None] | None = None,
    keys: tuple[str, ...] = TEXT_ORDER,
) -> list[Row]:
    """A row per text of `section` (variant → text → figures) that has `figure`."""
    first, rows = next(iter(section.values())), []
    for key in (k for k in keys if figure in first.get(k, {})):
        values = {v: per.get(key, {}).get(figure) for v, per in section.items()}
        rows.append((measure, key, values, (targets or {}).get(key)))
    return rows


def provenance(res: dict[str, Any]) -> str:
    """When and where a recorded run ran."""
    run = res.get("run", res)
    m = run.get("machine", {})
    start, end = ("/".join(f"{x:.1f}" for x in run.get(k) or m.get(k)) for k in LOADS)
    return (
        f"Run {run['date_utc']} UTC at commit {m.get('commit', '?')} on {m['cpus']} CPUs "
        f"({m['platform']}); load average {start} at the start, {end} at the end (a shared "
        f"machine: other jobs ran at the same time)."
    ) + (f" `{run['command']}`" if "command" in run else "")


TTFA_TARGET = dict.fromkeys(TEXT_ORDER, 0.3)
SPEED_ROWS = {  # section → (measure, figure, target per text)
    "speed": (
        ("real-time factor, `generate()`", "rtf", {"medium": 0.67, "long": 0.67}),
        ("wall time (s), `generate()`", "wall_s", {}),
        ("time to first audio (s), `stream()`", "ttfa_s", TTFA_TARGET),
        ("`stream()` played in real time: silence from late chunks (s)", "gap_s", {}),
        ("`stream()` played in real time: last sample heard at (s)", "played_s", {}),
        ("audio length (s)", "audio_s", {}),
    ),
    "wyoming": (
        ("Wyoming one-shot, time to first audio (s)", "oneshot_ttfa_s", {}),
        ("Wyoming streaming, time to first audio (s)", "streaming_ttfa_s", TTFA_TARGET),
    ),
}
MEMORY_ROWS = (  # measure, text, figure, target
    ("RSS after `prepare()` (MiB)", "1 voice", "rss_after_prepare", 1.0),
    ("peak RSS up to end of `prepare()` (MiB)", "1 voice", "peak_after_prepare", 1.0),
    ("peak RSS while speaking (MiB)", "all texts", "peak_while_speaking", None),
    ("RSS per extra speaker (MiB)", "2 more voices", "rss_per_extra_speaker", 1.0),
    ("RSS, each voice has spoken (MiB)", "1 voice", "rss_1_voice_used", None),
    ("RSS, each voice has spoken (MiB)", "3 voices", "rss_3_voices_used", 1.0),
    ("`prepare()` time (s)", "1 voice", "prepare_s", None),
)


def side_by_side_rows(res: dict[str, Any]) -> list[Row]:
    rows = []
    for section, specs in SPEED_ROWS.items():
        for measure, figure, targets in specs if section in res else ():
            rows += per_text(res[section], measure, figure, targets)
    memory = res.get("memory", {})
    for measure, text, figure, target in MEMORY_ROWS if memory else ():
        if figure in memory["ours"]:
            rows.append((measure, text, {v: f.get(figure) for v, f in memory.items()}, target))
    return rows


def render_side_by_side(res: dict[str, Any]) -> str:
    options = ", ".join(f"{k}={v}" for k, v in res.get("options", {}).items())
    texts = ", ".join(f"{k} {v['chars']}" for k, v in res.get("texts", {}).items())
    head = f"Medians of {res.get('reps', '?')} alternating runs. Options for both: {options}."
    head += f" Text lengths (characters): {texts}."
    return head + "\n\n" + render_table(SIDE_BY_SIDE, side_by_side_rows(res))


def render_chart(res: dict[str, Any], path: Path) -> None:
    """The side-by-side table's ratios ours / hayakoe as bars (below 1: ours takes less)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratios = {
        f"{m}, {t}".replace("`", ""): _ratio(v, "ours", "hayakoe")
        for m, t, v, _ in side_by_side_rows(res)
    }
    shown = {label: r for label, r in ratios.items() if r is not None}
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.25 * len(shown)))
    ax.bar_label(ax.barh(list(shown), list(shown.values())), fmt="%.2f×", fontsize=7)
    ax.axvline(1.0, color="#c8763a", label="hayakoe 1.3.1")
    ax.invert_yaxis()
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=8)
    when = res.get("date_utc") or res.get("run", {}).get("date_utc", "")
    ax.set_title(
        f"wyoming-hayakoe / hayakoe 1.3.1, full-size random-weight voice, {when} UTC", fontsize=9
    )
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)


PRECISION_ROWS = (  # measure, figure, target when idle, texts
    ("RTF `generate()`", "rtf", 0.5, ("medium", "long")),
    ("TTFA (s) engine `stream()`", "ttfa_s", 0.25, TEXT_ORDER),
    ("`stream()` / `generate()` total time (≤ 1.15)", "stream/generate", None, ("medium", "long")),
)


def render_precision(res: dict[str, Any]) -> str:
    """ours fp32 / int8 / auto and hayakoe (its columns empty unless it ran, `--hayakoe`)."""
    rows: list[Row] = []
    for cond, label in (("idle", "idle"), ("busy", "one core busy")):
        section = {
            v: {
                t: {**f, "stream/generate": f["stream_wall_s"] / f["wall_s"]}
                for t, f in per.items()
            }
            for v, per in res.get(cond, {}).items()
        }
        for measure, figure, target, keys in PRECISION_ROWS if section else ():
            targets = dict.fromkeys(keys, target if cond == "idle" else None)
            rows += per_text(section, f"{measure}, {label}", figure, targets, keys)
    if wy := res.get("wyoming"):  # recorded as variant → text → streaming first audio
        wy = {v: {t: {"ttfa": s} for t, s in per.items()} for v, per in wy.items()}
        rows += per_text(wy, "TTFA (s) Wyoming streaming", "ttfa")
    if memory := res.get("memory"):
        rss = {v: f.get("rss_after_prepare") for v, f in memory.items()}
        rows.append(("RSS after `prepare()` (MiB)", "1 voice", rss, 0.6))
    out = render_table(PRECISION, rows)
    if choice := res.get("auto_choice"):
        out += f"\n\n`auto` chose: {choice}"
    if fid := res.get("fidelity"):
        gate = fid["thresholds"]
        out += (
            f"\n\nFidelity of the voice's int8 graphs against fp32 ({len(fid['sentences'])} "
            f"held-out sentences, random weights): SNR min {fid['snr_db_min']:.1f} dB (≥ "
            f"{gate['min_snr_db']:g}), mean {fid['snr_db_mean']:.1f} dB; log-mel "
            f"{fid['logmel_db_mean']:.2f} dB (≤ {gate['max_logmel_db']:g}); MCD "
            f"{fid['mcd_db_mean']:.2f} dB (≤ {gate['max_mcd_db']:g}): "
            f"{'passed' if fid['passed'] else 'FAILED'}."
        )
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, default=RESULTS / "latest.json")


def run(args: argparse.Namespace) -> Report:
    report = Report(f"Against hayakoe 1.3.1, as recorded in {args.json.parent}")
    beside = args.json.parent / "precision.json"
    for path in dict.fromkeys([args.json, *([beside] if beside.is_file() else [])]):
        res = json.loads(path.read_text(encoding="utf-8"))
        body = render_precision(res) if "idle" in res else render_side_by_side(res)
        md = f"{provenance(res)}\n\n{body}"
        report.note(f"### {path.name}\n\n{md}")
        if not args.quick:
            title = res.get("run", {}).get("title", "Against hayakoe 1.3.1, side by side")
            path.with_suffix(".md").write_text(f"## {title}\n\n{md}\n", encoding="utf-8")
            if "idle" not in res:
                render_chart(res, path.with_suffix(".png"))
    return report
