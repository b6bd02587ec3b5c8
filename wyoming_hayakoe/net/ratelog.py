"""`RateLimitedLog`: one line per interval for something that may happen a thousand times a
second (connections refused, clients timed out), with the count of those not logged."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["RateLimitedLog"]


class RateLimitedLog:
    """Logs `warning` at most once per `interval` seconds; the next line says how many
    were left out in between."""

    def __init__(
        self,
        logger: logging.Logger,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._interval = interval
        self._clock = clock
        self._next = float("-inf")
        self._skipped = 0

    def warning(self, message: str, *args: object) -> None:
        now = self._clock()
        if now < self._next:
            self._skipped += 1
            return
        self._next = now + self._interval
        skipped, self._skipped = self._skipped, 0
        if skipped:
            message += " (and %d more like it since the last such line)"
            args = (*args, skipped)
        self._logger.warning(message, *args, stacklevel=2)
