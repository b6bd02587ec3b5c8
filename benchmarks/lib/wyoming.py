"""A listener that keeps time, over real Wyoming TCP: the project's client
(`wyoming_hayakoe.client.WyomingClient`) sends the request, `listener.ListenerClock` plays
the answer from its first audio chunk at real time.

`listen` gives time to first audio, every gap a listener hears (a wait for audio after
playback started; waits under 20 ms are scheduling noise, counted apart), when the last
sample is heard, and the total time to the end event. One-shot: `synthesize`; streamed (what
Home Assistant does with an LLM reply): the text as `synthesize-chunk` deltas, back to back
or at an LLM's pace (`Pace`: tokens per second and characters per token). Times are seconds
since the request's first event was written.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.lib.listener import MIN_GAP_S, ListenerClock
from wyoming_hayakoe.client import ServerAddress, WyomingClient, deltas_of

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
    `pace` (None: `chunk_chars` characters back to back). The server's `error` raises
    (`wyoming_hayakoe.client.ServerError`)."""
    client = WyomingClient(ServerAddress(host, port), timeout=timeout)
    if not streamed:
        spoken = await client.speak(text, voice)
    else:
        deltas = deltas_of(text, pace.chars_per_token if pace else chunk_chars)
        interval = 1 / pace.tokens_per_s if pace else None
        spoken = await client.speak_streamed(deltas, voice, interval_s=interval)
    clock = ListenerClock(start=0.0, min_gap=min_gap)
    for chunk in spoken.chunks:
        clock.feed(chunk.at_s, chunk.frames, spoken.rate)
    return Listened(clock, spoken.total_s, spoken.text_sent_s, spoken.rate)
