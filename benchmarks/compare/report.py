"""Render the side-by-side results (the JSON `side-by-side` records) again: the Markdown
table and the PNG chart from `--json` (default benchmarks/results/latest.json), beside it.
`--quick`: the table only, nothing written (checks this code on the recorded figures).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from benchmarks.lib import RESULTS
from benchmarks.lib.report import Report, table
from benchmarks.lib.report import row as table_row

RESULT = None


def table_head(cells: list[str], align: str) -> list[str]:
    return table(cells, [], align)


MIB = 2**20
TEXT_ORDER = ("short", "medium", "long", "assist")
TARGETS = {"ttfa": 0.3, "rtf": 0.67, "rss": 1.0}
_RTF_TARGET = {"medium": TARGETS["rtf"], "long": TARGETS["rtf"]}

# Rows per text: (label, figure, unit, target per text key; a missing key: no target).
RowSpec = tuple[str, str, str, dict[str, float]]
SPEED_ROWS: tuple[RowSpec, ...] = (
    ("real-time factor, `generate()`", "rtf", "", _RTF_TARGET),
    ("wall time (s), `generate()`", "wall_s", "s", {}),
    (
        "time to first audio (s), `stream()`",
        "ttfa_s",
        "s",
        dict.fromkeys(TEXT_ORDER, TARGETS["ttfa"]),
    ),
    ("`stream()` played in real time: silence from late chunks (s)", "gap_s", "s", {}),
    ("`stream()` played in real time: last sample heard at (s)", "played_s", "s", {}),
    ("audio length (s)", "audio_s", "s", {}),
)
WYOMING_ROWS: tuple[RowSpec, ...] = (
    ("Wyoming one-shot, time to first audio (s)", "oneshot_ttfa_s", "s", {}),
    (
        "Wyoming streaming, time to first audio (s)",
        "streaming_ttfa_s",
        "s",
        dict.fromkeys(TEXT_ORDER, TARGETS["ttfa"]),
    ),
)
# Single rows: (label, text, figure, target); rows whose figure is missing are left out.
MEMORY_ROWS = (
    ("RSS after `prepare()` (MiB)", "1 voice", "rss_after_prepare", TARGETS["rss"]),
    ("peak RSS up to end of `prepare()` (MiB)", "1 voice", "peak_after_prepare", TARGETS["rss"]),
    ("peak RSS while speaking (MiB)", "all texts", "peak_while_speaking", None),
    ("RSS per extra speaker (MiB)", "2 more voices", "rss_per_extra_speaker", TARGETS["rss"]),
    ("RSS, each voice has spoken (MiB)", "1 voice", "rss_1_voice_used", None),
    ("RSS, each voice has spoken (MiB)", "3 voices", "rss_3_voices_used", TARGETS["rss"]),
    ("`prepare()` time (s)", "1 voice", "prepare_s", None),
)


def _ratio(ours: float, base: float) -> float:
    if not base or any(math.isnan(v) for v in (ours, base)):
        return float("nan")
    return ours / base


def _fmt(v: float, unit: str = "") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if unit == "MiB":
        return f"{v / MIB:,.0f}"
    if unit == "s":
        return f"{v:.2f}"
    return f"{v:.3f}"


def _row(
    label: str, text: str, ours: float, base: float, unit: str, target: float | None = None
) -> str:
    r = _ratio(ours, base)
    mark = ""
    if target is not None and not math.isnan(r):
        mark = " ✅" if r <= target else " ❌"
    rs = "–" if math.isnan(r) else f"{r:.2f}×{mark}"
    return table_row([label, text, _fmt(ours, unit), _fmt(base, unit), rs])


def _per_text_rows(
    ours: dict, base: dict, texts: dict, specs: tuple[tuple[str, str, str, dict], ...]
) -> list[str]:
    """One row per spec and text (in TEXT_ORDER) that has the figure."""
    return [
        _row(label, _tlabel(key, texts), ours[key][fig], base[key][fig], unit, targets.get(key))
        for label, fig, unit, targets in specs
        for key in TEXT_ORDER
        if key in ours and fig in ours[key]
    ]


def render_markdown(res: dict[str, Any]) -> str:
    """The results as Markdown: one comparison table, one ablation table, notes."""
    m = res.get("machine", {})
    texts = res.get("texts", {})
    lines = [
        (
            f"Run {res.get('date_utc', '?')} UTC on {m.get('cpus', '?')} CPUs "
            f"({m.get('platform', '')}); "
            f"load average {_load(m.get('load_avg_start'))} at the start, "
            f"{_load(m.get('load_avg_end'))} at the end "
            "(a shared machine: other jobs ran at the same time). Medians of "
            f"{res.get('reps', '?')} alternating runs. "
            f"Options for both: {', '.join(f'{k}={v}' for k, v in res.get('options', {}).items())}."
        ),
        "",
        *table_head(["measure", "text", "ours", "hayakoe 1.3.1", "ours / hayakoe"], "llrrr"),
    ]
    speed = res.get("speed")
    if speed:
        lines += _per_text_rows(speed["ours"], speed["hayakoe"], texts, SPEED_ROWS)
    wy = res.get("wyoming")
    if wy:
        lines += _per_text_rows(wy["ours"], wy["hayakoe"], texts, WYOMING_ROWS)
    mem = res.get("memory")
    if mem:
        o, h = mem["ours"], mem["hayakoe"]
        for label, text, fig, target in MEMORY_ROWS:
            if fig in o:
                unit = "s" if fig.endswith("_s") else "MiB"
                lines.append(_row(label, text, o[fig], h[fig], unit, target))
    ex = res.get("exactness")
    if ex:
        wv = ex.get("windowed_vs_whole", {})
        lines += [
            "",
            f"Exactness on the full-size voice ({ex.get('frames')} frames, audio peak "
            f"{ex.get('peak', 0):.3f}): "
            f"windowed vs whole-sentence decoding, max |difference| "
            + ", ".join(f"{v:.1e} ({k})" for k, v in wv.items())
            + "; our cut graphs vs hayakoe's synthesizer.onnx "
            f"{ex.get('cut_vs_hayakoe_graph', float('nan')):.1e}.",
        ]
    abl = res.get("ablation")
    if abl:
        lines += [
            "",
            "What each kept change is worth (our engine with the change vs without it, same run):",
            "",
            *table_head(
                ["change", "figure", "text", "with", "without", "with / without"], "lllrrr"
            ),
        ]
        for a in abl.values():
            for key in TEXT_ORDER:
                if key not in a["on"]:
                    continue
                on, off = a["on"][key], a["off"][key]
                figs = [
                    ("ttfa_s", "time to first audio (s), `stream()`"),
                    ("gap_s", "`stream()` real-time playback: silence from late chunks (s)"),
                    ("stream_wall_s", "`stream()` wall time (s)"),
                    ("rtf", "real-time factor, `generate()`"),
                ]
                if a.get("memory"):
                    figs.append(("rss_after", "RSS after `generate()` (MiB)"))
                for fig, label in figs:
                    if fig in on:
                        r = _ratio(on[fig], off[fig])
                        rs = "–" if math.isnan(r) else f"{r:.2f}×"
                        unit = {"rtf": "", "rss_after": "MiB"}.get(fig, "s")
                        lines.append(
                            table_row(
                                [
                                    a["turns_off"],
                                    label,
                                    _tlabel(key, texts),
                                    _fmt(on[fig], unit),
                                    _fmt(off[fig], unit),
                                    rs,
                                ]
                            )
                        )
    lines.append("")
    return "\n".join(lines)


def _load(v: Any) -> str:
    if not v:
        return "?"
    return "/".join(f"{x:.1f}" for x in v)


def _tlabel(key: str, texts: dict) -> str:
    n = texts.get(key, {}).get("chars")
    return f"{key} ({n} chars)" if n else key


ENGINES = {"ours": ("wyoming-hayakoe", "#2a7ab0"), "hayakoe": ("hayakoe 1.3.1", "#c8763a")}
MEMORY_CHART = (
    ("rss_after_prepare", "RSS after\nprepare()"),
    ("peak_after_prepare", "peak up to\nprepare()"),
    ("peak_while_speaking", "peak while\nspeaking"),
    ("rss_per_extra_speaker", "per extra\nspeaker"),
)


def render_chart(res: dict[str, Any], path: Path) -> None:
    """Four panels, ours against hayakoe: RTF and first audio of the engine, first audio
    over Wyoming, memory."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels: list[tuple[str, list[str], dict[str, list[float]]]] = []
    if speed := res.get("speed"):
        keys = [k for k in TEXT_ORDER if k in speed["ours"]]
        for key, title in (
            ("rtf", "real-time factor, generate()"),
            ("ttfa_s", "first audio, stream() (s)"),
        ):
            panels.append((title, keys, {e: [speed[e][k][key] for k in keys] for e in ENGINES}))
    if wy := res.get("wyoming"):
        keys = [k for k in TEXT_ORDER if k in wy["ours"]]
        modes = (("oneshot_ttfa_s", "one-shot"), ("streaming_ttfa_s", "streaming"))
        groups = [f"{k}\n{m}" for _, m in modes for k in keys]
        values = {e: [wy[e][k][f] for f, _ in modes for k in keys] for e in ENGINES}
        panels.append(("Wyoming, first audio (s, TCP client)", groups, values))
    if mem := res.get("memory"):
        values = {e: [mem[e][f] / MIB for f, _ in MEMORY_CHART] for e in ENGINES}
        panels.append(("memory (MiB)", [label for _, label in MEMORY_CHART], values))
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    for ax, (title, groups, values) in zip(axes.flat, panels):
        for i, (eng, (label, color)) in enumerate(ENGINES.items()):
            xs = [g + (i - 0.5) * 0.38 for g in range(len(groups))]
            bars = ax.bar(xs, values[eng], 0.38, label=label, color=color)
            ax.bar_label(bars, fmt="%.3g", fontsize=7)
        ax.set_xticks(range(len(groups)), groups, fontsize=7)
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.suptitle(
        "wyoming-hayakoe vs hayakoe 1.3.1 — full-size random-weight voice, "
        f"{res.get('date_utc', '')} UTC"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", type=Path, default=RESULTS / "latest.json")


def run(args: argparse.Namespace) -> Report:
    res = json.loads(args.json.read_text(encoding="utf-8"))
    md = render_markdown(res)
    report = Report(f"Against hayakoe 1.3.1, side by side (rendered from {args.json.name})")
    report.note(md)
    precision = args.json.parent / "precision.json"
    if args.quick and precision.is_file():  # its renderer too, on its recorded figures
        from benchmarks.compare.precision import render as render_precision

        report.note(render_precision(json.loads(precision.read_text(encoding="utf-8"))))
    if not args.quick:
        render_chart(res, args.json.with_suffix(".png"))
        args.out = args.out or args.json.with_suffix("")
    report.data = res
    return report
