"""An AivisHub `.aivmx` is built by the one voice builder, int8 included: under
`precision="auto"`, the server's way (`quantize_in_background`) serves both speakers of a
two-speaker file at once in fp32 with one int8 upgrade pending for the file (listed under
each speaker's name). The library's way (nothing in the background): `auto` on a fresh cache
runs fp32 at once and says on stderr that int8 is not made yet and how to make it;
`precision="int8"` makes the graphs and gates them before `prepare()` returns, its progress
on stderr; then `auto` takes them.

The file's decoder is as wide as `auto` quantizes (`AUTO_MIN_CHANNELS`; narrower test
voices stay fp32 under `auto`), its other layers model_small's, random weights: what is
shown is the path, not an int8 speed-up (the library's half runs the shipped calibration
set, ~1-3 minutes here).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engine import TTS, EngineOptions
from engine.int8.background import BackgroundInt8
from engine.int8.measure import SPEED_FILE
from engine.int8.plan import AUTO_MIN_CHANNELS
from engine.int8.recipe import (
    CALIBRATION_FILE,
    DECODER_FILE,
    HELDOUT_FILE,
    REPORT_FILE,
    STAMP_FILE,
    read_sentences,
)
from tests.helpers.aivm import (
    BERT_WIDTH,
    Speaker,
    Spec,
    export_aivis_onnx,
    small_model,
    write_aivmx,
)

pytestmark = pytest.mark.timeout(1200)

TEXT = "こんにちは。今日は良い天気ですね。"
WAIT_S = 900  # bound on events (the quantization takes seconds to minutes, by load)


@pytest.fixture(scope="module")
def wide_aivmx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("aivm-wide")
    model, cfg, vectors = small_model(
        n_speakers=2, bert_channels=BERT_WIDTH, seed=5, decoder_channels=AUTO_MIN_CHANNELS
    )
    graph = export_aivis_onnx(model, root / "wide.onnx")
    spec = Spec(
        "Wide Duo",
        [Speaker("Ann", 0, {"Neutral": 0, "Happy": 1}), Speaker("Ben", 1, {"Neutral": 0})],
        creators=["Test Creator"],
    )
    return write_aivmx(graph, root / "wide.aivmx", cfg, vectors, spec)


def _tts(
    layout_root: Path,
    cache: Path,
    aivmx: Path,
    background: BackgroundInt8 | None,
    precision: str = "auto",
) -> TTS:
    tts = TTS(
        "cpu",
        cache_dir=cache,
        bert_source=str(layout_root),
        options=EngineOptions(threads=1, precision=precision),
        background=background,
    )
    return tts.load("ann", source=f"{aivmx}#speaker=0").load("ben", source=f"{aivmx}#speaker=1")


class _Hold:
    """A progress hook that holds the background work at its first line until `open`."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.open = threading.Event()

    def __call__(self, line: str) -> None:
        if not self.reached.is_set():
            self.reached.set()
            assert self.open.wait(WAIT_S), "the test never let the work go on"


@contextlib.contextmanager
def _opened(hold: _Hold) -> Iterator[None]:
    """Lets the held work go on when the block ends, passed or failed (before `close`)."""
    try:
        yield
    finally:
        hold.open.set()


def _int8_dirs(cache: Path) -> list[Path]:
    """Folders of finished int8 graphs under `cache` (a stamp is written last)."""
    return sorted(stamp.parent for stamp in cache.rglob(STAMP_FILE))


def test_the_server_serves_an_aivmx_at_once_with_int8_pending(
    layout_root: Path, wide_aivmx: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    hold = _Hold()
    worker = BackgroundInt8(
        niceness=0,
        calibration=read_sentences(CALIBRATION_FILE)[:4],
        heldout=read_sentences(HELDOUT_FILE)[:1],
        progress=hold,
    )
    with _tts(layout_root, tmp_path, wide_aivmx, worker).prepare() as tts, _opened(hold):
        assert hold.reached.wait(WAIT_S)  # the work has begun, held at its first step
        upgrades = tts.int8_upgrades
        assert set(upgrades) == {"ann", "ben"}
        assert upgrades["ann"] is upgrades["ben"]  # one file: one job, both switch together
        assert upgrades["ann"].state == "making" and not upgrades["ann"].done.is_set()
        for name in ("ann", "ben"):
            speaker = tts.speakers[name]
            assert speaker.precision == "fp32"
            audio = speaker.generate(TEXT, seed=2)
            assert audio.duration > 0.2 and np.abs(audio.data).max() > 0
        for name in ("ann", "ben"):
            assert f"Voice {name} ready, runs fp32" in caplog.text
        assert caplog.text.count("int8 graphs are being made in the background") == 2
        # the two speakers share one set of sessions (each pins its speaker id on them)
        synths = [tts.speakers[n].voice.synth.inner for n in ("ann", "ben")]
        assert synths[0] is synths[1]
    assert upgrades["ann"].done.is_set()  # closed: finished or cancelled, joined
    assert not worker.running


def test_the_library_takes_what_is_made_and_int8_asked_for_is_made_in_prepare(
    layout_root: Path,
    wide_aivmx: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # auto on a fresh cache: fp32 at once, nothing made, one line on stderr saying so
    with _tts(layout_root, tmp_path, wide_aivmx, None).prepare() as tts:
        assert tts.int8_upgrades == {} and _int8_dirs(tmp_path) == []
        for name in ("ann", "ben"):
            assert tts.speakers[name].precision == "fp32"
            assert "int8 not made yet" in tts.speakers[name].precision_reason
    err = capsys.readouterr().err
    assert "fp32 for now, int8 not made yet" in err  # on stderr, logging not set up for it
    assert 'TTS(precision="int8")' in err and "wyoming-hayakoe quantize" in err
    assert "fp32's time" in err  # what int8 gains on this kind of CPU

    # int8 asked for: made, gated, before prepare() returns; its progress on stderr
    with _tts(layout_root, tmp_path, wide_aivmx, None, "int8").prepare() as tts:
        assert tts.int8_upgrades == {}  # nothing left for later
        made = _int8_dirs(tmp_path)
        assert len(made) == 1, made  # one set of graphs for the file's two speakers
        assert (made[0] / DECODER_FILE).is_file()
        report = json.loads((made[0] / REPORT_FILE).read_text("utf-8"))
        assert report["sentences"] and "snr_db_min" in report  # gated against fp32
        assert not (made[0] / SPEED_FILE).exists()  # nothing measured: int8 was asked for
        for name in ("ann", "ben"):
            assert tts.speakers[name].precision == "int8"
            assert tts.speakers[name].generate(TEXT, seed=2).duration > 0.2
    err = capsys.readouterr().err
    assert "making int8 graphs once" in err
    for step in ("1/4 calibration latents", "2/4", "3/4", "4/4 fidelity gate"):
        assert step in err, step

    # auto again on that cache: takes the graphs where their gate passed, measuring nothing
    with _tts(layout_root, tmp_path, wide_aivmx, None).prepare() as tts:
        passed = report["passed"]
        for name in ("ann", "ben"):
            assert tts.speakers[name].precision == ("int8" if passed else "fp32")
        assert tts.speakers["ann"].precision == tts.speakers["ben"].precision
    assert not (made[0] / SPEED_FILE).exists()
    assert "measuring which" not in capsys.readouterr().err
