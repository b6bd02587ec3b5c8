"""The real program on loopback (`python -m benchmarks.server PART --help`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from benchmarks.lib import cli

PARTS = {
    name: f"benchmarks.server.{name.replace('-', '_')}"
    for name in (
        "first-audio",
        "llm-pace",
        "slow-board",
        "rss",
        "soak",
        "library-load",
        "engine-api",
        "doors",
    )
}


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main("benchmarks.server", __doc__ or "", PARTS, argv)


if __name__ == "__main__":
    sys.exit(main())
