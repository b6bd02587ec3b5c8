"""Entry point: ``wyoming-hayakoe [SUBCOMMAND] ...`` / ``python -m wyoming_hayakoe``.

The first argument, when it names a subcommand (`subcommands.SUBCOMMANDS`), selects
``wyoming_hayakoe.commands.<name>.main(argv)``; otherwise the arguments are the server's.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import sys
from collections.abc import Sequence

from .subcommands import SUBCOMMANDS, module_name

_LOGGER = logging.getLogger("wyoming_hayakoe")


def _subcommand(name: str, argv: list[str]) -> int:
    try:
        module = importlib.import_module(module_name(name))
    except ModuleNotFoundError as exc:
        if exc.name and module_name(name).startswith(exc.name):
            print(
                f"wyoming-hayakoe: the subcommand {name!r} is not available in this install",
                file=sys.stderr,
            )
            return 2
        raise
    return int(module.main(argv) or 0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run a subcommand or the server; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:
        return _subcommand(args[0], args[1:])

    from .logs import setup_logging
    from .server import run_server
    from .settings import parse_settings

    settings = parse_settings(args)
    setup_logging(settings.debug, fmt=settings.log_format)
    try:
        return asyncio.run(run_server(settings))
    except KeyboardInterrupt:  # a second Ctrl-C during shutdown
        return 130
    except Exception as exc:
        # Start-up failures (a voice that cannot be found, a bad user dictionary) get one
        # clear line; the traceback only with --debug.
        _LOGGER.error("Cannot serve: %s", exc, exc_info=settings.debug)
        return 1


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    run()
