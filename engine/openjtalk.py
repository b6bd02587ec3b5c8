"""The embedded voice: OpenJTalk's HTS voice "mei" that ships inside the pyopenjtalk wheel.

Why: it needs no download, no PyTorch and no network, so the server speaks Japanese out of
the box and every server test runs on it. It is a `Voice` like the neural ones, loaded by the
name ``openjtalk-mei`` (`EMBEDDED_VOICE_NAME`).

Styles are derived from the HTS engine's two knobs (pitch shift in half-tones, speaking rate):

==========  ===========  ============
style       half-tones   rate factor
==========  ===========  ============
Neutral      0           1.00
Bright      +3           1.08
Calm        -2           0.90
High        +5           1.00
Low         -4           1.00
==========  ===========  ============

Options: ``speed`` multiplies the rate, ``pitch_scale`` shifts by ``12*log2(pitch_scale)``
half-tones, ``style_weight`` scales the style's offsets (0 = Neutral). ``sentence_silence``
sets the pause between sentences (default `DEFAULT_SENTENCE_PAUSE`). ``intonation_scale``,
``sdp_ratio``, ``noise``, ``noise_w``, ``speaker_id`` and ``seed`` have no meaning for an
HTS voice and are ignored (the output is deterministic anyway).

The HTS engine's level passes full scale on many phrases (peaks up to 3.7× over the readings
phrase set; 「おはようございます。」 clipped 17 samples at −32768). Each phrase whose peaks pass it
is limited below full scale and turned up so that its loudness stays what it was
(`engine.output.limiter.limit_keeping_loudness`, measured −0.17..+0.03 LU over the 235
phrases); the engine renders a phrase whole, so this needs nothing from the phrases after it.
``OpenJTalkVoice(peak_limit=False)`` gives the engine's own level (for measurements).

The HTS output carries ~0.35 s of silence at each end of every utterance; it is trimmed to
short margins so that the first sound comes early and pauses are set by the option above.
"""

from __future__ import annotations

import atexit
import logging
import math
import re
import weakref
from collections.abc import Generator, Sequence
from dataclasses import dataclass

import numpy as np

from .output.limiter import limit_keeping_loudness
from .voice_backend import AudioPiece, ListenerView, SynthesisOptions

__all__ = ["DEFAULT_SENTENCE_PAUSE", "EMBEDDED_VOICE_NAME", "STYLES", "OpenJTalkVoice"]

_LOGGER = logging.getLogger(__name__)

_LIVE: weakref.WeakSet[OpenJTalkVoice] = weakref.WeakSet()


@atexit.register
def _release_engines() -> None:
    """Free every voice's HTS engine while the interpreter is still whole. An `HTSEngine`
    left for the last garbage collection of a shutting-down interpreter (a voice held in a
    reference cycle, as a server's state is) fails in its deallocation, which then prints
    "Error in sys.excepthook" with nothing after it."""
    for voice in list(_LIVE):
        voice._engine = None


EMBEDDED_VOICE_NAME = "openjtalk-mei"
DEFAULT_SENTENCE_PAUSE = 0.25
"""Seconds of silence between sentences when `SynthesisOptions.sentence_silence` is None."""

MAX_PHRASE_CHARS = 120
"""Longer sentences are cut at commas/spaces (else hard) so that audio keeps flowing and
memory stays bounded even for text without sentence ends."""

_LEAD_MARGIN_S = 0.03
_TAIL_MARGIN_S = 0.08
_COMMA_PAUSE_S = 0.12  # between the pieces of a cut sentence
_SECONDS_PER_CHAR = 0.15  # audio per character before a call has measured its own
_SILENCE_THRESHOLD = 0.01  # of full scale
_HTS_FULL_SCALE = 32768.0  # HTS engine output is float64 in int16 units


@dataclass(frozen=True)
class _Style:
    half_tones: float
    rate: float


STYLES: dict[str, _Style] = {
    "Neutral": _Style(0.0, 1.0),
    "Bright": _Style(3.0, 1.08),
    "Calm": _Style(-2.0, 0.90),
    "High": _Style(5.0, 1.0),
    "Low": _Style(-4.0, 1.0),
}

_BREAKS = re.compile(r"(?<=[、，,;；：:])|(?<=\s)")


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def split_long(sentence: str, limit: int = MAX_PHRASE_CHARS) -> list[str]:
    """Cut a sentence longer than `limit` characters at commas/spaces, else every `limit`."""
    if len(sentence) <= limit:
        return [sentence]
    parts: list[str] = []
    current = ""
    for piece in (p for p in _BREAKS.split(sentence) if p):
        while len(piece) > limit:  # no break inside: hard cut
            if current:
                parts.append(current)
                current = ""
            parts.append(piece[:limit])
            piece = piece[limit:]
        if len(current) + len(piece) > limit and current:
            parts.append(current)
            current = ""
        current += piece
    if current:
        parts.append(current)
    return [p for p in (s.strip() for s in parts) if p]


