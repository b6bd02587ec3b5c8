"""Overlap across sentences (`EngineOptions.overlap`, `engine.neural.overlap.Prefetch`).

`Prefetch` on its own: order, the one-ahead bound, errors, closing. Then a real ONNX voice
(model_small exported to hayakoe's layout, run by ONNX Runtime; a stand-in BERT): with
overlap on, the front graph of later sentences runs on the background thread, the audio and
the playback guard's figures are bit-identical to the serial path for the same seed, an
early close leaves no thread and starts no further work, and an error in the background
work reaches the caller.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from engine import EngineOptions
from engine.neural.overlap import Prefetch
from engine.synth.windowed import StreamingPlans, WindowPlan
from engine.voice_backend import SynthesisOptions

WAIT_S = 30.0  # bound on event waits (never reached when the code is right)

TEXT = (
    "今日は朝から良い天気だったので、公園まで歩きました。"
    "池のまわりをのんびりと散歩しました。"
    "帰りにパン屋さんに寄りました。"
    "とても楽しい一日でした。"
)
SENTENCES = [s + "。" for s in TEXT.split("。") if s]


def _ahead_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.endswith("-ahead")]


# ------------------------------------------------------------------------ Prefetch ---


def test_prefetch_keeps_order_runs_elsewhere_and_stays_one_ahead() -> None:
    started = [threading.Event() for _ in range(4)]
    threads: list[int] = []

    def items() -> Iterator[int]:
        for k in range(4):
            started[k].set()
            threads.append(threading.get_ident())
            yield k * 10

    pre = Prefetch(items(), ahead=1, name="test-ahead")
    try:
        assert started[0].wait(WAIT_S)
        # Item 0 is ready and not taken: item 1 must not start.
        assert not started[1].wait(0.2)
        assert pre.take() == 0
        assert started[1].wait(WAIT_S)
        assert not started[2].wait(0.2)
        assert [pre.take() for _ in range(3)] == [10, 20, 30]
        with pytest.raises(StopIteration):
            pre.take()
    finally:
        pre.close()
    assert set(threads) == {threads[0]} and threads[0] != threading.get_ident()
    assert not pre.alive


def test_prefetch_raises_the_background_error_to_the_caller() -> None:
    def items() -> Iterator[int]:
        yield 1
        raise KeyError("sentence 2 broke")

    with Prefetch(items(), name="test-ahead") as pre:
        assert pre.take() == 1
        with pytest.raises(KeyError, match="sentence 2 broke"):
            pre.take()
    assert not pre.alive


def test_prefetch_close_waits_for_the_item_in_hand_and_starts_no_more() -> None:
    in_item = threading.Event()
    release = threading.Event()
    closed = threading.Event()
    made: list[int] = []

    def items() -> Iterator[int]:
        try:
            yield 0
            in_item.set()
            assert release.wait(WAIT_S)
            made.append(1)
            yield 1
            made.append(2)  # never: closed before item 2
            yield 2
        finally:
            closed.set()

    pre = Prefetch(items(), name="test-ahead")
    assert pre.take() == 0
    assert in_item.wait(WAIT_S)
    closer = threading.Thread(target=pre.close)
    closer.start()
    assert pre.alive  # still computing item 1: close waits for it
    release.set()
    closer.join(WAIT_S)
    assert not closer.is_alive() and not pre.alive
    assert made == [1] and closed.is_set()  # the generator was closed on its thread


def test_prefetch_refuses_zero_ahead() -> None:
    with pytest.raises(ValueError, match="ahead"):
        Prefetch(iter([1]), ahead=0)


# ------------------------------------------------------------- a real ONNX voice ---

FIXED = WindowPlan(first=24, growth=2.0, largest=512, min_tail=16, adaptive=False)
"""Window sizes that do not depend on timing (adaptive ones follow the measured speed)."""


@pytest.fixture(scope="module")
def voices() -> tuple[Any, Any]:
    from engine.neural.loader import load_neural_voice
    from tests.helpers.voices import FakeBert, shared_small_root

    root = shared_small_root()
    serial = load_neural_voice(
        "small", root, bert=FakeBert(), options=EngineOptions(threads=1, overlap=False)
    )
    overlapped = load_neural_voice(
        "small", root, bert=FakeBert(), options=EngineOptions(threads=1, overlap=True)
    )
    assert not serial.overlap and overlapped.overlap
    for v in (serial, overlapped):
        v.window_plans = StreamingPlans(first=FIXED, later=FIXED)
    return serial, overlapped


class Recorder:
    """Wraps a voice's `synth.latent`: records the thread of each call, can fail one."""

    def __init__(self, voice: Any, fail_at: int | None = None) -> None:
        self.voice = voice
        self.inner = voice.synth.latent
        self.threads: list[str] = []
        self.fail_at = fail_at

    def __call__(self, *args: Any, **kw: Any) -> Any:
        self.threads.append(threading.current_thread().name)
        if self.fail_at is not None and len(self.threads) - 1 == self.fail_at:
            raise RuntimeError("front graph failed on purpose")
        return self.inner(*args, **kw)


