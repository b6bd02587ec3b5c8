"""Waiting on a `Speaker` from async tests."""

from __future__ import annotations

import asyncio
import time

from engine import Speaker


async def until_unlocked(speaker: Speaker, timeout: float = 5.0) -> None:
    """Return once `speaker`'s lock is free; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while speaker.lock.locked():
        assert time.monotonic() < deadline, "speaker lock still held"
        await asyncio.sleep(0.02)
