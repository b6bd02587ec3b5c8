"""Against hayakoe 1.3.1 (`python -m benchmarks.compare PART --help`)."""

from __future__ import annotations

import sys

from benchmarks.lib import cli

NAMES = ("side-by-side", "precision", "render", "first-prepare")
PARTS = {name: f"benchmarks.compare.{name.replace('-', '_')}" for name in NAMES}


def main(argv: list[str] | None = None) -> int:
    return cli.main("benchmarks.compare", __doc__ or "", PARTS, argv)


if __name__ == "__main__":
    sys.exit(main())
