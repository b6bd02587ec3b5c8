"""`wyoming-hayakoe dict check FILE...`: report every bad entry of user dictionary files.

    wyoming-hayakoe dict check words.csv more.json

Prints one line per problem (``FILE:LINE: …`` for CSV, ``FILE: words[N] …`` for JSON; a word
past the engine's bounds, `engine.text.userdict.MAX_SURFACE` and the rest, is one) and a
summary per file; exits 0 when every file is clean, 1 when a file has a problem (the server
would skip those entries with a warning), 2 on a usage error. Nothing is installed.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from engine.text.userdict_watch import check_user_dictionary

from ..logs import setup_logging


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser."""
    parser = argparse.ArgumentParser(
        prog="wyoming-hayakoe dict", description="Work with user dictionary files."
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="report every bad entry of the files")
    check.add_argument("files", nargs="+", type=Path, metavar="FILE", help="CSV or JSON dictionary")
    return parser


def main(argv: Sequence[str]) -> int:
    """Run the command; returns the exit status."""
    args = build_parser().parse_args(list(argv))
    setup_logging(False, level=logging.WARNING)  # the engine's warnings, if any, timestamped
    failed = False
    for path in args.files:
        good, problems = check_user_dictionary(path)
        for problem in problems:
            print(problem)
        status = "ok" if not problems else f"{len(problems)} problem(s)"
        print(f"{path}: {good} word(s) ok, {status}", file=sys.stderr)
        failed = failed or bool(problems)
    return 1 if failed else 0
