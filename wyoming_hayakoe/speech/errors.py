"""Why a speech request was not served: one error type per meaning, free of any protocol.

Each carries a `Problem` (a closed set; its value is the code the HTTP doors send, and with
``_`` written as ``-`` the code of Wyoming's ``error`` event) and the field at fault. The
doors map them: `wyoming_hayakoe.handler` to ``error`` events, `wyoming_hayakoe.speech.http`
to JSON statuses, ``say`` to one line and an exit status.
"""

from __future__ import annotations

from enum import Enum

from ..errors import HayakoeError

__all__ = [
    "BadOption",
    "Busy",
    "OutputTooLong",
    "Problem",
    "SpeechError",
    "TooLarge",
    "UnknownVoice",
]


class Problem(str, Enum):
    """What went wrong, as a code."""

    UNKNOWN_VOICE = "unknown_voice"
    UNKNOWN_STYLE = "unknown_style"
    TEXT_TOO_LONG = "text_too_long"
    AUDIO_TOO_LONG = "audio_too_long"
    TOO_MANY_QUERIES = "too_many_queries"
    BAD_OPTION = "bad_option"
    BUSY = "busy"
    SHUTTING_DOWN = "shutting_down"

    def __str__(self) -> str:
        return self.value

    @property
    def wyoming_code(self) -> str:
        """The code in Wyoming's ``error`` event (``text-too-long``, ``busy``, ...)."""
        return self.value.replace("_", "-")


class SpeechError(HayakoeError):
    """A speech request not served, and why."""

    def __init__(self, problem: Problem, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.problem = problem
        self.field = field
        """The part of the request at fault (``text``, ``voice``, ``speed``, ...)."""


class UnknownVoice(SpeechError):
    """The voice or style names nothing served; `available` lists what is."""

    def __init__(self, message: str, kind: str, available: tuple[str, ...]) -> None:
        problem = Problem.UNKNOWN_STYLE if kind == "style" else Problem.UNKNOWN_VOICE
        super().__init__(problem, message, "style" if kind == "style" else "voice")
        self.available = available


class TooLarge(SpeechError):
    """The request asks for more than a bound allows (`wyoming_hayakoe.speech.bounds`)."""

    def __init__(self, problem: Problem, message: str, field: str, limit: float) -> None:
        super().__init__(problem, message, field)
        self.limit = limit


class OutputTooLong(TooLarge):
    """The audio passed the request's budget while it was made: the rest is not spoken."""

    def __init__(self, message: str, limit: float, spoken_s: float) -> None:
        super().__init__(Problem.AUDIO_TOO_LONG, message, "text", limit)
        self.spoken_s = spoken_s


class BadOption(SpeechError):
    """An option the voice cannot take."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(Problem.BAD_OPTION, message, field)


class Busy(SpeechError):
    """Not admitted: the voice's queue is full, or the server is draining."""

    def __init__(self, message: str, *, shutting_down: bool) -> None:
        super().__init__(Problem.SHUTTING_DOWN if shutting_down else Problem.BUSY, message, "voice")
