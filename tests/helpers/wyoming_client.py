"""A Wyoming client for servers the tests reach only over TCP (containers, a load balancer)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeVoice


@dataclass(frozen=True)
class Spoken:
    """What one `synthesize` request got back."""

    rate: int
    """Sample rate from `audio-start`."""
    width: int
    """Bytes per sample."""
    channels: int
    """Channel count."""
    pcm: bytes
    """Every `audio-chunk` payload, in order, up to `audio-stop`."""

    @property
    def seconds(self) -> float:
        """Length of the audio."""
        return len(self.pcm) / (self.rate * self.width * self.channels)

    @property
    def rms(self) -> float:
        """Root mean square of the 16-bit samples (0 for silence)."""
        samples = np.frombuffer(self.pcm, dtype=np.int16).astype(np.float64)
        return float(np.sqrt(np.mean(samples**2))) if samples.size else 0.0


async def describe(host: str, port: int, timeout: float = 10.0) -> Info:
    """Send `describe`, return the `info` answer."""
    async with AsyncTcpClient(host, port) as client:
        await client.write_event(Describe().event())
        while True:
            event = await asyncio.wait_for(client.read_event(), timeout)
            if event is None:
                raise ConnectionError(f"{host}:{port} closed the connection before info")
            if Info.is_type(event.type):
                return Info.from_event(event)


async def speak(
    host: str, port: int, text: str, voice: str | None = None, timeout: float = 120.0
) -> Spoken:
    """Send `synthesize` and collect the audio up to `audio-stop`; an `error` event or a
    closed connection raises."""
    request = Synthesize(text=text, voice=SynthesizeVoice(name=voice) if voice else None)
    async with AsyncTcpClient(host, port) as client:
        await client.write_event(request.event())
        start: AudioStart | None = None
        chunks: list[bytes] = []
        while True:
            event = await asyncio.wait_for(client.read_event(), timeout)
            if event is None:
                raise ConnectionError(f"{host}:{port} closed the connection before audio-stop")
            if event.type == "error":
                raise RuntimeError(f"{host}:{port} answered with an error: {event.data}")
            if AudioStart.is_type(event.type):
                start = AudioStart.from_event(event)
            elif AudioChunk.is_type(event.type):
                chunks.append(AudioChunk.from_event(event).audio)
            elif AudioStop.is_type(event.type):
                assert start is not None, "audio-stop without audio-start"
                return Spoken(start.rate, start.width, start.channels, b"".join(chunks))


async def wait_until_answering(
    host: str, port: int, timeout: float, alive: Callable[[], bool] | None = None
) -> Info:
    """Retry `describe` until the server answers; `alive()` False (its process died) or the
    deadline fails at once, with the last error."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            raise RuntimeError(f"the server process for {host}:{port} exited (last: {last})")
        try:
            return await describe(host, port, timeout=5.0)
        except (OSError, ConnectionError, asyncio.TimeoutError) as err:
            last = err
            await asyncio.sleep(0.5)
    raise TimeoutError(f"no info from {host}:{port} within {timeout:g} s (last: {last})")
