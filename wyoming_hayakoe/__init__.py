"""wyoming-hayakoe: a Wyoming-protocol Japanese text-to-speech server for Home Assistant.

Run it with ``wyoming-hayakoe`` (or ``python -m wyoming_hayakoe``); see ``--help``.
The server uses only the engine's public API (`engine.TTS`, `engine.Speaker`).
"""

from engine import __version__

__all__ = ["__version__"]
