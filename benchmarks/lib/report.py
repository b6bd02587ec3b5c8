"""What a benchmark run prints and records: Markdown tables under a header that states the
machine, its load at the start and the end, the git commit and the command, and the same
figures as JSON.

    report = Report("Frontend per sentence")
    report.table(["stage", "µs", "× baseline"], rows, align="lrr")
    report.note("...")
    report.data["stages"] = {...}
    report.emit(out)        # prints the Markdown; with `out`, writes out.md and out.json
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.lib import REPO


def log(msg: str) -> None:
    """A progress line on stderr (the tables go to stdout)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def commit() -> str:
    """The checkout's commit (short), `+dirty` when tracked files differ from it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=REPO).returncode != 0
    except OSError:
        return "unknown"
    return (head or "unknown") + ("+dirty" if dirty else "")


def command() -> str:
    """How this process was started, as a shell line (`python -m benchmarks...`)."""
    argv = list(getattr(sys, "orig_argv", sys.argv))
    if argv and Path(argv[0]).name.startswith("python"):
        argv[0] = "python"
    return shlex.join(argv)


def load() -> list[float]:
    return [round(x, 1) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    """The machine and checkout, for a run's header."""
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "commit": commit(),
    }


def row(cells: Sequence[object]) -> str:
    """One Markdown table row: `| a | b |`."""
    return "|" + "|".join(f" {c} " for c in cells) + "|"


def table(head: Sequence[str], rows: Iterable[Sequence[object]], align: str = "") -> list[str]:
    """A Markdown table; `align` has a letter per column, `l` or `r` (default: first left)."""
    align = align or "l" + "r" * (len(head) - 1)
    rule = ["---:" if a == "r" else "---" for a in align]
    return [row(head), row(rule), *(row(r) for r in rows)]


class Report:
    """One run's tables and notes, its header and its figures (`data`, for the JSON)."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
        self.machine = machine()
        self.load_start = load()
        self.load_end: list[float] | None = None
        self.command = command()
        self.lines: list[str] = []
        self.data: dict[str, Any] = {}

    def table(self, head: Sequence[str], rows: Iterable[Sequence[object]], align: str = "") -> None:
        self.lines += ["", *table(head, rows, align)]

    def note(self, text: str) -> None:
        self.lines += ["", text]

    def header(self) -> dict[str, Any]:
        if self.load_end is None:
            self.load_end = load()
        return {
            "title": self.title,
            "date_utc": self.started,
            "machine": self.machine,
            "load_avg_start": self.load_start,
            "load_avg_end": self.load_end,
            "command": self.command,
        }

    def markdown(self) -> str:
        h, m = self.header(), self.machine
        head = (
            f"Run {h['date_utc']} UTC at commit {m['commit']} on {m['cpus']} CPUs "
            f"({m['platform']}, Python {m['python']}); load average "
            f"{h['load_avg_start']} at the start, {h['load_avg_end']} at the end. "
            f"`{h['command']}`"
        )
        return "\n".join([f"## {self.title}", "", head, *self.lines]) + "\n"

    def emit(self, out: Path | None) -> str:
        """Print the Markdown; with `out`, write `out`.md and `out`.json too."""
        md = self.markdown()
        print(md, flush=True)
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.with_suffix(".md").write_text(md, encoding="utf-8")
            data = {"run": self.header(), **self.data}
            out.with_suffix(".json").write_text(
                json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n",
                encoding="utf-8",
            )
            log(f"wrote {out.with_suffix('.md')} and .json")
        return md
