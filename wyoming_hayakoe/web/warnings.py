"""The last warnings and errors the server logged, for the Status view."""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

__all__ = ["WarningLog"]


class WarningLog(logging.Handler):
    """Keeps the last `size` records at WARNING or above (secrets scrubbed)."""

    def __init__(self, size: int = 50) -> None:
        super().__init__(logging.WARNING)
        self.records: deque[dict[str, Any]] = deque(maxlen=size)
        from engine.sources.redact import RedactingFilter

        self.addFilter(RedactingFilter())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string must not break logging
            message = str(record.msg)
        self.records.append(
            {
                "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(record.created)),
                "level": record.levelname,
                "logger": record.name,
                "message": message[:2000],
            }
        )

    def latest(self) -> list[dict[str, Any]]:
        """Newest first."""
        return list(reversed(self.records))
