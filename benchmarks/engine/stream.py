"""Streaming cost: `stream()` (windowed decoding) against `generate()` for the same text.

On the full-size benchmark voice (random weights of the real shapes), in one process, for
each text, `--reps` alternating rounds of:

- `generate`: whole-sentence decoding (what `Speaker.generate` does; the baseline);
- `stream`: the engine's streaming path as it is now (`Speaker.stream`);
- `stream-before`: the streaming path as it was before staged decoding: every window
  decoded through the whole decoder with the full receptive field (13 latent frames each
  side) recomputed, windows sized just in time for playback (no minimum growth).

Time to first audio (for `generate` the whole call), wall time and this process's CPU time
(all threads), each as a ratio to `generate` in the same round, idle and (unless
`--no-busy`) with one core busy. Target: `stream` ≤ 1.15× `generate`. `--clock cpu` sizes
the windows on CPU time / threads (an idle machine's schedule on a shared one).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks.lib.report import Report
from benchmarks.lib.stats import alternate, busy_core, medians, ratios, timed
from benchmarks.lib.voices import OPTIONS, SMALL_VOICE, TEXTS, VOICE_NAME

RESULT = None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--texts", default="short,medium", help="comma-separated keys of TEXTS")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--no-busy", action="store_true", help="skip the one-core-busy rounds")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall")


class _WholeReceptiveField:
    """The voice's synthesizer without `staged`: windows decoded through the whole decoder."""

    def __init__(self, synth: Any) -> None:
        self._synth = synth

    def __getattr__(self, name: str) -> Any:
        if name == "staged":
            raise AttributeError(name)
        return getattr(self._synth, name)


class CpuClock:
    """A pacing clock (`engine.pacing.Clock`): this process's CPU time over the decoder's
    threads, the clock of the same process with its cores to itself."""

    def __init__(self, threads: int) -> None:
        self.threads = max(1, threads)

    def now(self) -> float:
        return time.process_time() / self.threads


def load_speaker(quick: bool) -> Any:
    """The full-size voice (`--quick`: the tests' small one), loaded and prepared."""
    from benchmarks.lib.voices import fullsize_root, small_root
    from engine import TTS

    root, name = (small_root(), SMALL_VOICE) if quick else (fullsize_root(), VOICE_NAME)
    tts = TTS(device="cpu", bert_source=str(root))
    tts.load(name, source=str(root))
    tts.prepare()
    return tts.speakers[name]


def _variants(speaker: Any, text: str) -> dict[str, Callable[[], dict[str, float]]]:
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
    reps = 1 if args.quick else args.reps
    report = Report("`stream()` against `generate()`")
    for key in keys:  # warm-up: every shape once
        speaker.generate(TEXTS[key], **OPTIONS)
        for _ in speaker.stream(TEXTS[key], **OPTIONS):
            pass
    if args.clock == "cpu":
        from engine.options import EngineOptions

        speaker.clock = CpuClock(EngineOptions().intra_op_threads)
        report.note("Window schedule on CPU time / threads (`--clock cpu`).")
    for busy in (False,) if args.no_busy or args.quick else (False, True):
        rows = []
        with busy_core(busy):
            for key in keys:
                runs = alternate(_variants(speaker, TEXTS[key]), reps)
                for name, rs in runs.items():
                    m, r = medians(rs), ratios(rs, runs["generate"])
                    rows.append(
                        [key, name, *(f"{m[k]:.2f}" for k in ("ttfa", "wall", "cpu"))]
                        + [f"{r[k]:.2f}" for k in ("ttfa", "wall", "cpu")]
                    )
        report.note(f"### {'one core busy' if busy else 'idle'} (medians of {reps} rounds)")
        report.table(
            ["text", "variant", "TTFA s", "wall s", "CPU s"]
            + ["TTFA / gen", "wall / gen", "CPU / gen"],
            rows,
            "ll" + "r" * 6,
        )
    return report
