"""An install as a job the page can follow: queued → downloading (bytes/total) → checking →
converting (an `.aivm`'s checkpoint to ONNX) → loading → ready (then int8 made in the
background, shown too), or failed with one sentence naming the cause, or cancelled."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FINAL", "Job", "JobFailed"]

QUEUED = "queued"
DOWNLOADING = "downloading"
CHECKING = "checking"
CONVERTING = "converting"
LOADING = "loading"
READY = "ready"
FAILED = "failed"
CANCELLED = "cancelled"
FINAL = frozenset({READY, FAILED, CANCELLED})

_ids = itertools.count(1)


class JobFailed(Exception):
    """Ends a job as failed; the message is the one sentence the page shows."""


@dataclass
class Job:
    source: str
    """What was asked for (an AivisHub page or UUID, ``upload:<file name>``, ``hf://...``)."""
    name: str | None = None
    action: str = "install"
    """``install`` or ``update``."""
    id: str = field(default_factory=lambda: str(next(_ids)))
    state: str = QUEUED
    done_bytes: int = 0
    total_bytes: int | None = None
    error: str = ""
    voices: tuple[str, ...] = ()
    """The voices it made (ready)."""
    created: float = field(default_factory=time.time)
    cancel_asked: bool = False

    @property
    def finished(self) -> bool:
        return self.state in FINAL

    def as_json(self, int8: dict[str, str] | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "action": self.action,
            "source": self.source,
            "name": self.name,
            "state": self.state,
            "bytes": self.done_bytes,
            "total": self.total_bytes,
            "error": self.error or None,
            "voices": list(self.voices),
        }
        if int8 is not None:
            data["int8"] = int8
        return data
