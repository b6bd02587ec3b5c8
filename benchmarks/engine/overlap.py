"""Overlap across sentences: serial against overlapped rendering of a 4-sentence text.

On the full-size benchmark voice (random weights of the real JP-Extra shapes: the timings
are a real voice's, the audio is not speech), for each precision it streams one
4-sentence text (`Speaker.stream`) in these variants, `--reps` alternating rounds:

- `serial t2`: every ONNX Runtime session with 2 intra-op threads (the baseline);
- `overlap t2/t2`: the next sentence's BERT and front graph on a background thread
  (`EngineOptions.overlap`), the same sessions;
- `overlap t2/t1`: as above, BERT and front graph from 1-thread sessions;
- `serial t1`, `overlap t1/t1`: every session with 1 thread.

The playback guard is off (its wait would hide the render times). Time to first audio,
wall and CPU time of this process, each as a ratio to `serial t2` in the same round, idle
and with one core busy. Target: wall time ≤ 0.85× serial on 2 cores.
"""

from __future__ import annotations

import argparse
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from benchmarks.lib import CACHE
from benchmarks.lib.report import Report
from benchmarks.lib.stats import alternate, busy_core, medians, ratios, timed
from benchmarks.lib.voices import OPTIONS, SMALL_VOICE, VOICE_NAME

RESULT = "overlap"
TEXT = (
    "はい、キッチンの電気をつけました。玄関のドアは施錠されています。"
    "今夜は雨が降る予報なので、窓を閉めておきますね。ほかに何かお手伝いできることはありますか？"
)
"""Four sentences, about 11 s of audio on the benchmark voice."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--precisions", default="fp32,int8")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--no-busy", action="store_true", help="skip the one-core-busy rounds")


def _load(quick: bool, precision: str, threads: int) -> Any:
    from benchmarks.lib.voices import fullsize_root, small_root
    from engine import TTS, EngineOptions

    root, name = (small_root(), SMALL_VOICE) if quick else (fullsize_root(), VOICE_NAME)
    tts = TTS(
        device="cpu",
        bert_source=str(root),
        cache_dir=CACHE / "ours-cache",
        options=EngineOptions(threads=threads, precision=precision),
    )
    tts.load(name, source=str(root))
    tts.prepare(warmup=False)
    return tts.speakers[name]


@contextmanager
def _variant(two: Any, one: Any, overlap: bool, front_from_one: bool) -> Iterator[None]:
    """`two`'s voice with overlap on or off; with `front_from_one`, its BERT and front
    graph session taken from `one` (the 1-thread voice) meanwhile."""
    voice = two.voice
    saved = voice.overlap, voice.bert, voice.synth._synth
    voice.overlap = overlap
    if front_from_one:
        voice.bert, voice.synth._synth = one.voice.bert, one.voice.synth._synth
    try:
        yield
    finally:
        voice.overlap, voice.bert, voice.synth._synth = saved


def _variants(two: Any, one: Any) -> dict[str, Callable[[], dict[str, float]]]:
    def stream(speaker: Any, overlap: bool, front_from_one: bool = False) -> Callable:
        def render() -> Iterator[Any]:
            with _variant(speaker, one, overlap, front_from_one):
                yield from speaker.stream(TEXT, guard=False, **OPTIONS, seed=1)

        return lambda: timed(render)

    return {
        "serial t2": stream(two, False),
        "overlap t2/t2": stream(two, True),
        "overlap t2/t1": stream(two, True, True),
        "serial t1": stream(one, False),
        "overlap t1/t1": stream(one, True),
    }


def run(args: argparse.Namespace) -> Report:
    precisions = ["fp32"] if args.quick else [p.strip() for p in args.precisions.split(",")]
    reps = 1 if args.quick else args.reps
    report = Report("Overlap across sentences")
    report.note(
        f"Text of 4 sentences, `Speaker.stream`, {reps} rounds, medians; ratios to `serial t2` "
        "in the same round."
    )
    for precision in precisions:
        two, one = _load(args.quick, precision, 2), _load(args.quick, precision, 1)
        pcm = sum(len(c.data) for c in two.stream(TEXT, guard=False, **OPTIONS, seed=1))
        report.note(f"### {precision} ({pcm / two.sample_rate:.1f} s of audio)")
        for busy in (False,) if args.no_busy or args.quick else (False, True):
            variants = _variants(two, one)
            with busy_core(busy):
                for v in variants.values():  # warm-up: every shape once
                    v()
                runs = alternate(variants, reps)
            rows = []
            for name, rs in runs.items():
                m, r = medians(rs), ratios(rs, runs["serial t2"])
                rows.append(
                    [name, *(f"{m[k]:.2f}" for k in ("ttfa", "wall", "cpu"))]
                    + [f"{r[k]:.2f}" for k in ("ttfa", "wall", "cpu")]
                )
            report.note(f"{precision}, {'one core busy' if busy else 'idle'}:")
            report.table(
                ["variant", "TTFA s", "wall s", "CPU s"]
                + ["TTFA / serial", "wall / serial", "CPU / serial"],
                rows,
            )
        del two, one
        gc.collect()
    return report
