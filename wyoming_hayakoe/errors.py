"""The server's one exception root: every error the server raises on purpose derives from
`HayakoeError` (the engine's own root is `engine.errors.EngineError`).

A door (Wyoming, the page, the engine APIs, ``say``) maps the errors it can meet to its
protocol in one place each; the errors themselves carry no HTTP status or Wyoming code.
"""

from __future__ import annotations

__all__ = ["ClientGone", "HayakoeError"]


class HayakoeError(Exception):
    """Root of the server's errors (settings, requests, the library, the commands)."""


class ClientGone(HayakoeError):
    """The client left (closed the connection, or it broke) while its answer was made or
    written: the work stops (Wyoming's handler, the engine API's long answers)."""
