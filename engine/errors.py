"""The engine's one exception root: every exception class defined in `engine/` derives from
`EngineError`, so a caller can catch everything the engine raises on purpose in one clause.

A class that callers also catch as a builtin keeps that builtin as its second base
(``class ConfigError(EngineError, ValueError)``). A leaf: imports nothing, so every part of
the engine (`layout` and `pacing` included) may import it. The server's own root is
`wyoming_hayakoe.errors.HayakoeError`; `tests/engine/test_structure.py` checks both.
"""

from __future__ import annotations

__all__ = ["EngineError"]


class EngineError(Exception):
    """Root of the engine's errors (voices, sources, files, options, int8 work)."""
