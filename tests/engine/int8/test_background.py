"""int8 graphs made in the background (`engine.int8.background`): a voice with none in the
cache serves in fp32 as soon as `prepare` returns, switches to int8 between requests once
its graphs pass the gate, stays fp32 (saying why) when they fail, never switches part-way
through a request, and `close` never waits for a quantization step.

Real parts throughout: the test layout's voice and BERT through `TTS`, real ONNX Runtime
quantization into a private cache. The worker is held at its first progress line by an
event (`Gate`) where a test needs it not to have finished; calibration uses a part of the
shipped sentence set (as tests/engine/test_int8.py does) so each quantization takes seconds.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from engine import TTS, EngineOptions
from engine.int8.background import BackgroundInt8, lower_thread_priority
from engine.synth.common import NoiseSource, SynthInputs, SynthParams
from engine.int8.gate import GateThresholds, compare
from engine.int8.recipe import CALIBRATION_FILE, HELDOUT_FILE, STAMP_FILE, read_sentences
from tests.helpers.voices import LAYOUT_VOICE

CALIBRATION = read_sentences(CALIBRATION_FILE)[:10]
HELDOUT = [read_sentences(HELDOUT_FILE)[i] for i in (0, 3)]
TEXT = "こんにちは。今日は良い天気ですね。"
DELTAS = ["こんにちは。今日", "は良い天気ですね。", "また明日。"]
WAIT_S = 600  # bounds on events; a quantization takes ~10-70 s here, depending on load


class Gate:
    """A progress hook that holds the quantization at its first line until `open` is set."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.open = threading.Event()
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        self.reached.set()
        assert self.open.wait(WAIT_S), "the test never opened the gate"


def _tts(
    root: Path,
    cache: Path,
    precision: str,
    progress: Callable[[str], None] | None = None,
    calibration: list[str] = CALIBRATION,
    **options: object,
) -> TTS:
    worker = BackgroundInt8(
        niceness=0,  # the shared test machine is busy: nice 19 would only slow the test
        calibration=calibration,
        heldout=HELDOUT,
        progress=progress,
    )
    return TTS(
        "cpu",
        cache_dir=cache,
        bert_source=str(root),
        options=EngineOptions(threads=1, precision=precision, **options),
        background=worker,
    ).load(LAYOUT_VOICE, source=str(root))


def _pcm(chunks: Iterator[object]) -> np.ndarray:
    return np.concatenate([np.asarray(c.data) for c in chunks])


