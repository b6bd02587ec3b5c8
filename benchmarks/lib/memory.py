"""This process's memory: resident set size now and its peak so far (Linux `/proc`).

Standard library only: the comparison's workers import it in hayakoe's own venv too."""

from __future__ import annotations

from pathlib import Path


def own_memory() -> tuple[int, int]:
    """(RSS, peak RSS) of this process in bytes (`VmRSS`, `VmHWM` of /proc/self/status)."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    rss_kib, peak_kib = (int(status[key].split()[0]) for key in ("VmRSS", "VmHWM"))
    return rss_kib * 1024, peak_kib * 1024
