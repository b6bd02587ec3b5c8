"""The HTTP status of each `Problem`: the one table the page and the engine APIs answer by
(each writes its own JSON shape around it)."""

from __future__ import annotations

from .errors import Problem

__all__ = ["STATUS"]

STATUS: dict[Problem, int] = {
    Problem.UNKNOWN_VOICE: 400,
    Problem.UNKNOWN_STYLE: 400,
    Problem.TEXT_TOO_LONG: 413,
    Problem.AUDIO_TOO_LONG: 413,
    Problem.TOO_MANY_QUERIES: 413,
    Problem.BAD_OPTION: 422,
    Problem.BUSY: 503,
    Problem.SHUTTING_DOWN: 503,
}
