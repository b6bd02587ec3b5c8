"""`PlaybackGuard`: playback without gaps on machines slower than speech, by holding back a
request's first audio.

A listener (Home Assistant's media player, `aplay`) starts playing at the first chunk and
then plays in real time; when the next audio is not there yet it waits, and the sentence
falls silent mid-word. On a board where synthesis is slower than speech (real-time factor
r > 1: r seconds of work per second of audio) that happens several times per answer if
audio is sent as soon as it exists. The guard sends it that way only while synthesis keeps
ahead; otherwise it holds the audio back until what the listener has in hand covers the
rest of the request:

    ahead + held  >=  (r - 1) * R  +  safety

where `ahead` is audio sent and not yet played, `held` audio made and not yet sent, `R` the
audio still to come (the voice's predicted durations, `AudioPiece.remaining`), `r` this
voice's speed on this machine and `safety` the largest piece still to come
(`AudioPiece.tail`: audio arrives piece by piece, and the listener must be able to play
on while the last one is made) plus a little jitter. For a request of D seconds at speed r
the first audio then waits about D * (r - 1), the least any schedule can wait without a
gap; with r <= 1 the audio goes out at once, as without the guard. A listener that ran
dry (the estimate was too low, or text from a language model arrives slower than speech)
is the same as one that has not started: the next audio is held by the same rule, so a
gap happens once, not once per piece.

`ahead` comes from the request's `Listener` (`engine.pacing.listener`), `r` from the
speaker's `SpeedMeter` (`engine.pacing.speed`) and, within a request, from the request's own
pace once it has made enough audio. Text that arrived in deltas and waits for the voice counts
as audio to come at the request's own seconds per character (`waiting_chars`, counted by
`engine.pacing.request.RequestPacing`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Protocol, TypeVar

from .listener import Listener

_LOGGER = logging.getLogger(__name__)

RATE_MARGIN = 1.05
"""The speed estimate is multiplied by this before it is used (a slightly pessimistic r)."""
SAFETY_S = 0.4
"""Seconds of audio kept in hand on top of the largest piece to come: what the speed
estimate does not see. The work of handing audio out (the Wyoming writer, the resampler)
and a loaded machine's scheduling delays fall between the voice's pieces; on the emulated
slow board (tests/benchmarks/test_slow_board.py, 1-2 % of a CPU) handing out the chunks
released at once took 0.47 s and, with 0.15 s here, one run in about ten heard its last
chunk 0.33 s late. On a slow board the first audio waits seconds anyway (about D·(r − 1));
this adds a quarter of a second to that wait, and nothing where the voice keeps up."""
MAX_NEED_S = 30.0
"""At most this much audio is held back: a very long text on a slow machine starts after at
most about this long and may pause later, instead of starting only after minutes."""
LIVE_MIN_S = 0.8
"""Seconds of a request's own audio (after its first piece) before its pace is trusted."""
DEFAULT_SECONDS_PER_CHAR = 0.13
"""Seconds of speech per character of Japanese text before a request has measured its own."""


class Chunk(Protocol):
    """What the guard paces: anything with a duration in seconds (`engine.AudioResult`)."""

    @property
    def duration(self) -> float: ...


C = TypeVar("C", bound=Chunk)