def test_serves_fp32_at_once_then_switches_between_requests(
    layout_root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from wyoming_hayakoe.info import InfoAnswer, VoiceCatalog

    caplog.set_level(logging.INFO)
    gate = Gate()
    tts = _tts(layout_root, tmp_path, "int8", gate)
    try:
        tts.prepare()
        speaker = tts.speakers[LAYOUT_VOICE]
        upgrade = tts.int8_upgrades[LAYOUT_VOICE]
        # prepare() returned while the quantization is held at its first step:
        assert gate.reached.wait(WAIT_S)
        assert upgrade.state == "making" and not upgrade.done.is_set()
        assert speaker.precision == "fp32"
        assert f"Voice {LAYOUT_VOICE} ready, runs fp32" in caplog.text
        info = InfoAnswer(VoiceCatalog(tts.speakers, LAYOUT_VOICE), streaming=True)
        assert info.event().data["tts"][0]["voices"][0]["description"].endswith("runs fp32")
        fp32_synth = speaker.voice.synth
        fp32_audio = speaker.generate(TEXT, seed=3).data
        fp32_stream = _pcm(speaker.stream(iter(DELTAS), seed=3))

        # A stream of text in deltas, part-way through (first sentence rendered, waiting
        # for more text, lock released) when the int8 synthesizer is ready.
        asked_more = threading.Event()
        more = threading.Event()
        chunks: list[object] = []

        def deltas() -> Iterator[str]:
            yield DELTAS[0]
            yield DELTAS[1]  # the first sentence is rendered before this is asked for
            asked_more.set()
            assert more.wait(WAIT_S)
            yield DELTAS[2]

        consumer = threading.Thread(
            target=lambda: chunks.extend(speaker.stream(deltas(), seed=3)), daemon=True
        )
        consumer.start()
        assert asked_more.wait(WAIT_S)
        gate.open.set()
        assert upgrade.ready.wait(WAIT_S), upgrade.reason
        assert upgrade.state == "switching"
        assert speaker.precision == "fp32"  # not while a request is part-way through
        more.set()
        consumer.join(WAIT_S)
        assert not consumer.is_alive()
        assert np.array_equal(_pcm(iter(chunks)), fp32_stream)  # all of it fp32

        assert upgrade.done.wait(WAIT_S)
        assert upgrade.state == "int8", upgrade.reason
        assert speaker.precision == "int8"
        assert f"Voice {LAYOUT_VOICE} switched from fp32 to int8 between requests" in caplog.text
        assert info.event().data["tts"][0]["voices"][0]["description"].endswith("runs int8")

        report = upgrade.report
        assert report is not None and report.passed
        th = report.thresholds
        assert report.snr_db_min >= th.min_snr_db and report.logmel_db_mean <= th.max_logmel_db
        int8_audio = speaker.generate(TEXT, seed=3).data
        assert int8_audio.shape != fp32_audio.shape or not np.array_equal(int8_audio, fp32_audio)

        # The synthesizer the voice switched to, against the fp32 one it replaced, on the
        # same sentence, style and noise: different audio within the gate's limits.
        int8_synth = speaker.voice.synth
        assert int8_synth is not fp32_synth and int8_synth.precision == "int8"
        from engine.text import analyze

        voice = speaker.voice
        a = analyze(HELDOUT[1]).with_blanks()
        feats = voice.bert.features([a.bert_text], [a.word2ph])[0]
        inputs = SynthInputs(
            np.asarray(a.phone_ids),
            np.asarray(a.tone_ids),
            np.asarray(a.lang_ids),
            feats,
            voice.style_vectors[1],
            0,
        )
        ref = fp32_synth.synthesize(inputs, SynthParams(), NoiseSource(5)).audio
        got = int8_synth.synthesize(inputs, SynthParams(), NoiseSource(5)).audio
        assert ref.shape == got.shape and not np.array_equal(ref, got)
        snr, logmel, mcd = compare(ref.reshape(-1), got.reshape(-1), voice.sample_rate)
        gate_th = GateThresholds()
        assert snr >= gate_th.min_snr_db and logmel <= gate_th.max_logmel_db
        assert mcd <= gate_th.max_mcd_db
    finally:
        gate.open.set()
        tts.close()


def test_gate_failure_keeps_fp32_and_logs_the_figures(
    layout_root: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import engine.int8.plan as precision

    # `auto` makes graphs for wide decoders only; treat the test voice as wide.
    monkeypatch.setattr(precision, "AUTO_MIN_CHANNELS", 0)
    caplog.set_level(logging.INFO)
    tts = _tts(layout_root, tmp_path, "auto", calibration=CALIBRATION[:4], int8_min_snr_db=500.0)
    try:
        tts.prepare()
        speaker = tts.speakers[LAYOUT_VOICE]
        upgrade = tts.int8_upgrades[LAYOUT_VOICE]
        assert speaker.precision == "fp32"
        assert upgrade.done.wait(WAIT_S)
        assert upgrade.state == "fp32", upgrade.reason
        assert speaker.precision == "fp32"
        assert upgrade.report is not None and not upgrade.report.passed
        assert speaker.generate(TEXT).data.size > 0
        line = next(r.getMessage() for r in caplog.records if "stays fp32" in r.getMessage())
        assert "failed the fidelity gate" in line
        assert "SNR min" in line and "(≥ 500)" in line and "log-mel" in line
    finally:
        tts.close()


def test_close_during_quantization_returns_at_once(layout_root: Path, tmp_path: Path) -> None:
    gate = Gate()
    tts = _tts(layout_root, tmp_path, "int8", gate)
    try:
        tts.prepare()
        upgrade = tts.int8_upgrades[LAYOUT_VOICE]
        assert gate.reached.wait(WAIT_S)  # the quantization thread is busy (held)
        assert int8_work_running()
        closer = threading.Thread(target=tts.close, daemon=True)
        closer.start()
        closer.join(10)
        assert not closer.is_alive(), "close() waited for the quantization"
        gate.open.set()  # the step ends; the next check sees the flag
        assert upgrade.done.wait(WAIT_S)
        assert upgrade.state == "cancelled"
        assert tts.speakers[LAYOUT_VOICE].precision == "fp32"
        for t in threading.enumerate():
            if t.name.startswith("int8-"):
                t.join(WAIT_S)
                assert not t.is_alive(), t.name
        assert not int8_work_running()  # a process may now exit normally
        assert not list(tmp_path.glob(f"int8/*/{STAMP_FILE}"))  # nothing half-made is used
    finally:
        gate.open.set()
        tts.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
def test_low_priority_is_the_quantization_thread_s_alone() -> None:
    seen: dict[str, int] = {}

    def lowered() -> None:
        seen["applied"] = int(lower_thread_priority(19))
        seen["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    t = threading.Thread(target=lowered)
    t.start()
    t.join(WAIT_S)
    assert seen == {"applied": 1, "nice": 19}
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before


def test_the_old_blocking_way_through_settings() -> None:
    from wyoming_hayakoe.settings import parse_settings

    assert parse_settings([], environ={}).engine.quantize_in_background
    off = parse_settings(["--no-quantize-in-background"], environ={})
    assert off.engine.quantize_in_background is False
    env = {"WYOMING_HAYAKOE_QUANTIZE_IN_BACKGROUND": "0"}
    assert parse_settings([], environ=env).engine.quantize_in_background is False
    assert parse_settings(["--quantize-in-background"], environ=env).engine.quantize_in_background
