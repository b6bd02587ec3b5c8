"""The server's one exception root: every error the server raises on purpose derives from
`HayakoeError` (the engine's own root is `engine.errors.EngineError`).

A door (Wyoming, the page, the engine APIs, ``say``) maps the errors it can meet to its
protocol in one place each; the errors themselves carry no HTTP status or Wyoming code.
"""

from __future__ import annotations

__all__ = ["HayakoeError"]


class HayakoeError(Exception):
    """Root of the server's errors (settings, requests, the library, the commands)."""
