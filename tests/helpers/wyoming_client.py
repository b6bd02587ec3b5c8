"""The old host/port forms of `wyoming_hayakoe.client`, kept only for the benchmarks that
still import them (`benchmarks/wyoming_client.py`, `benchmarks/server_rss.py`); tests use
`wyoming_hayakoe.client.WyomingClient`. Delete this file once nothing imports it."""

from __future__ import annotations

from collections.abc import Callable

from wyoming.info import Info

from wyoming_hayakoe.client import ServerAddress, Spoken, WyomingClient

__all__ = ["Spoken", "describe", "speak", "wait_until_answering"]


async def describe(host: str, port: int, timeout: float = 10.0) -> Info:
    """`WyomingClient.describe`."""
    return await WyomingClient(ServerAddress(host, port), timeout=timeout).describe()


async def speak(
    host: str, port: int, text: str, voice: str | None = None, timeout: float = 120.0
) -> Spoken:
    """`WyomingClient.speak`."""
    return await WyomingClient(ServerAddress(host, port), timeout=timeout).speak(text, voice)


async def wait_until_answering(
    host: str, port: int, timeout: float, alive: Callable[[], bool] | None = None
) -> Info:
    """`WyomingClient.wait_until_answering`."""
    client = WyomingClient(ServerAddress(host, port), timeout=5.0)
    return await client.wait_until_answering(timeout, alive)
