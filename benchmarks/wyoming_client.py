"""A real Wyoming TCP client that times a TTS server: time to first audio and to the end.

One-shot: `synthesize` → first `audio-chunk` … `audio-stop`.
Streaming (what Home Assistant does with an LLM reply): `synthesize-start`, the text as
`synthesize-chunk`s of a few characters sent back to back, the compatibility `synthesize`,
`synthesize-stop` → first `audio-chunk` … `synthesize-stopped`. The clock starts when the
first request event is written.
"""

from __future__ import annotations

import asyncio
import time

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

CHUNK_CHARS = 4
"""Characters per `synthesize-chunk` (an LLM token is one to a few Japanese characters)."""


async def wait_ready(host: str, port: int, timeout: float = 600.0) -> Info:
    """Poll until the server answers `describe`; return its info."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            async with AsyncTcpClient(host, port) as client:
                await client.write_event(Describe().event())
                while True:
                    event = await asyncio.wait_for(client.read_event(), 5.0)
                    if event is None:
                        break
                    if Info.is_type(event.type):
                        return Info.from_event(event)
        except (OSError, asyncio.TimeoutError) as exc:
            last = exc
        await asyncio.sleep(0.5)
    raise TimeoutError(f"Wyoming server {host}:{port} not ready after {timeout:.0f} s ({last})")


async def _read_audio(client: AsyncTcpClient, t0: float, end_type: str) -> dict[str, float]:
    first = None
    samples = 0
    rate = width = channels = 0
    chunks = 0
    while True:
        event = await asyncio.wait_for(client.read_event(), 600.0)
        if event is None:
            raise ConnectionError("server closed the connection before the end of the audio")
        if AudioStart.is_type(event.type):
            start = AudioStart.from_event(event)
            rate, width, channels = start.rate, start.width, start.channels
        elif AudioChunk.is_type(event.type):
            chunk = AudioChunk.from_event(event)
            if first is None:
                first = time.perf_counter() - t0
            rate, width, channels = chunk.rate, chunk.width, chunk.channels
            samples += len(chunk.audio) // max(1, width * channels)
            chunks += 1
        elif event.type == end_type:
            break
    wall = time.perf_counter() - t0
    return {
        "ttfa_s": first if first is not None else wall,
        "wall_s": wall,
        "audio_s": samples / rate if rate else 0.0,
        "chunks": chunks,
    }


async def synthesize_once(host: str, port: int, text: str, voice: str) -> dict[str, float]:
    """One-shot request; returns ttfa_s, wall_s (to audio-stop), audio_s, chunks."""
    async with AsyncTcpClient(host, port) as client:
        t0 = time.perf_counter()
        await client.write_event(Synthesize(text=text, voice=SynthesizeVoice(name=voice)).event())
        return await _read_audio(client, t0, AudioStop().event().type)


async def synthesize_streaming(
    host: str, port: int, text: str, voice: str, chunk_chars: int = CHUNK_CHARS
) -> dict[str, float]:
    """Streaming request (text in small chunks); returns ttfa_s, wall_s (to
    synthesize-stopped), audio_s, chunks."""
    async with AsyncTcpClient(host, port) as client:
        t0 = time.perf_counter()
        v = SynthesizeVoice(name=voice)
        await client.write_event(SynthesizeStart(voice=v).event())
        for i in range(0, len(text), chunk_chars):
            await client.write_event(SynthesizeChunk(text=text[i : i + chunk_chars]).event())
        await client.write_event(Synthesize(text=text, voice=v).event())
        await client.write_event(SynthesizeStop().event())
        return await _read_audio(client, t0, SynthesizeStopped().event().type)
