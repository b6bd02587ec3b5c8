"""What the subcommands share: `UsageError`, a command line a command refuses (one line on
stderr, exit status 2), raised by `say` and `library` alike."""

from __future__ import annotations

from ..errors import HayakoeError

__all__ = ["UsageError"]


class UsageError(HayakoeError):
    """Arguments the command does not take (a bad name or source, flags that do not fit
    together, nothing to say): one line, exit status 2."""
