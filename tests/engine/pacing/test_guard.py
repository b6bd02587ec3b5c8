"""Pacing (`engine.pacing`), on a simulated clock (`tests.helpers.sim_clock`): nothing here
sleeps. A voice slower than speech plays without gaps with the playback guard and with gaps
without it, and the first audio waits close to the least any schedule could; a fast voice is
never held. The listener model counts what a real-time listener hears; the request's pacing
is the one listener the guard and the voice's decoder share. Then the same through a real
`Speaker` whose stand-in voice spends simulated time on each piece."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pytest

from engine import Speaker
from engine.neural.progress import RenderProgress
from engine.pacing import Listener, PlaybackGuard, RequestPacing, SpeedMeter
from engine.pacing.guard import RATE_MARGIN, SAFETY_S
from engine.synth.windowed import WindowPlan
from engine.voice_backend import AudioPiece, ListenerView, SynthesisOptions
from tests.helpers.sim_clock import SimulatedClock

WAIT_S = 10.0  # bound on waiting for an event set by another thread


@dataclass
class Chunk:
    duration: float


def listen(emits: Sequence[float], durations: Sequence[float]) -> tuple[int, float]:
    """(gaps, silent seconds) of a listener that plays from the first chunk in real time
    (independent of `engine.pacing.Listener`, which the tests check against it)."""
    gaps, silent = 0, 0.0
    play_to = emits[0]
    for t, d in zip(emits, durations):
        if t > play_to + 1e-9:
            gaps += 1
            silent += t - play_to
            play_to = t
        play_to += d
    return gaps, silent


def simulate(
    rate: float, pieces: Sequence[float], *, guard: bool, base: float | None
) -> tuple[list[float], list[float], PlaybackGuard]:
    """Pieces made at `rate` seconds per second of audio on a simulated clock; emit times."""
    clock = SimulatedClock()
    pacer = PlaybackGuard(base, Listener(clock))
    total = sum(pieces)

    def produce() -> Iterator[Chunk]:
        made = 0.0
        for i, d in enumerate(pieces):
            clock.advance(rate * d)
            made += d
            pacer.produced(d, rate * d, total - made, max(pieces[i + 1 :], default=0.0))
            yield Chunk(d)

    emits: list[float] = []
    durations: list[float] = []
    source = pacer.pace(produce()) if guard else produce()
    for chunk in source:
        emits.append(clock.now())
        durations.append(chunk.duration)
    return emits, durations, pacer


PIECES = [0.28, 0.56, 1.1, 0.8, 0.28, 0.56, 1.1, 1.2, 0.3, 0.5]  # ~6.7 s, windows growing


@pytest.mark.parametrize("rate", [1.3, 1.6, 2.0])
def test_slow_voice_plays_without_gaps_and_waits_near_the_minimum(rate: float) -> None:
    emits, durations, _ = simulate(rate, PIECES, guard=False, base=rate)
    gaps_off, silent_off = listen(emits, durations)
    assert gaps_off >= 3 and silent_off > 0.5  # what a listener hears without the guard

    emits, durations, pacer = simulate(rate, PIECES, guard=True, base=rate)
    assert listen(emits, durations) == (0, 0.0)
    assert durations == PIECES  # nothing lost, nothing reordered
    total = sum(PIECES)
    least = total * (rate - 1)  # D·(r−1): the least wait of any gap-free schedule
    first_made = rate * PIECES[0]
    waited = emits[0] - first_made
    assert waited >= least * 0.9
    # on top: the margin on the rate, the largest piece still to come, the jitter allowance,
    # and audio goes out only when a piece is made (up to one piece's time late)
    slack = total * (RATE_MARGIN - 1) + max(PIECES) * (1 + rate) + SAFETY_S
    assert waited <= least * RATE_MARGIN + slack
    assert pacer.holds == 1
    assert pacer.held_s == pytest.approx(emits[0] - first_made)


def test_fast_voice_is_never_held() -> None:
    emits, _, pacer = simulate(0.5, PIECES, guard=True, base=0.5)
    assert emits[0] == pytest.approx(0.5 * PIECES[0])  # as soon as it is made
    assert pacer.holds == 0 and pacer.held_s == 0.0


def test_a_voice_slower_than_measured_is_caught_by_its_own_pace() -> None:
    # measured 0.9 (fast enough) at warm-up, but the machine got busier: 1.6 now
    emits, durations, _ = simulate(1.6, PIECES * 2, guard=True, base=0.9)
    gaps, silent = listen(emits, durations)
    # the first piece goes out at once (0.9 says fast enough); once the request's own pace
    # shows otherwise the audio is held once, so the listener waits once, not per piece
    assert emits[0] == pytest.approx(1.6 * PIECES[0])
    assert gaps == 1
    emits_off, durations_off, _ = simulate(1.6, PIECES * 2, guard=False, base=0.9)
    assert listen(emits_off, durations_off)[0] > 5


def test_unknown_speed_uses_the_first_piece() -> None:
    emits, durations, pacer = simulate(1.5, PIECES, guard=True, base=None)
    assert listen(emits, durations) == (0, 0.0)
    assert pacer.holds == 1


def test_speed_meter_rises_fast_falls_slowly_per_precision() -> None:
    meter = SpeedMeter()
    assert meter.rate("int8") is None
    meter.observe("int8", 1.0, 2.0)
    assert meter.rate("int8") == pytest.approx(0.5)
    meter.observe("int8", 3.0, 2.0)  # busier: 1.5
    up = meter.rate("int8")
    assert up is not None and up > 0.5 + 0.4 * (1.5 - 0.5)
    meter.observe("int8", 1.0, 2.0)  # quieter again: 0.5
    down = meter.rate("int8")
    assert down is not None and down > up - 0.3 * (up - 0.5)
    meter.observe("int8", 1.0, 0.1)  # too little audio: all start-up cost, ignored
    assert meter.rate("int8") == down
    assert meter.rate("fp32") == down  # not measured yet: the slowest one known
    meter.observe("fp32", 3.0, 1.0)
    assert meter.rate("fp32") == 3.0 and meter.rate("int8") == down
    assert SpeedMeter().rate("int8") is None


def test_render_progress_counts_what_is_left() -> None:
    plan = WindowPlan(first=24, growth=2.0, largest=512, min_tail=16)
    progress = RenderProgress([100, 0, 50], frame_s=0.01, pause_s=0.1)
    progress.predicted(0, 600)  # 6 frames per id
    rest, tail = progress.after(0, 24, 600, (plan, 24), plan)
    # 576 frames of sentence 0, 300 estimated for sentence 2, one pause
    assert rest == pytest.approx(5.76 + 3.0 + 0.1)
    # sentence 0 continues 48, 96, 192, 240 (tail merged): its last window is the largest
    assert tail == pytest.approx(2.4)
    rest, tail = progress.after(2, 300, 300, None, None)
    assert rest == 0 and tail == 0


# ------------------------------------------------------------------ the listener ---


def test_listener_counts_queued_audio_and_each_stall_once() -> None:
    clock = SimulatedClock()
    listener = Listener(clock)
    assert listener.ahead() == 0.0 and not listener.started  # nothing handed out yet
    clock.advance(1.0)
    listener.hand_out(0.02)
    assert listener.first_at == 1.0
    clock.advance(0.06)  # the player ran dry 40 ms ago and waits
    assert listener.ahead() == 0.0
    assert listener.ahead() == 0.0  # asked again: still the same stall
    assert (listener.stalls, listener.stalled_s) == (1, pytest.approx(0.04))
    listener.hand_out(1.0)  # resumes with this piece: a full second is ahead again
    assert listener.ahead() == pytest.approx(1.0)
    clock.advance(0.25)
    assert listener.ahead() == pytest.approx(0.75) == listener.in_hand()
    clock.advance(1.0)
    listener.hand_out(0.5)  # dry again for 0.25 s: a second stall
    assert (listener.stalls, listener.stalled_s) == (2, pytest.approx(0.29))
    assert listener.handed_out == pytest.approx(1.52)


def test_listener_stalls_are_the_gaps_a_real_time_listener_hears() -> None:
    clock = SimulatedClock()
    listener = Listener(clock)
    emits, durations = [], []
    for work, seconds in [(0.3, 0.2), (0.1, 0.4), (0.6, 0.1), (0.45, 0.3), (0.05, 0.2)]:
        clock.advance(work)
        listener.hand_out(seconds)
        emits.append(clock.now())
        durations.append(seconds)
    gaps, silent = listen(emits, durations)
    assert gaps == 2
    assert (listener.stalls, listener.stalled_s) == (gaps, pytest.approx(silent))


def test_listener_says_how_long_it_has_waited_since_it_ran_dry() -> None:
    clock = SimulatedClock()
    listener = Listener(clock)
    assert listener.waiting() == 0.0  # not started
    listener.hand_out(0.3)
    clock.advance(0.2)
    assert listener.waiting() == 0.0  # still playing
    clock.advance(0.3)  # dry for 0.2 s
    assert listener.waiting() == pytest.approx(0.2)
    clock.advance(0.1)
    assert listener.waiting() == pytest.approx(0.3)  # the same wait, longer
    listener.hand_out(0.1)
    assert listener.waiting() == 0.0  # playing again


def test_request_pacing_counts_silence_heard_only_once_all_made_audio_is_out() -> None:
    clock = SimulatedClock()
    pacing = RequestPacing(clock, guard=False)
    pacing.produced(0.3, 0.01, 0.0)
    out = list(pacing.pace([Chunk(0.3)]))
    assert len(out) == 1
    clock.advance(0.45)
    assert pacing.silence_heard() == pytest.approx(0.15)
    pacing.produced(0.2, 0.01, 0.0)  # made, not yet handed out: the listener has it coming
    assert pacing.silence_heard() == 0.0


# ------------------------------------------------------------- a request's pacing ---


def test_request_pacing_counts_held_audio_in_hand() -> None:
    """What the decoder reads (`in_hand`): audio the listener has not played, and audio made
    but held back; unguarded, every chunk goes to the listener at once."""
    clock = SimulatedClock()
    pacing = RequestPacing(clock, base_rate=2.0, guard=True)
    pieces = [0.25] * 8

    def produce() -> Iterator[Chunk]:
        for k, d in enumerate(pieces):
            clock.advance(2.0 * d)
            pacing.produced(d, 2.0 * d, (len(pieces) - k - 1) * d, d if k < 7 else 0.0)
            seen.append(pacing.in_hand())
            yield Chunk(d)

    seen: list[float] = []
    out = list(pacing.pace(produce()))
    assert [c.duration for c in out] == pieces
    report = pacing.report()
    assert report.guarded and report.holds == 1 and report.held_s > 0
    # while held, everything made is in hand (0.25 s more per piece)
    held_pieces = round(report.first_audio_s / 0.5) if report.first_audio_s else 0
    assert held_pieces >= 2
    assert seen[:held_pieces] == pytest.approx([0.25 * (k + 1) for k in range(held_pieces)])
    assert report.stalls == 0 and report.audio_s == pytest.approx(2.0)

    clock2 = SimulatedClock()
    free = RequestPacing(clock2, base_rate=2.0, guard=False)
    times: list[float] = []
    for chunk in free.pace(Chunk(d) for d in [0.5, 0.5]):
        times.append(clock2.now())
        clock2.advance(0.75)
        assert chunk.duration == 0.5
    report = free.report()
    assert not report.guarded and report.holds == 0 and report.rate is None
    assert report.first_audio_s == 0.0 and report.audio_s == 1.0
    assert (report.stalls, report.stalled_s) == (1, pytest.approx(0.25))


# ---------------------------------------------------------------- through a Speaker ---


class SlowVoice:
    """Pieces of `piece_s` seconds, each taking `rate` times as long to make (simulated
    time on `clock`); records what its listener had in hand before each piece."""

    name = "slow"
    sample_rate = 16000
    styles = ["Neutral"]
    description = "slow test voice"
    attribution_name = attribution_url = ""
    version = None
    sentence_pause = None
    default_style = None

    def run_info(self) -> None:
        return None

    def identity(self) -> None:
        return None

    def __init__(
        self, clock: SimulatedClock, rate: float, pieces: int, piece_s: float = 0.1
    ) -> None:
        self.clock, self.rate, self.pieces, self.piece_s = clock, rate, pieces, piece_s
        self.in_hand: list[float] = []
        self.listeners: list[ListenerView | None] = []
        self.gate: threading.Event | None = None  # set: wait for it before the first piece

    def render(
        self,
        sentences: Sequence[str],
        options: SynthesisOptions,
        listener: ListenerView | None = None,
    ) -> Iterator[AudioPiece]:
        self.listeners.append(listener)
        if self.gate is not None:
            assert self.gate.wait(WAIT_S)
        yield from self._pieces(self.pieces, listener)

    def _pieces(self, count: int, listener: ListenerView | None) -> Iterator[AudioPiece]:
        n = round(self.piece_s * self.sample_rate)
        for k in range(count):
            if listener is not None:
                self.in_hand.append(listener.in_hand())
            self.clock.advance(self.rate * self.piece_s)
            left = (count - k - 1) * self.piece_s
            tail = self.piece_s if left else 0.0
            yield AudioPiece(np.full(n, 0.1, np.float32), 0, k == count - 1, left, tail)


def _arrivals(speaker: Speaker, clock: SimulatedClock, **kw: object) -> tuple[list, list]:
    """Emit times (simulated, relative to the request's start) and durations of a stream
    consumed as it comes (`stream` runs in this thread: a chunk is taken when released)."""
    start = clock.now()
    emits, durations = [], []
    for chunk in speaker.stream("テスト。", **kw):  # type: ignore[arg-type]
        emits.append(clock.now() - start)
        durations.append(chunk.duration)
    return emits, durations


def test_speaker_holds_a_slow_stream_once_and_learns_the_speed() -> None:
    clock = SimulatedClock()
    voice = SlowVoice(clock, rate=1.5, pieces=12)
    speaker = Speaker(voice, rewrite=False, clock=clock)
    assert speaker.real_time_factor is None
    _arrivals(speaker, clock, guard=False)  # teaches the meter
    assert speaker.real_time_factor == pytest.approx(1.5)
    emits, durations = _arrivals(speaker, clock)
    assert sum(durations) == pytest.approx(1.2)
    assert listen(emits, durations) == (0, 0.0)
    # the first audio waited for what the voice needs beyond real time, D·(r−1), plus at
    # most the margin, the safety allowance and one piece's time
    least = 1.2 * (1.5 - 1)
    assert least <= emits[0] <= least * RATE_MARGIN + SAFETY_S + 2 * 0.15
    report = speaker.last_pacing
    assert report is not None and report.guarded and report.holds == 1
    assert report.first_audio_s == pytest.approx(emits[0])
    assert report.stalls == 0 and report.audio_s == pytest.approx(1.2)
    assert report.rate == pytest.approx(1.5 * RATE_MARGIN)


def test_speaker_guard_off_sends_at_once() -> None:
    clock = SimulatedClock()
    voice = SlowVoice(clock, rate=1.5, pieces=8)
    speaker = Speaker(voice, rewrite=False, playback_guard=False, clock=clock)
    _arrivals(speaker, clock)
    emits, durations = _arrivals(speaker, clock)
    assert emits[0] == pytest.approx(0.15)  # as soon as the first piece is made
    gaps, silent = listen(emits, durations)
    assert (gaps, silent) == (7, pytest.approx(7 * 0.05))  # and the listener hears the gaps
    report = speaker.last_pacing
    assert report is not None and not report.guarded and report.holds == 0
    assert (report.stalls, report.stalled_s) == (gaps, pytest.approx(silent))


def test_speaker_gives_its_voice_the_listener_the_guard_decides_against() -> None:
    """The voice's decoder and the guard read one listener: while the guard holds audio
    back, what it holds is in the listener's hand; once it lets go, what is left of what
    went out."""
    clock = SimulatedClock()
    voice = SlowVoice(clock, rate=1.5, pieces=12)
    speaker = Speaker(voice, rewrite=False, clock=clock)
    _arrivals(speaker, clock, guard=False)
    voice.in_hand.clear()
    emits, _ = _arrivals(speaker, clock)
    held = round(emits[0] / 0.15)  # pieces made before the first went out
    assert 2 <= held < 12
    assert voice.in_hand[:held] == pytest.approx([0.1 * k for k in range(held)])
    # after the release: what went out, less what played meanwhile (0.05 s net per piece)
    sent = 0.1 * held
    assert voice.in_hand[held : held + 3] == pytest.approx([sent, sent - 0.05, sent - 0.1])
    assert isinstance(voice.listeners[-1], RequestPacing)


def test_generate_is_never_held(caplog: pytest.LogCaptureFixture) -> None:
    clock = SimulatedClock()
    speaker = Speaker(SlowVoice(clock, rate=1.5, pieces=12), rewrite=False, clock=clock)
    _arrivals(speaker, clock, guard=False)  # measured: slower than real time
    caplog.set_level(logging.INFO, logger="engine")
    streamed = _arrivals(speaker, clock)  # a stream of this voice is held back ...
    assert speaker.last_pacing is not None and speaker.last_pacing.holds == 1
    assert streamed[0][0] > 0.15
    caplog.clear()
    start = clock.now()
    audio = speaker.generate("テスト。")  # ... generate's audio is not
    assert audio.duration == pytest.approx(1.2)
    report = speaker.last_pacing
    assert report is not None and not report.guarded and report.holds == 0
    assert report.held_s == 0.0
    assert report.first_audio_s == pytest.approx(0.15)  # its first piece went at once
    assert clock.now() - start == pytest.approx(12 * 0.15)
    assert not [r for r in caplog.records if "held back" in r.getMessage()]


def test_embedded_voice_says_what_is_still_to_come(embedded: Speaker) -> None:
    sentences = ["今日はいい天気ですね。", "散歩に行きましょう。", "さようなら。"]
    pieces = list(embedded.voice.render(sentences, embedded.options()))
    left = [p.remaining for p in pieces]
    assert all(x is not None for x in left)
    made = [p.samples.size / embedded.sample_rate for p in pieces]
    # after the first sentence: about what the other two made (estimated from characters)
    assert left[0] == pytest.approx(made[1] + made[2], rel=0.5)
    assert left[0] > left[1] > left[2] == 0.0
    assert pieces[0].tail == pytest.approx(max(left[0] - left[1], left[1]), rel=0.5)


class PerSentenceVoice(SlowVoice):
    """`pieces` pieces per sentence (so text that waits means audio to come)."""

    def render(
        self,
        sentences: Sequence[str],
        options: SynthesisOptions,
        listener: ListenerView | None = None,
    ) -> Iterator[AudioPiece]:
        self.listeners.append(listener)
        if self.gate is not None:
            assert self.gate.wait(WAIT_S)
        yield from self._pieces(self.pieces * len(sentences), listener)


async def test_text_that_arrived_and_waits_counts_as_audio_to_come() -> None:
    # a language model faster than speech: three sentences arrive at once, but the first is
    # rendered alone; the guard must count the two waiting behind it
    clock = SimulatedClock()
    voice = PerSentenceVoice(clock, rate=2.0, pieces=8)
    speaker = Speaker(voice, rewrite=False, clock=clock)
    async for _ in speaker.astream("テストです。", guard=False):  # teaches the meter
        pass
    assert speaker.real_time_factor == pytest.approx(2.0)
    arrived = voice.gate = threading.Event()  # the voice starts once all text is here

    async def deltas() -> AsyncIterator[str]:
        for sentence in ["一つ目の文です。", "二つ目の文です。", "三つ目の文です。"]:
            yield sentence
        arrived.set()

    durations = []
    async for chunk in speaker.astream(deltas(), sentence_silence=0.0):
        durations.append(chunk.duration)
    assert sum(durations) == pytest.approx(2.4)  # three render calls, no pauses
    assert len(voice.listeners) == 4 and isinstance(voice.listeners[-1], RequestPacing)
    assert len({id(v) for v in voice.listeners[1:]}) == 1  # one listener for the request
    report = speaker.last_pacing
    assert report is not None and report.holds == 1
    # held for all three sentences, not for the first alone (0.8 s at 2x: 0.8 s)
    least = 2.4 * (2.0 - 1)
    assert report.first_audio_s is not None and report.first_audio_s >= least
    assert (report.stalls, report.stalled_s) == (0, 0.0)
