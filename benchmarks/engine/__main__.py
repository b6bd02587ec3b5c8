"""The engine's parts, in-process (`python -m benchmarks.engine PART --help`); each prints
its figures as ratios against a baseline measured in the same run."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from benchmarks.lib import cli

NAMES = (
    "frontend",
    "rewrite",
    "bert",
    "stream",
    "overlap",
    "output",
    "embedded",
    "measure_traces",
    "first_clause",
    "int8_kernels",
    "auto_load",
    "pitch",
)
PARTS = {name: f"benchmarks.engine.{name}" for name in NAMES}


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main("benchmarks.engine", __doc__ or "", PARTS, argv)


if __name__ == "__main__":
    sys.exit(main())
