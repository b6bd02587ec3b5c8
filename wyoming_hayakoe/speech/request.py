"""A speech request as every door hands it to `SpeechService`: what to say, with which voice,
with which options, and how the audio is wanted.

The doors translate their protocol into this and nothing more (Wyoming's ``synthesize``,
the page's ``/api/speak``, VOICEVOX's AudioQuery, OpenAI's ``/v1/audio/speech``, ``say``).
Each option has one meaning on every door: it applies over the voice's own settings (the
server's flags, or the preset's), never instead of them.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterable
from dataclasses import dataclass, field

from engine.text.from_phrases import PhrasedText

__all__ = ["SpeechOptions", "SpeechRequest", "SpeechText"]

SpeechText = str | PhrasedText | AsyncIterable[str]
"""A whole text, a reading given as accent phrases (`PhrasedText`, itself a `str`), or text
deltas as they arrive (a Wyoming stream)."""


@dataclass(frozen=True)
class SpeechOptions:
    """The per-request options. Factors multiply the voice's value (1: as the voice is set);
    the others replace it when given."""

    speed: float = 1.0
    """Speaking-rate factor (2: twice as fast), times the voice's or preset's speed."""
    pitch: float = 1.0
    """Pitch factor (1.1: 10 % higher), times the preset's ``pitch_scale``."""
    intonation: float = 1.0
    """Intonation factor (0.5: half the pitch movement), times the preset's."""
    style_strength: float = 1.0
    """Factor on the style's weight (VOICEVOX ``intonationScale``: 0 is neutral)."""
    tempo_dynamics: float = 1.0
    """Factor on the rhythm's liveliness (``sdp_ratio``, capped at 1)."""
    volume: float = 1.0
    """Gain factor, times the preset's volume."""
    sample_rate: int | None = None
    """Output rate (None: the voice's, or the preset's)."""
    lead_silence: float | None = None
    """Silence before the speech, seconds at speed 1 (divided by `speed`; None: the
    preset's)."""
    tail_silence: float | None = None
    """Silence after the speech, as `lead_silence`."""
    sentence_pause: float | None = None
    """Pause between sentences, seconds at speed 1 (divided by `speed`; None: the voice's)."""
    seed: int | None = None
    """Fixed noise seed (None: the server's setting)."""

    def __post_init__(self) -> None:
        for name in ("speed", "pitch", "intonation", "style_strength", "tempo_dynamics", "volume"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0 or (name == "speed" and value == 0):
                raise ValueError(f"{name} must be a finite positive factor, got {value}")
        for name in ("lead_silence", "tail_silence", "sentence_pause"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be seconds (0 or more), got {value}")

    @property
    def silence_s(self) -> float:
        """The silence this request asks for around its speech, seconds as spoken."""
        return ((self.lead_silence or 0.0) + (self.tail_silence or 0.0)) / self.speed


@dataclass(frozen=True)
class SpeechRequest:
    """One request for speech."""

    text: SpeechText
    voice: str | None = None
    """A voice name by the rule (`wyoming_hayakoe.resolve`); None: the default voice."""
    style: str | None = None
    fallback: bool = False
    """A name that matches nothing falls back to the default voice with a warning
    (Wyoming: Home Assistant caches voice lists; speech beats silence); otherwise it is
    refused (`UnknownVoice`)."""
    options: SpeechOptions = field(default_factory=SpeechOptions)
    measure_whole: bool = True
    """Loudness (when a preset sets it) measured over the whole text, so nothing comes
    until the end; False: on the first sentence (a stream played as it comes)."""
    guard: bool | None = None
    """Pace the audio for a listener playing it in real time (None: the server's
    ``--playback-guard``; False: as fast as it is made)."""
    quiet: float | None = None
    """Deltas only: seconds without one after which finished sentences are spoken (None: the
    server's ``--stream-quiet``)."""
    door: str = ""
    """Who asked (``wyoming``, ``page``, ``voicevox``, ``openai``, ``say``), for the log."""