class PlaybackGuard:
    """One request's hold-back rule (see the module doc), deciding against `listener`. The
    request's pacing (`engine.pacing.request.RequestPacing`) reports each piece the voice
    makes (`produced`) and passes the output chunks through `pace`."""

    def __init__(self, base_rate: float | None, listener: Listener, *, label: str = "") -> None:
        self.base_rate = base_rate
        self._part_chars = 0
        self._part_audio = 0.0
        self._per_char = DEFAULT_SECONDS_PER_CHAR
        self._largest = 0.0
        self.label = label
        self.listener = listener
        """The request's listener: what the guard has sent is handed to it."""
        self.remaining = 0.0  # seconds the voice says are still to come
        self.tail = 0.0  # seconds in the largest piece still to come
        self._first: tuple[float, float] | None = None  # (compute, audio) of the first piece
        self._compute = 0.0
        self._audio = 0.0
        self.held_s = 0.0  # seconds of first audio this request held back in all
        self.holds = 0  # times it held back audio
        self._hold_started: float | None = None

    # -- what the voice reports ---------------------------------------------------------
    def begin_part(self, chars: int) -> None:
        """The voice starts on `chars` characters of the request's text."""
        self._part_chars, self._part_audio = chars, 0.0

    def produced(
        self,
        audio_s: float,
        compute_s: float,
        remaining: float | None,
        tail: float = 0.0,
        waiting_chars: int = 0,
    ) -> None:
        """The voice made `audio_s` seconds in `compute_s` seconds; `remaining` seconds are
        still to come in this call (None: unknown, taken as none), the largest piece of them
        `tail` seconds; `waiting_chars` characters of text arrived and wait for the voice."""
        if self._first is None:
            self._first = (compute_s, audio_s)
        else:
            self._compute += compute_s
            self._audio += audio_s
        self._largest = max(self._largest, audio_s)
        self._part_audio += audio_s
        own = max(0.0, remaining or 0.0)
        if remaining is not None and self._part_chars > 0:
            self._per_char = (self._part_audio + own) / self._part_chars
        waiting = waiting_chars * self._per_char
        if waiting > 0:  # text not given to the voice yet: its last piece will be whole
            tail = max(tail, self._largest)
        self.remaining = own + waiting
        self.tail = min(max(0.0, tail), self.remaining)

    def rate(self, *, stalled: bool = False) -> float | None:
        """The speed used now: the voice's measured speed, or this request's own pace where it
        is slower (a busier machine), times `RATE_MARGIN`. The request's pace counts once it
        has made `LIVE_MIN_S` after its first piece; before that, its pace with the first
        piece (start-up cost included, so pessimistic) counts only when nothing was measured
        before or the listener already ran dry (`stalled`)."""
        rates = []
        if self.base_rate is not None:
            rates.append(self.base_rate)
        if self._audio >= LIVE_MIN_S:
            rates.append(self._compute / self._audio)
        elif (self.base_rate is None or stalled) and self._first is not None:
            made = self._first[1] + self._audio
            if made > 0:
                rates.append((self._first[0] + self._compute) / made)
        return max(rates) * RATE_MARGIN if rates else None

    def needed(self, *, stalled: bool = False) -> float:
        """Seconds the listener must have in hand before it may (re)start."""
        r = self.rate(stalled=stalled)
        if r is None or r <= 1.0:
            return 0.0
        return min(MAX_NEED_S, (r - 1.0) * self.remaining + self.tail + SAFETY_S)

    # -- pacing ----------------------------------------------------------------------------
    def pace(self, chunks: Iterable[C]) -> Iterator[C]:
        """`chunks`, each as soon as the listener can play on without waiting."""
        held: list[C] = []
        held_s = 0.0
        for chunk in chunks:
            held.append(chunk)
            held_s += chunk.duration
            ahead = self.listener.ahead()
            need = self.needed(stalled=self.listener.started and ahead <= 0.0)
            if ahead + held_s < need:
                if self._hold_started is None:
                    self._hold_started = self.listener.now()
                    self.holds += 1
                continue
            yield from self._release(held, held_s)
            held, held_s = [], 0.0
        if held:
            yield from self._release(held, held_s)

    def _release(self, held: list[C], held_s: float) -> Iterator[C]:
        if self._hold_started is not None:
            waited = self.listener.now() - self._hold_started
            self.held_s += waited
            self._hold_started = None
            _LOGGER.debug(
                "%s: held audio back %.2f s (speed %.2f x real time, %.1f s still to come)",
                self.label,
                waited,
                self.rate() or 0.0,
                self.remaining,
            )
        self.listener.hand_out(held_s)
        yield from held
