"""One command line per suite: `python -m benchmarks.SUITE PART [options]`.

A part is a module with a docstring (its help), `add_arguments(parser)` (its own options),
`RESULT` (the name its results are recorded under in `benchmarks/results/`, or None; `run`
may set `args.out` instead) and `run(args) -> Report`. Every part also gets:

- `--quick`: small and fast (a few texts, one round, small voices): checks the harness, the
  figures mean nothing and nothing is recorded unless `--out` says where;
- `--out PREFIX`: write PREFIX.md and PREFIX.json (default: `benchmarks/results/RESULT`,
  none with `--quick`).

`python -m benchmarks.SUITE --quick` runs every part of the suite quick, one after another
(those with `QUICK = False` left out: their runs need what a test cannot have).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from benchmarks.lib import RESULTS
from benchmarks.lib.report import log


def _parts(names: dict[str, str]) -> dict[str, ModuleType]:
    return {name: importlib.import_module(mod) for name, mod in names.items()}


def _parser(prog: str, doc: str, parts: dict[str, ModuleType]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"python -m {prog}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quick", action="store_true", help="every part, small and fast")
    sub = p.add_subparsers(dest="part", metavar="PART")
    for name, mod in parts.items():
        doc = mod.__doc__ or name
        sp = sub.add_parser(
            name,
            help=" ".join(doc.strip().split("\n\n")[0].split()),
            description=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sp.add_argument(
            "--quick", action="store_true", help="small and fast: checks the harness only"
        )
        sp.add_argument("--out", type=Path, help="write PREFIX.md and PREFIX.json")
        mod.add_arguments(sp)
    return p


def main(prog: str, doc: str, names: dict[str, str], argv: Sequence[str] | None = None) -> int:
    """Parse `argv`, run the part it names (or every part with `--quick`); exit status."""
    parts = _parts(names)
    parser = _parser(prog, doc, parts)
    args = parser.parse_args(argv)
    if args.part is None:
        if not args.quick:
            parser.error(f"name a part ({', '.join(parts)}), or --quick for all of them")
        quick = [name for name, mod in parts.items() if getattr(mod, "QUICK", True)]
        runs = [parser.parse_args([name, "--quick"]) for name in quick]
    else:
        runs = [args]
    status = 0
    for run in runs:
        mod = parts[run.part]
        log(f"{prog} {run.part}{' (quick)' if run.quick else ''}")
        report = mod.run(run)
        result = getattr(mod, "RESULT", None)
        out = run.out or (RESULTS / result if result and not run.quick else None)
        report.emit(out)
        status = max(status, int(report.data.get("failed", 0)))
    return status
