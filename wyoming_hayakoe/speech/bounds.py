"""The bounds every speech request is held to, whichever door it came through.

One typed set, `RequestBounds`, made from the flags (``--max-text-length``,
``--max-audio-seconds``, ``--max-queries``) and handed to `SpeechService`; docs/limits.md has
the table with the engine's own bounds (per sentence, per Latin word, per dictionary word)
and the connection limits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "DEFAULT_MAX_AUDIO_SECONDS",
    "DEFAULT_MAX_QUERIES",
    "DEFAULT_MAX_TEXT_LENGTH",
    "MIN_MORA_SECONDS",
    "OutputBudget",
    "RequestBounds",
]

DEFAULT_MAX_TEXT_LENGTH = 4096
"""Characters one request may carry, on every door (OpenAI's own limit for ``input``): about
ten minutes of speech."""
DEFAULT_MAX_AUDIO_SECONDS = 900.0
"""Seconds of audio one request may produce, silences included: 15 minutes, more than the
longest text allowed takes at speed 0.5."""
DEFAULT_MAX_QUERIES = 64
"""AudioQueries one ``/multi_synthesis`` may carry."""
MIN_MORA_SECONDS = 0.04
"""The shortest a mora lasts at speed 1 (a fast speaker says about 8 morae a second; 0.04 s
is far below): what the bound on audio counts for phrases before they are spoken."""


@dataclass(frozen=True)
class RequestBounds:
    """The bounds of one request (`validate` refuses nonsense)."""

    max_text_length: int = DEFAULT_MAX_TEXT_LENGTH
    """Characters of text (or of a reading given as accent phrases) per request."""
    max_audio_seconds: float = DEFAULT_MAX_AUDIO_SECONDS
    """Seconds of audio per request, silences included; a longer one stops there."""
    max_queries: int = DEFAULT_MAX_QUERIES
    """AudioQueries per ``/multi_synthesis``."""

    def validate(self) -> RequestBounds:
        if self.max_text_length < 1:
            raise ValueError(f"max_text_length must be at least 1, got {self.max_text_length}")
        if not (math.isfinite(self.max_audio_seconds) and self.max_audio_seconds > 0):
            raise ValueError(
                f"max_audio_seconds must be a positive number, got {self.max_audio_seconds}"
            )
        if self.max_queries < 1:
            raise ValueError(f"max_queries must be at least 1, got {self.max_queries}")
        return self


class OutputBudget:
    """Seconds of audio a request (or a batch of them: ``/multi_synthesis``) may still make."""

    def __init__(self, seconds: float) -> None:
        self.limit = seconds
        self.used = 0.0

    @property
    def left(self) -> float:
        return self.limit - self.used

    def spend(self, seconds: float) -> bool:
        """Count `seconds` made; False once the budget is passed."""
        self.used += seconds
        return self.used <= self.limit + 1e-9
