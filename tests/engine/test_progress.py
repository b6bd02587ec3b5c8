"""`engine.progress`: long work visible on stderr without `logging` set up — a line per step
in a log, a bar redrawn in place on a terminal, nothing with ``progress=False`` — and the
one line `auto` says for a voice whose int8 graphs are not made yet."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from engine import TTS, EngineOptions
from engine.int8.kernels import int8_gain
from engine.progress import StderrProgress
from tests.helpers.voices import LAYOUT_VOICE


def test_a_log_gets_one_line_per_message_with_the_time_taken() -> None:
    out = io.StringIO()
    progress = StderrProgress(out, tty=False)
    progress("voice: 1/4 calibration latents")
    progress("voice: calibration latents 12/64")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("] voice: 1/4 calibration latents") and lines[0].startswith("[")
    assert " s] " in lines[1] and "\r" not in out.getvalue()


def test_a_terminal_gets_one_bar_per_counted_step() -> None:
    out = io.StringIO()
    progress = StderrProgress(out, tty=True)
    progress("voice: making int8 graphs once")
    for done in (1, 32, 64):
        progress(f"voice: calibration latents {done}/64")
    progress("voice: held-out sentences 1/3")
    text = out.getvalue()
    lines = text.split("\n")
    assert lines[0] == "voice: making int8 graphs once"
    # the three counts redraw one line; it ends when the count is complete
    redraws = lines[1].split("\r\x1b[K")
    assert redraws[0] == "" and len(redraws) == 4
    assert redraws[-1] == f"voice: calibration latents [{'#' * 24}] 64/64"
    assert (
        redraws[2].startswith("voice: calibration latents [############-") and "32/64" in redraws[2]
    )
    # another step begins a bar of its own, left open while counting
    assert lines[2] == f"\r\x1b[Kvoice: held-out sentences [{'#' * 8}{'-' * 16}] 1/3"


def test_a_closed_stream_is_not_an_error() -> None:
    out = io.StringIO()
    out.close()
    StderrProgress(out, tty=False)("still working")  # nothing raised


def test_the_gain_quoted_follows_the_kind_of_cpu() -> None:
    vnni = int8_gain("x86_64", frozenset({"avx2", "avx512_vnni"}))
    avx2 = int8_gain("x86_64", frozenset({"avx2"}))
    arm = int8_gain("aarch64", None)
    assert "with VNNI" in vnni and "0.53×" in vnni
    assert "without VNNI" in avx2 and "7-bit" in avx2
    assert "ARM" in arm and "estimated" in arm
    assert len({vnni, avx2, arm, int8_gain("riscv64", None)}) == 4


@pytest.fixture
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test voice treated as wide enough for int8 (`auto`'s rule for real voices)."""
    import engine.int8.plan as plan

    monkeypatch.setattr(plan, "AUTO_MIN_CHANNELS", 0)


@pytest.mark.parametrize("progress", [True, False])
def test_auto_on_a_fresh_cache_runs_fp32_at_once_and_says_how_to_make_int8(
    wide: None,
    layout_root: Path,
    tmp_path: Path,
    progress: bool,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="engine.int8.plan")
    tts = TTS(
        "cpu",
        cache_dir=tmp_path,
        bert_source=str(layout_root),
        options=EngineOptions(threads=1),
        progress=progress,
    )
    with tts.load(LAYOUT_VOICE, source=str(layout_root)).prepare() as ready:
        speaker = ready.speakers[LAYOUT_VOICE]
        assert speaker.precision == "fp32" and ready.int8_upgrades == {}
    assert not list(tmp_path.rglob("int8.stamp.json")) and not list(tmp_path.rglob("*.npz"))
    err = capsys.readouterr().err
    said = f"Voice {LAYOUT_VOICE}: fp32 for now, int8 not made yet"
    if progress:
        assert said in err and "wyoming-hayakoe quantize SOURCE --name" in err
        assert said not in caplog.text  # stderr, not the log (DEBUG only)
    else:
        assert said not in err
        assert said in caplog.text  # `logging`, at INFO
