"""Streaming cost: `stream()` (windowed decoding) against `generate()` for the same text.

On the full-size voice (random weights of the real shapes), per text, `--reps` alternating
rounds of `generate` (whole sentences: the baseline), `stream` (`Speaker.stream`) and
`stream-before` (as before staged decoding: each window through the whole decoder, its
receptive field of 13 latent frames each side recomputed, sized just in time, no minimum
growth). Time to first audio (`generate`: the whole call), wall and process CPU time, each
as a ratio to `generate` in the same round. Target: `stream` ≤ 1.15× `generate`.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterator
from typing import Any

from benchmarks.engine.common import Variants, add_rounds, load_speaker, ratio_tables
from benchmarks.lib.report import Report
from benchmarks.lib.stats import timed
from benchmarks.lib.voices import OPTIONS, TEXTS

RESULT = None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--texts", default="short,medium", help="comma-separated keys of TEXTS")
    add_rounds(p)


class _WholeReceptiveField:
    """The voice's synthesizer without `staged`: windows decoded through the whole decoder."""

    def __init__(self, synth: Any) -> None:
        self._synth = synth

    def __getattr__(self, name: str) -> Any:
        if name == "staged":
            raise AttributeError(name)
        return getattr(self._synth, name)


def _variants(speaker: Any, text: str) -> Variants:
    from engine.synth.windowed import StreamingPlans

    voice = speaker.voice
    synth, plans = voice.synth, voice.window_plans
    before = StreamingPlans(
        first=dataclasses.replace(plans.first, min_growth=1.0),
        later=dataclasses.replace(plans.later, min_growth=1.0),
    )

    def stream_before() -> Iterator[Any]:
        voice.synth, voice.window_plans = _WholeReceptiveField(synth), before
        try:
            yield from speaker.stream(text, **OPTIONS)
        finally:
            voice.synth, voice.window_plans = synth, plans

    return {
        "generate": lambda: timed(lambda: [speaker.generate(text, **OPTIONS)]),
        "stream": lambda: timed(lambda: speaker.stream(text, **OPTIONS)),
        "stream-before": lambda: timed(stream_before),
    }


def run(args: argparse.Namespace) -> Report:
    speaker = load_speaker(args.quick)
    keys = ["short"] if args.quick else [t.strip() for t in args.texts.split(",") if t.strip()]
    report = Report("`stream()` against `generate()`")
    ratio_tables(report, args, {k: _variants(speaker, TEXTS[k]) for k in keys}, "generate", "text")
    return report
