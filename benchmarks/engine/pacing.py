"""How streams are paced, as a trace that does not depend on the machine's speed: run it
before and after a change to pacing (`engine/pacing/`, the windowed decoder) and diff the
JSON (`--out PREFIX` writes PREFIX.json; `--quick`: two scenarios).

The tests' small ONNX voice (random weights) streams one three-sentence text in several
scenarios on a simulated clock (`tests.helpers.sim_clock`, given to the `Speaker`): only the
synthesizer's work moves it, at a set cost per latent frame for the front graph and for the
decoder (fast: decoding faster than real time; slow: slower; front-slow: the front graph
makes the request slower than speech while the decoder alone keeps up), with the playback
guard on or off, text whole or in deltas, with or without lead silence. Overlap is off (a
background thread would move the clock at its own moments). For each scenario the trace
holds every chunk (simulated time after the request began, seconds, sha1 of its samples),
a hash of all the audio, the decoder's windows per sentence, the speaker's pacing report and
the real-time listener's gaps. The figures depend on the voice's random weights and on the
cost model, not on this machine; the audio hashes on ONNX Runtime's arithmetic here.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
from typing import TYPE_CHECKING, Any, cast

from benchmarks.lib.report import Report

if TYPE_CHECKING:
    from engine.bert.features import BertBackend

RESULT = None

TEXT = (
    "はい、わかりました。明日の朝は七時にアラームを鳴らして、天気もお知らせしますね。"
    "では、おやすみなさい。"
)
DELTAS = [
    "はい、わかり",
    "ました。明日の朝は七時に",
    "アラームを鳴らして、天気も",
    "お知らせしますね。では、",
    "おやすみなさい。",
]
WARM_UP = "おはようございます。今日もいい天気ですね。"

SCENARIOS: dict[str, dict[str, Any]] = {
    "fast": {"decode": 0.5, "front": 0.1},
    "fast-off": {"decode": 0.5, "front": 0.1, "guard": False},
    "slow": {"decode": 2.0, "front": 0.3},
    "slow-cold": {"decode": 2.0, "front": 0.3, "warm": False},
    "front-slow": {"decode": 0.6, "front": 1.2},
    "fast-deltas": {"decode": 0.5, "front": 0.1, "deltas": True},
    "slow-deltas": {"decode": 1.8, "front": 0.3, "deltas": True},
    "fast-lead": {"decode": 0.5, "front": 0.1, "lead": 0.3},
    "slow-lead": {"decode": 2.0, "front": 0.3, "lead": 0.3},
}
"""Costs in simulated seconds per second of audio: the front graph (per latent frame of its
output) and the decoder (per latent frame of input, context included)."""


class _Windows(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if msg.startswith("sentence decoded in windows"):
            self.lines.append(msg.removeprefix("sentence decoded in windows "))


def _voice(clock: Any, decode: float, front: float) -> Any:
    """The small voice with its front graph and decoder stages moving `clock`."""
    from engine import EngineOptions
    from engine.neural.loader import load_neural_voice
    from tests.helpers.voices import FakeBert, shared_small_root

    voice = load_neural_voice(
        "small",
        shared_small_root(),
        bert=cast("BertBackend", FakeBert()),
        options=EngineOptions(threads=1, overlap=False),
    )
    synth: Any = voice.synth  # the split ONNX synthesizer: its latent and staged decoder
    frame_s = synth.hop_length / voice.sample_rate
    latent, staged = synth.latent, synth.staged

    def timed_latent(*args: Any) -> Any:
        out = latent(*args)
        clock.advance(front * out.frames * frame_s)
        return out

    def timed_staged(lat: Any, z: Any = None) -> Any:
        dec = staged(lat, z)
        per_frame = 1  # input samples of a stage per latent frame
        for stage in dec.stages:

            def run(x: Any, run: Any = stage.run, per_frame: int = per_frame) -> Any:
                y = run(x)
                clock.advance(decode * frame_s * x.shape[2] / per_frame / len(dec.stages))
                return y

            object.__setattr__(stage, "run", run)  # a frozen dataclass: the stand-in's cost
            per_frame *= stage.shape.rate
        return dec

    synth.latent, synth.staged = timed_latent, timed_staged
    return voice


def _gaps(chunks: list[list[Any]]) -> tuple[int, float]:
    gaps, silent, play_to = 0, 0.0, chunks[0][0]
    for t, d, _ in chunks:
        if t > play_to + 1e-9:
            gaps, silent, play_to = gaps + 1, silent + t - play_to, t
        play_to += d
    return gaps, round(silent, 6)


def scenario(
    decode: float,
    front: float,
    *,
    guard: bool = True,
    warm: bool = True,
    deltas: bool = False,
    lead: float = 0.0,
) -> dict[str, Any]:
    import numpy as np

    from engine import Speaker
    from engine.output import OutputOptions
    from tests.helpers.sim_clock import SimulatedClock

    clock = SimulatedClock()
    speaker = Speaker(_voice(clock, decode, front), rewrite=False, clock=clock)
    if warm:
        speaker.generate(WARM_UP, seed=1)
    windows = _Windows()
    log = logging.getLogger("engine.synth.windowed")
    log.addHandler(windows)
    log.setLevel(logging.DEBUG)
    try:
        start = clock.now()
        chunks: list[list[Any]] = []
        whole = hashlib.sha1()
        output = OutputOptions(lead_silence=lead) if lead else None
        for chunk in speaker.stream(DELTAS if deltas else TEXT, seed=7, guard=guard, output=output):
            pcm = np.asarray(chunk.data).tobytes()
            whole.update(pcm)
            digest = hashlib.sha1(pcm).hexdigest()[:12]
            chunks.append([round(clock.now() - start, 9), round(chunk.duration, 9), digest])
    finally:
        log.removeHandler(windows)
    report = speaker.last_pacing
    return {
        "audio": whole.hexdigest()[:16],
        "gaps": _gaps(chunks),
        "windows": windows.lines,
        "report": None if report is None else {k: v for k, v in vars(report).items()},
        "chunks": chunks,
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> Report:
    names = list(SCENARIOS)[:2] if args.quick else list(SCENARIOS)
    trace = {name: scenario(**SCENARIOS[name]) for name in names}
    report = Report("Pacing trace (simulated clock, the tests' small voice)")
    rows = []
    for name, one in trace.items():
        first = one["chunks"][0][0] if one["chunks"] else None
        rows.append((name, one["audio"], first, one["gaps"][0], one["gaps"][1]))
    report.table(["scenario", "audio hash", "first audio (s)", "gaps", "silence (s)"], rows)
    report.data["trace"] = trace
    return report
