"""Memory upkeep of a long-running server: freed heap is handed back once it is idle, and
glibc's malloc arenas are limited unless MALLOC_ARENA_MAX says otherwise. The effect on
resident size over 1000 requests is measured by benchmarks/soak.py
(tests/benchmarks/test_soak.py)."""

from __future__ import annotations

import asyncio
import ctypes.util
import platform

import pytest
from wyoming.tts import Synthesize

from engine.heap import limit_malloc_arenas
from wyoming_hayakoe.memory import IdleHeapTrim

pytestmark = pytest.mark.timeout(60)

glibc = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc" or not ctypes.util.find_library("c"), reason="glibc only"
)


@glibc
async def test_the_heap_is_trimmed_once_the_server_is_idle(start_server, wy) -> None:
    server = await start_server()
    trim = server._heap_trim
    trim.delay_s = 0.2
    assert trim.trims == 0
    async with wy.client(server) as client:
        await client.write_event(Synthesize(text="こんにちは。").event())
        await wy.read_until(client, "audio-stop")
    for _ in range(50):
        if trim.trims:
            break
        await asyncio.sleep(0.05)
    assert trim.trims == 1


async def test_a_busy_server_is_trimmed_only_once_it_is_idle() -> None:
    busy = True
    trim = IdleHeapTrim(lambda: not busy, delay_s=0.05, patience=100)
    trim()  # no request left, but a worker is still finishing its sentence
    await asyncio.sleep(0.3)
    assert trim.trims == 0
    busy = False  # ... now it is done
    await asyncio.sleep(0.3)
    assert trim.trims == 1
    await asyncio.sleep(0.2)
    assert trim.trims == 1  # once per idle period


async def test_patience_runs_out() -> None:
    trim = IdleHeapTrim(lambda: False, delay_s=0.02, patience=3)
    trim()
    await asyncio.sleep(0.3)
    assert trim.trims == 0 and trim._timer is None


@glibc
def test_arenas_are_limited_unless_the_environment_says(monkeypatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    assert limit_malloc_arenas() is True
