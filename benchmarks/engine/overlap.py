"""Overlap across sentences: serial against overlapped rendering of a 4-sentence text.

On the full-size voice (random weights of the real JP-Extra shapes: a real voice's timings,
audio that is not speech), per precision, `Speaker.stream` with the playback guard off (its
wait would hide the render times), `--reps` alternating rounds of `serial t2` (every ONNX
Runtime session with 2 intra-op threads: the baseline), `overlap t2/t2` (the next sentence's
BERT and front graph on a background thread), `overlap t2/t1` (those two from 1-thread
sessions), `serial t1`, `overlap t1/t1`. Time to first audio, wall and process CPU time,
each as a ratio to `serial t2` in the same round. Target: wall ≤ 0.85× serial on 2 cores.
"""

from __future__ import annotations

import argparse
import gc
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from benchmarks.engine.common import Variants, add_rounds, load_speaker, ratio_tables
from benchmarks.lib.report import Report
from benchmarks.lib.stats import Figures, timed
from benchmarks.lib.voices import OPTIONS

RESULT = "overlap"
TEXT = (
    "はい、キッチンの電気をつけました。玄関のドアは施錠されています。"
    "今夜は雨が降る予報なので、窓を閉めておきますね。ほかに何かお手伝いできることはありますか？"
)
"""Four sentences, about 11 s of audio on the benchmark voice."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--precisions", default="fp32,int8")
    add_rounds(p)


def _variants(two: Any, one: Any) -> Variants:
    """`two` (2-thread sessions) or `one` streaming, with `front`'s BERT and front graph."""

    def stream(speaker: Any, overlap: bool, front: Any = None) -> Callable[[], Figures]:
        def render() -> Iterator[Any]:
            voice, source = speaker.voice, (front or speaker).voice
            saved = voice.overlap, voice.bert, voice.synth._synth
            voice.overlap, voice.bert = overlap, source.bert
            voice.synth._synth = source.synth._synth
            try:
                yield from speaker.stream(TEXT, guard=False, **OPTIONS, seed=1)
            finally:
                voice.overlap, voice.bert, voice.synth._synth = saved

        return lambda: timed(render)

    return {
        "serial t2": stream(two, False),
        "overlap t2/t2": stream(two, True),
        "overlap t2/t1": stream(two, True, one),
        "serial t1": stream(one, False),
        "overlap t1/t1": stream(one, True),
    }


def run(args: argparse.Namespace) -> Report:
    from engine import EngineOptions
    from engine.options import Precision

    report = Report("Overlap across sentences")
    precisions = ["fp32"] if args.quick else [p.strip() for p in args.precisions.split(",")]
    for precision in precisions:
        options = partial(EngineOptions, precision=Precision(precision))
        two, one = (load_speaker(args.quick, options(threads=threads)) for threads in (2, 1))
        pcm = sum(len(c.data) for c in two.stream(TEXT, guard=False, **OPTIONS, seed=1))
        report.note(f"### {precision} ({pcm / two.sample_rate:.1f} s of audio)")
        ratio_tables(report, args, {precision: _variants(two, one)}, "serial t2")
        del two, one
        gc.collect()
    return report
