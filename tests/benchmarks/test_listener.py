"""The benchmarks' real-time listener: `benchmarks.lib.listener.ListenerClock` on hand-made
arrival schedules, and `benchmarks.lib.wyoming.listen` against a real server on loopback
(embedded voice)."""

from __future__ import annotations

import pytest

from benchmarks.lib import listener
from benchmarks.lib import wyoming as wyoming_client
from wyoming_hayakoe.client import WyomingClient

RATE = 1000  # one sample per millisecond keeps the schedules readable


def test_chunks_in_time_make_no_gap() -> None:
    clock = listener.ListenerClock(start=10.0)
    for i in range(5):  # 100 ms of audio every 50 ms, from 0.3 s after the request
        assert clock.feed(10.3 + 0.05 * i, 100, RATE) == 0.0
    assert clock.first_audio_s == pytest.approx(0.3)
    assert clock.gaps == [] and clock.noise_count == 0
    assert clock.audio_s == pytest.approx(0.5) and clock.chunks == 5
    assert clock.heard_until_s == pytest.approx(0.8)
    assert clock.gapless_start_s == pytest.approx(0.3)  # in time: the first arrival


def test_a_late_chunk_is_a_gap_and_playback_resumes_at_its_arrival() -> None:
    clock = listener.ListenerClock()
    clock.feed(1.0, 500, RATE)  # plays 1.0 .. 1.5
    assert clock.feed(2.0, 500, RATE) == pytest.approx(0.5)  # silent 1.5 .. 2.0
    assert clock.feed(2.2, 500, RATE) == 0.0  # queued: plays 2.5 .. 3.0
    assert clock.gaps == [listener.Gap(at_s=pytest.approx(1.5), seconds=pytest.approx(0.5))]
    assert clock.gap_count == 1 and clock.gap_s == pytest.approx(0.5)
    assert clock.heard_until_s == pytest.approx(3.0)
    # Started at 1.5 instead of 1.0, nothing would have waited: chunk 2 is due at 2.0.
    assert clock.gapless_start_s == pytest.approx(1.5)


def test_waits_under_the_noise_floor_are_counted_apart() -> None:
    clock = listener.ListenerClock(min_gap=0.02)
    clock.feed(0.0, 100, RATE)  # plays until 0.1
    clock.feed(0.11, 100, RATE)  # 10 ms late: noise; plays until 0.21
    clock.feed(0.24, 100, RATE)  # 30 ms late: a gap
    assert clock.noise_count == 1 and clock.noise_s == pytest.approx(0.01)
    assert [g.seconds for g in clock.gaps] == [pytest.approx(0.03)]
    assert clock.heard_until_s == pytest.approx(0.34)  # the player waited for both
    zero = listener.ListenerClock(min_gap=0.0)
    zero.feed(0.0, 100, RATE)
    zero.feed(0.11, 100, RATE)
    assert zero.gap_count == 1 and zero.noise_count == 0


def test_empty_chunks_start_nothing_and_bad_input_is_refused() -> None:
    clock = listener.ListenerClock()
    assert clock.feed(0.5, 0, RATE) == 0.0
    assert clock.first_audio_s is None and clock.heard_until_s == 0.0 and clock.chunks == 0
    clock.feed(1.0, 100, RATE)
    with pytest.raises(ValueError, match="before the previous"):
        clock.feed(0.9, 100, RATE)
    with pytest.raises(ValueError, match="sample rate"):
        clock.feed(2.0, 100, 0)


TEXT = "こんにちは。今日は一日中いい天気になるそうですので、洗濯物を外に干しておきますね。"


async def test_listen_one_shot_and_paced_stream_against_a_real_server(start_server) -> None:
    server = await start_server()
    whole = await WyomingClient(f"tcp://127.0.0.1:{server.port}").speak(TEXT)
    once = await wyoming_client.listen("127.0.0.1", server.port, TEXT, None, streamed=False)
    assert once.rate == whole.rate
    assert once.clock.audio_s == pytest.approx(whole.seconds)
    assert 0 < once.first_audio_s <= once.total_s
    # 20 characters/s: the first sentence is there after 0.3 s, the rest 2 s later, so the
    # first audio comes before the text is complete even on a machine shared many ways.
    pace = wyoming_client.Pace(tokens_per_s=10.0, chars_per_token=2)
    deltas = -(-len(TEXT) // 2)
    heard = await wyoming_client.listen(
        "127.0.0.1", server.port, TEXT, None, streamed=True, pace=pace
    )
    # The text took as long to send as the pace says, and audio was read while it was sent:
    # the first sentence is spoken before the rest of the text has arrived.
    assert heard.text_sent_s >= (deltas - 1) / pace.tokens_per_s
    assert heard.first_audio_s < heard.text_sent_s
    assert heard.clock.audio_s > 0.5 and heard.total_s >= heard.text_sent_s
    figures = heard.summary()
    assert figures["gaps"] == heard.clock.gap_count and figures["audio_s"] == heard.clock.audio_s
