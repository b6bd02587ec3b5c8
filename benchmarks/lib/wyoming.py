"""A real Wyoming TCP client that listens to a TTS server as a person would, keeping time.

`listen` sends one request and plays the answer on a real-time clock from its first audio
chunk (`listener.ListenerClock`): time to first audio, every gap a listener hears (a wait
for audio after playback started; waits under 20 ms are scheduling noise, counted apart),
when the last sample is heard, and the total time to the end event.

One-shot: `synthesize` → `audio-start`, `audio-chunk`s … `audio-stop`.
Streamed (what Home Assistant does with an LLM reply): `synthesize-start`, the text as
`synthesize-chunk` deltas — back to back, or at an LLM's pace (`Pace`: tokens per second
and characters per token) — the compatibility `synthesize`, `synthesize-stop` → audio …
`synthesize-stopped`. Text is written while audio is read, as a real client does.
The clock starts when the first request event is written.

"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.info import Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

from benchmarks.lib.listener import MIN_GAP_S, ListenerClock
from tests.helpers.wyoming_client import wait_until_answering

CHUNK_CHARS = 4
"""Characters per `synthesize-chunk` when the text is sent back to back."""


@dataclass(frozen=True)
class Pace:
    """Text deltas as an LLM writes them: `chars_per_token` characters every 1/`tokens_per_s`."""

    tokens_per_s: float = 30.0
    chars_per_token: int = 2

    @property
    def chars_per_s(self) -> float:
        return self.tokens_per_s * self.chars_per_token


@dataclass(frozen=True)
class Listened:
    """What a real-time listener got from one request (seconds since it was sent)."""

    clock: ListenerClock
    """The playback bookkeeping: gaps, noise, audio length, chunks."""
    total_s: float
    """Until the end event (`audio-stop` one-shot, `synthesize-stopped` streamed)."""
    text_sent_s: float
    """Until the last request event was written (the text's arrival at an LLM's pace)."""
    rate: int
    """Sample rate from the audio."""

    @property
    def first_audio_s(self) -> float:
        first = self.clock.first_audio_s
        return first if first is not None else self.total_s

    def summary(self) -> dict[str, float]:
        """Plain figures for JSON."""
        return {
            "first_audio_s": self.first_audio_s,
            "gapless_start_s": self.clock.gapless_start_s or 0.0,
            "gaps": self.clock.gap_count,
            "gap_s": self.clock.gap_s,
            "noise_waits": self.clock.noise_count,
            "noise_s": self.clock.noise_s,
            "audio_s": self.clock.audio_s,
            "heard_until_s": self.clock.heard_until_s,
            "total_s": self.total_s,
            "text_sent_s": self.text_sent_s,
            "chunks": self.clock.chunks,
        }


async def wait_ready(host: str, port: int, timeout: float = 600.0) -> Info:
    """Poll until the server answers `describe`; return its info."""
    return await wait_until_answering(host, port, timeout)


async def listen(
    host: str,
    port: int,
    text: str,
    voice: str | None,
    *,
    streamed: bool,
    pace: Pace | None = None,
    chunk_chars: int = CHUNK_CHARS,
    min_gap: float = MIN_GAP_S,
    timeout: float = 600.0,
) -> Listened:
    """One request, listened to in real time. `streamed` sends the text in deltas: at
    `pace` (None: `chunk_chars` characters back to back). An `error` event raises."""
    v = SynthesizeVoice(name=voice) if voice else None
    async with AsyncTcpClient(host, port) as client:
        t0 = time.perf_counter()
        clock = ListenerClock(start=t0, min_gap=min_gap)
        sent = [0.0]

        async def write() -> None:
            if not streamed:
                await client.write_event(Synthesize(text=text, voice=v).event())
            else:
                await client.write_event(SynthesizeStart(voice=v).event())
                step = pace.chars_per_token if pace else chunk_chars
                for n, i in enumerate(range(0, len(text), step)):
                    if pace is not None and n:  # absolute schedule: no drift
                        delay = t0 + n / pace.tokens_per_s - time.perf_counter()
                        if delay > 0:
                            await asyncio.sleep(delay)
                    await client.write_event(SynthesizeChunk(text=text[i : i + step]).event())
                await client.write_event(Synthesize(text=text, voice=v).event())
                await client.write_event(SynthesizeStop().event())
            sent[0] = time.perf_counter() - t0

        writer = asyncio.create_task(write())
        end = SynthesizeStopped().event().type if streamed else AudioStop().event().type
        rate = 0
        try:
            while True:
                event = await asyncio.wait_for(client.read_event(), timeout)
                now = time.perf_counter()
                if event is None:
                    raise ConnectionError(f"{host}:{port} closed the connection before {end}")
                if event.type == "error":
                    raise RuntimeError(f"{host}:{port} answered with an error: {event.data}")
                if AudioStart.is_type(event.type):
                    rate = AudioStart.from_event(event).rate
                elif AudioChunk.is_type(event.type):
                    chunk = AudioChunk.from_event(event)
                    rate = chunk.rate
                    frames = len(chunk.audio) // max(1, chunk.width * chunk.channels)
                    clock.feed(now, frames, chunk.rate)
                elif event.type == end:
                    break
            await writer
        finally:
            writer.cancel()
        return Listened(clock, time.perf_counter() - t0, sent[0], rate)
