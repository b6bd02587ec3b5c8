#!/usr/bin/env python3
"""JSON work for the bashio stand-in (bashio-lib.sh), so that the tests need no jq.

bashio_json.py options FILE       key NUL value NUL ... as bashio::config prints values
bashio_json.py object K V [K V]   a JSON object; a value starting with ^ is raw JSON
bashio_json.py discovery S CONFIG one line {"service": S, "config": CONFIG}
"""

from __future__ import annotations

import json
import sys


def _render(value: object) -> str:
    """A value as `bashio::config` prints it (jq -r): arrays one element per line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "\n".join(_render(v) for v in value)
    if isinstance(value, (dict,)):
        return json.dumps(value)
    return str(value)


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    if command == "options":
        with open(args[0], encoding="utf-8") as f:
            options = json.load(f)
        out = sys.stdout
        for key, value in options.items():
            out.write(f"{key}\0{_render(value)}\0")
        return 0
    if command == "object":
        if not args or len(args) % 2:
            sys.stderr.write("bashio::var.json needs key/value pairs\n")
            return 1
        obj = {}
        for key, value in zip(args[::2], args[1::2]):
            obj[key] = json.loads(value[1:]) if value.startswith("^") else value
        print(json.dumps(obj, ensure_ascii=False))
        return 0
    if command == "discovery":
        print(json.dumps({"service": args[0], "config": json.loads(args[1])}, ensure_ascii=False))
        return 0
    sys.stderr.write(f"unknown command {command}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
