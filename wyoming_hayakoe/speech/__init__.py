"""One way in for every speech request (`SpeechService.open`), whichever door it came
through; the doors translate their protocol into a `SpeechRequest` and its `SpeechError`s
back, and nothing more."""

from .bounds import OutputBudget, RequestBounds
from .errors import BadOption, Busy, OutputTooLong, Problem, SpeechError, TooLarge, UnknownVoice
from .request import SpeechOptions, SpeechRequest
from .service import Speech, SpeechService

__all__ = [
    "BadOption",
    "Busy",
    "OutputBudget",
    "OutputTooLong",
    "Problem",
    "RequestBounds",
    "Speech",
    "SpeechError",
    "SpeechOptions",
    "SpeechRequest",
    "SpeechService",
    "TooLarge",
    "UnknownVoice",
]