class OpenJTalkVoice:
    """The HTS voice `mei_normal` bundled with pyopenjtalk (48 kHz), as a `Voice`
    (`engine.voice_backend`).

    One `HTSEngine` per instance (not pyopenjtalk's global one), so its speed/pitch settings
    are private; the OpenJTalk text frontend is pyopenjtalk's global instance, which is where
    user dictionaries are installed.
    """

    name: str = EMBEDDED_VOICE_NAME
    styles: Sequence[str] = tuple(STYLES)
    description: str = "OpenJTalk HTS voice 'mei' (embedded, works offline)"
    attribution_name: str = "MMDAgent 'Mei' HTS voice, Nagoya Institute of Technology (CC BY 3.0)"
    attribution_url: str = "https://www.mmdagent.jp/"
    version: str = "1.0"
    sentence_pause: float = DEFAULT_SENTENCE_PAUSE
    default_style: str | None = None

    def __init__(self, name: str = EMBEDDED_VOICE_NAME, *, peak_limit: bool = True) -> None:
        import pyopenjtalk
        from pyopenjtalk.htsengine import HTSEngine

        self.name = name
        self.peak_limit = peak_limit
        """Phrases whose peaks pass full scale are limited, loudness kept (module docstring)."""
        self._pyopenjtalk = pyopenjtalk
        self._engine: HTSEngine | None = HTSEngine(pyopenjtalk.DEFAULT_HTS_VOICE)
        self.sample_rate: int = int(self._engine.get_sampling_frequency())
        _LIVE.add(self)

    # -- Voice -------------------------------------------------------------------------
    def run_info(self) -> None:
        """No graphs, no choice of arithmetic."""
        return None

    def identity(self) -> None:
        """No file of its own: it ships inside pyopenjtalk."""
        return None

    def render(
        self,
        sentences: Sequence[str],
        options: SynthesisOptions,
        listener: ListenerView | None = None,
    ) -> Generator[AudioPiece, None, None]:
        """Yield one piece per phrase (sentences longer than `MAX_PHRASE_CHARS` give several;
        their sizes do not depend on `listener`)."""
        rate, half_tones = self._knobs(options)
        pause = options.sentence_silence
        pause_s = DEFAULT_SENTENCE_PAUSE if pause is None else max(0.0, float(pause))
        spoken = False  # any sound yielded yet: pauses go only between sounds
        plan = [
            (i, k, p) for i, s in enumerate(sentences) for k, p in enumerate(split_long(s) or [""])
        ]
        lasts = {i: k for i, k, _ in plan}
        # characters in the phrases after each one, and the longest of them (the guard's
        # audio still to come, at this call's own seconds per character)
        chars_after, longest_after = [0] * len(plan), [0] * len(plan)
        for n in range(len(plan) - 2, -1, -1):
            size = len(plan[n + 1][2])
            chars_after[n] = chars_after[n + 1] + size
            longest_after[n] = max(longest_after[n + 1], size)
        said_chars, said_s = 0, 0.0
        for n, (index, k, phrase) in enumerate(plan):
            audio = self._synthesize(phrase, rate, half_tones)
            said_chars, said_s = said_chars + len(phrase), said_s + audio.size / self.sample_rate
            if audio.size and spoken:
                gap_s = pause_s if k == 0 else _COMMA_PAUSE_S
                gap = np.zeros(int(round(gap_s * self.sample_rate)), np.float32)
                audio = np.concatenate([gap, audio])
            spoken = spoken or audio.size > 0
            per_char = said_s / said_chars if said_chars else _SECONDS_PER_CHAR / rate
            pauses = pause_s * (len(plan) - 1 - n)
            yield AudioPiece(
                audio,
                index,
                k == lasts[index],
                chars_after[n] * per_char + pauses,
                longest_after[n] * per_char,
            )

    # -- internals ---------------------------------------------------------------------
    def _knobs(self, options: SynthesisOptions) -> tuple[float, float]:
        style = STYLES.get(options.style)
        if style is None:
            _LOGGER.warning(
                "Voice %s has no style %r (available: %s); using Neutral",
                self.name,
                options.style,
                ", ".join(STYLES),
            )
            style = STYLES["Neutral"]
        weight = _clamp(float(options.style_weight), 0.0, 4.0)
        speed = float(options.speed) if options.speed and options.speed > 0 else 1.0
        rate = _clamp(speed * style.rate**weight, 0.25, 4.0)
        pitch = (
            float(options.pitch_scale) if options.pitch_scale and options.pitch_scale > 0 else 1.0
        )
        half_tones = _clamp(style.half_tones * weight + 12.0 * math.log2(pitch), -24.0, 24.0)
        return rate, half_tones

    def _synthesize(self, text: str, rate: float, half_tones: float) -> np.ndarray:
        """Float32 audio within full scale for one phrase (`peak_limit`); empty when nothing
        in it is pronounceable."""
        if not text.strip():
            return np.zeros(0, np.float32)
        njd = self._pyopenjtalk.run_frontend(text)
        if not any(int(node.get("mora_size", 0) or 0) > 0 for node in njd):
            _LOGGER.debug("Nothing to pronounce in %r", text)
            return np.zeros(0, np.float32)
        labels = self._pyopenjtalk.make_label(njd)
        if len(labels) < 3:  # only silences
            return np.zeros(0, np.float32)
        engine = self._engine
        if engine is None:
            raise RuntimeError(f"{self.name}: the interpreter is shutting down")
        engine.set_speed(rate)
        engine.add_half_tone(half_tones)
        raw = engine.synthesize(labels)
        audio = self._trim(np.asarray(raw, dtype=np.float32) / np.float32(_HTS_FULL_SCALE))
        return limit_keeping_loudness(audio, self.sample_rate) if self.peak_limit else audio

    def _trim(self, audio: np.ndarray) -> np.ndarray:
        loud = np.flatnonzero(np.abs(audio) > _SILENCE_THRESHOLD)
        if loud.size == 0:
            return np.zeros(0, np.float32)
        start = max(0, int(loud[0]) - int(_LEAD_MARGIN_S * self.sample_rate))
        stop = min(audio.size, int(loud[-1]) + 1 + int(_TAIL_MARGIN_S * self.sample_rate))
        return np.ascontiguousarray(audio[start:stop])
