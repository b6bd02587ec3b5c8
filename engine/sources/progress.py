"""Progress lines for long downloads, written through `logging` (no terminal tricks), so they
show up in a Docker build log and in a server's journal alike."""

from __future__ import annotations

import logging
import time

MB = 1024 * 1024


class Progress:
    """Counts bytes and logs `label: 42% (105.0/250.0 MB, 31.2 MB/s)` at most every
    `interval` seconds; transfers under `min_bytes` log only their end."""

    def __init__(
        self,
        logger: logging.Logger,
        label: str,
        total_bytes: int,
        *,
        interval: float = 5.0,
        min_bytes: int = 8 * MB,
    ) -> None:
        self._logger = logger
        self._label = label
        self._total = max(int(total_bytes), 0)
        self._interval = interval
        self._verbose = self._total >= min_bytes
        self._start = time.monotonic()
        self._last = self._start
        self.done = 0

    def update(self, nbytes: int) -> None:
        self.done += nbytes
        now = time.monotonic()
        if self._verbose and now - self._last >= self._interval:
            self._last = now
            self._logger.info("%s: %s", self._label, self._figures(now))

    def finish(self) -> None:
        self._logger.info("%s: done, %s", self._label, self._figures(time.monotonic()))

    def _figures(self, now: float) -> str:
        elapsed = max(now - self._start, 1e-6)
        pct = 100.0 * self.done / self._total if self._total else 100.0
        return (
            f"{pct:.0f}% ({self.done / MB:.1f}/{self._total / MB:.1f} MB, "
            f"{self.done / MB / elapsed:.1f} MB/s, {elapsed:.1f} s)"
        )
