"""The engine's parts, in-process (`python -m benchmarks.engine PART --help`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from benchmarks.lib import cli

PARTS = {
    name: f"benchmarks.engine.{name}"
    for name in ("frontend", "rewrite", "bert", "stream", "overlap", "output", "embedded", "pacing")
}


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main("benchmarks.engine", __doc__ or "", PARTS, argv)


if __name__ == "__main__":
    sys.exit(main())
