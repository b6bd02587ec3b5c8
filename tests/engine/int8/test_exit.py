"""A short-lived process that leaves while int8 graphs are being made ends cleanly.

The real lifecycle of a script or a restarted add-on: a fresh cache, `prepare` with the
background worker, one request, then the interpreter exits without calling `close` while
the worker is inside a step (calibration, quantization of the decoder, of the front graph,
the gate). Each run must exit with status 0 and no abort; each run on the same cache
resumes what the one before finished, and the last one completes the graphs.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.int8.recipe import STAMP_FILE
from tests.helpers.paths import REPO_ROOT
from tests.helpers.program import program_env
from tests.helpers.voices import LAYOUT_VOICE

SCRIPT = textwrap.dedent(
    """
    import sys, threading
    from engine import TTS, EngineOptions
    from engine.int8.background import BackgroundInt8
    from engine.int8.recipe import CALIBRATION_FILE, HELDOUT_FILE, read_sentences

    root, cache, voice, stop = sys.argv[1:5]
    reached = threading.Event()
    lines = []

    def progress(line):
        lines.append(line)
        if stop in line:
            reached.set()

    worker = BackgroundInt8(
        niceness=0,
        calibration=read_sentences(CALIBRATION_FILE)[:8],
        heldout=read_sentences(HELDOUT_FILE)[:2],
        progress=progress,
    )
    tts = TTS(
        "cpu", cache_dir=cache, bert_source=root,
        options=EngineOptions(threads=1, precision="int8"), background=worker,
    ).load(voice, source=root).prepare()
    audio = tts.speakers[voice].generate("こんにちは。")
    print("samples", audio.data.size, flush=True)
    assert reached.wait(600), lines
    up = tts.int8_upgrades[voice]
    print("state", up.state, flush=True)
    print("lines", *lines, sep="\\n", flush=True)
    # no close(): leaving the interpreter must stop the work by itself
    """
)

STOPS = [
    ("1/4 calibration latents", "making"),
    ("2/4 quantizing the decoder", "making"),
    ("3/4 quantizing the flow", "making"),
    ("4/4 fidelity gate", "making"),
    ("SNR min", None),  # the report: the graphs are complete
]


@pytest.mark.timeout(1800)
def test_exit_during_each_step_is_clean_and_the_next_run_resumes(
    layout_root: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    outputs = []
    for stop, state in STOPS:
        run = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(layout_root), str(cache), LAYOUT_VOICE, stop],
            cwd=REPO_ROOT,
            env=program_env(),
            capture_output=True,
            text=True,
            timeout=900,
        )
        outputs.append(run.stdout)
        assert run.returncode == 0, (stop, run.returncode, run.stderr[-3000:])
        assert "terminate called" not in run.stderr and "Fatal Python" not in run.stderr
        assert "Error in sys.excepthook" not in run.stderr
        assert "samples" in run.stdout
        if state is not None:
            assert f"state {state}" in run.stdout, run.stdout
    # each run took over what the ones before had finished (the first stopped before any
    # latent was kept): the latents, then the int8 decoder, then the front graph
    for later in outputs[2:]:
        assert "from an earlier run" in later, later
    assert "2/4 quantizing the decoder" not in outputs[3] + outputs[4]
    assert "3/4 quantizing the flow" not in outputs[4]
    assert list(cache.glob(f"int8/*/{STAMP_FILE}")), outputs[-1]
    assert not list(cache.glob("int8/*/.work"))