def _pieces(voice: Any, options: SynthesisOptions) -> list[Any]:
    return list(voice.render(SENTENCES, options))


@pytest.mark.parametrize("whole", [False, True], ids=["windows", "whole-sentences"])
def test_overlapped_audio_is_bit_identical(voices, monkeypatch, whole: bool) -> None:
    serial, overlapped = voices
    options = SynthesisOptions(seed=7, whole_sentences=whole)
    rec = Recorder(overlapped)
    monkeypatch.setattr(overlapped.synth, "latent", rec)
    a = _pieces(serial, options)
    b = _pieces(overlapped, options)
    assert len(SENTENCES) == 4
    assert [p.sentence for p in a] == [p.sentence for p in b]
    assert len(a) >= 4 + (0 if whole else 1)
    for pa, pb in zip(a, b, strict=True):
        assert pa.samples.dtype == pb.samples.dtype == np.float32
        np.testing.assert_array_equal(pa.samples, pb.samples)
        assert (pa.final, pa.remaining, pa.tail) == (pb.final, pb.remaining, pb.tail)
    # Sentence 0's front graph ran in the caller's thread, sentences 1-3's on the other.
    assert rec.threads == ["MainThread"] + ["small-ahead"] * 3
    assert not _ahead_threads()
    # Another seed gives other audio (the comparison above can fail).
    c = _pieces(overlapped, dataclasses.replace(options, seed=8))
    assert not np.array_equal(
        np.concatenate([p.samples for p in c]), np.concatenate([p.samples for p in b])
    )


def test_single_sentence_starts_no_thread(voices, monkeypatch) -> None:
    _, overlapped = voices
    rec = Recorder(overlapped)
    monkeypatch.setattr(overlapped.synth, "latent", rec)
    pieces = list(overlapped.render(SENTENCES[:1], SynthesisOptions(seed=1)))
    assert pieces and rec.threads == ["MainThread"]


def test_closing_early_stops_the_background_work(voices, monkeypatch) -> None:
    _, overlapped = voices
    rec = Recorder(overlapped)
    monkeypatch.setattr(overlapped.synth, "latent", rec)
    gen = overlapped.render(SENTENCES, SynthesisOptions(seed=3))
    first = next(gen)
    assert first.sentence == 0 and len(first.samples)
    gen.close()  # as a client that hangs up after the first chunk
    assert not _ahead_threads()
    # Sentence 0 in the caller's thread, at most sentence 1 ahead: nothing after it.
    assert len(rec.threads) <= 2


def test_closing_a_speaker_stream_early_leaves_no_thread(voices) -> None:
    from engine.speaker import Speaker

    _, overlapped = voices
    speaker = Speaker(overlapped, rewrite=False)
    stream = speaker.stream(TEXT, seed=2)
    next(stream)
    stream.close()
    assert not _ahead_threads()
    assert not speaker.lock.locked()


def test_background_error_reaches_the_caller(voices, monkeypatch) -> None:
    _, overlapped = voices
    rec = Recorder(overlapped, fail_at=2)  # sentence 2's front graph, on the thread
    monkeypatch.setattr(overlapped.synth, "latent", rec)
    got: list[int] = []
    with pytest.raises(RuntimeError, match="front graph failed on purpose"):
        for piece in overlapped.render(SENTENCES, SynthesisOptions(seed=3)):
            got.append(piece.sentence)
    assert rec.threads[2] == "small-ahead"
    assert set(got) == {0, 1}  # the sentences before it were all heard
    assert not _ahead_threads()


def test_overlap_setting_flows_from_the_environment_defaults() -> None:
    assert EngineOptions().overlap is True  # measured best on 2 cores (bench_overlap.py)
    assert EngineOptions.from_env({}).overlap is True
    assert EngineOptions.from_env({"WYOMING_HAYAKOE_OVERLAP": "0"}).overlap is False


def test_overlap_flag_flows_into_engine_options() -> None:
    from wyoming_hayakoe.settings import parse_settings

    assert parse_settings([], environ={}).engine.overlap is True
    assert parse_settings(["--no-overlap"], environ={}).engine.overlap is False
    env = {"WYOMING_HAYAKOE_OVERLAP": "0"}
    assert parse_settings([], environ=env).engine.overlap is False
    assert parse_settings(["--overlap"], environ=env).engine.overlap is True
