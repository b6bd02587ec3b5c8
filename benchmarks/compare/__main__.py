"""Against hayakoe 1.3.1 (`python -m benchmarks.compare PART --help`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from benchmarks.lib import cli

PARTS = {
    "side-by-side": "benchmarks.compare.side_by_side",
    "precision": "benchmarks.compare.precision",
    "render": "benchmarks.compare.report",
}


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main("benchmarks.compare", __doc__ or "", PARTS, argv)


if __name__ == "__main__":
    sys.exit(main())
