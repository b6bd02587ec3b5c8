"""wyoming-hayakoe: a Wyoming-protocol Japanese text-to-speech server for Home Assistant.

Run it with ``wyoming-hayakoe`` (or ``python -m wyoming_hayakoe``); see ``--help``.
The server uses only the engine's public API (`engine.TTS`, `engine.Speaker`).

Importing this package imports nothing else (``__version__`` is the engine's, read on first
use), so `wyoming_hayakoe.client` stays as light as the ``wyoming`` library it is built on.
"""

from __future__ import annotations

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    if name == "__version__":
        from engine import __version__

        return __version__
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
