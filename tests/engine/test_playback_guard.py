"""The playback guard (`engine.playback`): on a simulated clock, a voice slower than speech
plays without gaps with the guard and with gaps without it, and the first audio waits close
to the least any schedule could; a fast voice is never held. Then the same through a real
`Speaker` with a voice that takes real time."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pytest

from engine import Speaker
from engine.neural.progress import RenderProgress
from engine.playback import RATE_MARGIN, SAFETY_S, PlaybackGuard, SpeedMeter
from engine.synth.windowed import WindowPlan
from engine.voice_backend import AudioPiece, SynthesisOptions


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


@dataclass
class Chunk:
    duration: float


def listen(emits: Sequence[float], durations: Sequence[float]) -> tuple[int, float]:
    """(gaps, silent seconds) of a listener that plays from the first chunk in real time."""
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
    """Pieces made at `rate` seconds per second of audio on a fake clock; emit times."""
    clock = FakeClock()
    pacer = PlaybackGuard(base, now=clock)
    total = sum(pieces)

    def produce() -> Iterator[Chunk]:
        made = 0.0
        for i, d in enumerate(pieces):
            clock.t += rate * d
            made += d
            pacer.produced(d, rate * d, total - made, max(pieces[i + 1 :], default=0.0))
            yield Chunk(d)

    emits: list[float] = []
    durations: list[float] = []
    source = pacer.pace(produce()) if guard else produce()
    for chunk in source:
        emits.append(clock.t)
        durations.append(chunk.duration)
    return emits, durations, pacer


PIECES = [0.28, 0.56, 1.1, 0.8, 0.28, 0.56, 1.1, 1.2, 0.3, 0.5]  # ~6.7 s, windows growing


@pytest.mark.parametrize("rate", [1.3, 1.6, 2.0])
def test_slow_voice_plays_without_gaps_and_waits_near_the_minimum(rate: float) -> None:
    emits, durations, _ = simulate(rate, PIECES, guard=False, base=rate)
    gaps_off, silent_off = listen(emits, durations)
    assert gaps_off >= 3 and silent_off > 0.5  # what a listener hears today

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


def test_fast_voice_is_never_held() -> None:
    emits, _, pacer = simulate(0.5, PIECES, guard=True, base=0.5)
    assert emits[0] == pytest.approx(0.5 * PIECES[0])  # as soon as it is made
    assert pacer.holds == 0


def test_a_voice_slower_than_measured_is_caught_by_its_own_pace() -> None:
    # measured 0.9 (fast enough) at warm-up, but the machine got busier: 1.6 now
    emits, durations, _ = simulate(1.6, PIECES * 2, guard=True, base=0.9)
    gaps, silent = listen(emits, durations)
    # the first piece goes out at once (0.9 says fast enough); once the request's own pace
    # shows otherwise the audio is held once, so the listener waits once, not per piece
    assert gaps <= 1
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


# ---------------------------------------------------------------- through a Speaker ---


class SlowVoice:
    """Pieces of `piece_s` seconds, each taking `rate` times as long to make (real time)."""

    name = "slow"
    sample_rate = 16000
    styles = ["Neutral"]
    description = "slow test voice"
    attribution_name = attribution_url = ""
    version = None
    sentence_pause = None

    def __init__(self, rate: float, pieces: int, piece_s: float = 0.1) -> None:
        self.rate, self.pieces, self.piece_s = rate, pieces, piece_s

    def render(self, sentences: Sequence[str], options: SynthesisOptions) -> Iterator[AudioPiece]:
        n = round(self.piece_s * self.sample_rate)
        for k in range(self.pieces):
            time.sleep(self.rate * self.piece_s)
            left = (self.pieces - k - 1) * self.piece_s
            tail = self.piece_s if left else 0.0
            yield AudioPiece(np.full(n, 0.1, np.float32), 0, k == self.pieces - 1, left, tail)


def _arrivals(speaker: Speaker, **kw: object) -> tuple[list[float], list[float]]:
    emits, durations = [], []
    for chunk in speaker.stream("テスト。", **kw):  # type: ignore[arg-type]
        emits.append(time.perf_counter())
        durations.append(chunk.duration)
    return emits, durations


def test_speaker_holds_a_slow_stream_once_and_learns_the_speed() -> None:
    speaker = Speaker(SlowVoice(rate=1.5, pieces=12), rewrite=False)
    assert speaker.real_time_factor is None
    _arrivals(speaker, guard=False)  # teaches the meter
    measured = speaker.real_time_factor
    assert measured is not None and measured >= 1.5  # sleeps never return early
    start = time.perf_counter()
    emits, durations = _arrivals(speaker)
    gaps, silent = listen(emits, durations)
    assert sum(durations) == pytest.approx(1.2)
    # the first audio waited for most of what the voice needed beyond real time
    assert emits[0] - start >= 1.2 * (1.5 - 1) * 0.8
    # nothing but scheduling noise afterwards (the machine may be busy: 50 ms allowed)
    assert silent < 0.05


def test_speaker_guard_off_sends_at_once() -> None:
    speaker = Speaker(SlowVoice(rate=1.5, pieces=8), rewrite=False, playback_guard=False)
    _arrivals(speaker)
    start = time.perf_counter()
    emits, durations = _arrivals(speaker)
    assert emits[0] - start < 0.15 * 3  # the first piece (0.15 s) plus scheduling slack
    assert listen(emits, durations)[1] > 0.1  # and the listener hears the gaps


def test_generate_is_never_held() -> None:
    speaker = Speaker(SlowVoice(rate=1.5, pieces=4), rewrite=False)
    done = threading.Event()
    audio = speaker.generate("テスト。")
    done.set()
    assert audio.duration == pytest.approx(0.4)


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

    def render(self, sentences: Sequence[str], options: SynthesisOptions) -> Iterator[AudioPiece]:
        inner = SlowVoice(self.rate, self.pieces * len(sentences), self.piece_s)
        yield from inner.render(sentences, options)


async def test_text_that_arrived_and_waits_counts_as_audio_to_come() -> None:
    # a language model faster than speech: three sentences arrive almost at once, but the
    # first is rendered alone; the guard must count the two waiting behind it
    speaker = Speaker(PerSentenceVoice(rate=2.0, pieces=8), rewrite=False)
    async for _ in speaker.astream("テストです。", guard=False):  # teaches the meter
        pass

    async def deltas():  # type: ignore[no-untyped-def]
        for sentence in ["一つ目の文です。", "二つ目の文です。", "三つ目の文です。"]:
            yield sentence

    start = time.perf_counter()
    emits, durations = [], []
    async for chunk in speaker.astream(deltas(), sentence_silence=0.0):
        emits.append(time.perf_counter())
        durations.append(chunk.duration)
    gaps, silent = listen(emits, durations)
    assert sum(durations) == pytest.approx(2.4, abs=0.05)  # three render calls, no pauses
    # held for all three sentences, not for the first alone (0.8 s at 2x: 0.8 s)
    assert emits[0] - start >= 2.4 * (2.0 - 1) * 0.8
    assert silent < 0.05
