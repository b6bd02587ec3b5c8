"""The memory guard: what a voice will hold, estimated from its file, against what the
machine (or its cgroup limit) has free; an install that cannot fit is refused before it
starts, with both figures."""

from __future__ import annotations

import logging
from pathlib import Path

from ..errors import HayakoeError

__all__ = ["HOLD_FACTOR", "MemoryRefused", "available_bytes", "check_fits", "estimate_bytes"]

_LOGGER = logging.getLogger(__name__)

HOLD_FACTOR = 1.6
"""Bytes a loaded voice holds per byte of its file: the fp32 weights once in ONNX Runtime's
sessions (front and decoder graphs), their arenas and the style vectors (a full-size
`.aivmx` of 250 MB holds about 400 MB; the shared BERT is paid once, not here)."""
_HEADROOM = 128 * 1024 * 1024
"""Kept free for requests (decoder windows, the output stage)."""


class MemoryRefused(HayakoeError, RuntimeError):
    """The voice would not fit; the message says how much it needs and how much is free."""


def estimate_bytes(path: Path) -> int:
    return int(path.stat().st_size * HOLD_FACTOR)


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_free(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    for limit_name, usage_name in (
        ("memory.max", "memory.current"),  # cgroup v2
        ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes"),  # v1
    ):
        try:
            limit_text = (root / limit_name).read_text().strip()
            usage = int((root / usage_name).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit_text == "max" or not limit_text.isdigit() or int(limit_text) >= 1 << 60:
            return None
        return max(0, int(limit_text) - usage)
    return None


def available_bytes(cgroup_root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """Bytes this process may still take: the machine's available memory, or its cgroup's
    room where that is less; None when neither can be read."""
    found = [b for b in (_meminfo_available(), _cgroup_free(cgroup_root)) if b is not None]
    return min(found) if found else None


def check_fits(what: str, needed: int, available: int | None) -> None:
    """`MemoryRefused` when `needed` bytes (and some room for requests) exceed `available`."""
    if available is None:
        _LOGGER.debug("Free memory unknown; %s is installed unchecked", what)
        return
    if needed + _HEADROOM > available:
        raise MemoryRefused(
            f"{what} needs about {needed / 2**20:.0f} MB and this machine has "
            f"{available / 2**20:.0f} MB free (its memory limit counted): remove a voice "
            "first, or give the server more memory"
        )
