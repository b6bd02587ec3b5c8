"""Streaming cost: `stream()` (windowed decoding) against `generate()` for the same text.

    python benchmarks/bench_stream.py [--texts short,medium] [--reps 3] [--no-busy]

On the full-size benchmark voice (`benchmarks/fullsize.py` builds it), in one process, for
each text it alternates, `--reps` times:

- `generate`         — whole-sentence decoding (what `Speaker.generate` does);
- `stream`           — the engine's streaming path as it is now (`Speaker.stream`);
- `stream-before`    — the streaming path as it was before staged decoding: every window
  decoded through the whole decoder with the full receptive field (13 latent frames each
  side) recomputed, window sizes just in time for playback (no minimum growth).

It prints time to first audio (TTFA; for `generate` that is the whole call), wall time and
CPU time of this process (all threads: the work done, which other processes on a shared
CPU do not inflate), each as a ratio to `generate` in the same round (medians over rounds),
first on the machine as it is ("idle"), then with one core busy (a child process spinning
in a loop for the whole measurement). The stream's target is ≤ 1.15× `generate`.
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import OPTIONS, TEXTS, VOICE_NAME  # noqa: E402


def _spin() -> None:
    """Keep one core busy until killed."""
    x = 0
    while True:
        x += 1


class _WholeReceptiveField:
    """The voice's synthesizer without `staged`: windows are decoded through the whole
    decoder with the full receptive field (the streaming path before staged decoding)."""

    def __init__(self, synth: Any) -> None:
        self._synth = synth

    def __getattr__(self, name: str) -> Any:
        if name == "staged":
            raise AttributeError(name)
        return getattr(self._synth, name)


def _timed(run: Callable[[], Iterator[Any]]) -> dict[str, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    first = None
    for _ in run():
        if first is None:
            first = time.perf_counter() - t0
    wall = time.perf_counter() - t0
    return {
        "ttfa": first if first is not None else wall,
        "wall": wall,
        "cpu": time.process_time() - c0,
    }


class CpuClock:
    """A pacing clock (`engine.pacing.Clock`, given to the speaker): this process's CPU time
    over the decoder's threads, i.e. the clock of the same process with its cores to itself.
    On a shared, loaded machine (where decoding is slower than real time in wall-clock terms,
    so windows grow fast) it makes the window sizes those of an idle machine (decoding faster
    than real time: windows sized just in time for playback); the listener the windows are
    sized for plays on the same clock."""

    def __init__(self, threads: int) -> None:
        self.threads = max(1, threads)

    def now(self) -> float:
        return time.process_time() / self.threads


def measure(speaker: Any, texts: list[str], reps: int, label: str) -> None:
    from engine.synth.windowed import StreamingPlans

    voice = speaker.voice
    now_synth, now_plans = voice.synth, voice.window_plans
    before_plans = StreamingPlans(
        first=dataclasses.replace(now_plans.first, min_growth=1.0),
        later=dataclasses.replace(now_plans.later, min_growth=1.0),
    )

    def stream_before() -> Iterator[Any]:
        voice.synth, voice.window_plans = _WholeReceptiveField(now_synth), before_plans
        try:
            yield from speaker.stream(text, **OPTIONS)
        finally:
            voice.synth, voice.window_plans = now_synth, now_plans

    variants: dict[str, Callable[[], Iterator[Any]]] = {
        "generate": lambda: iter([speaker.generate(text, **OPTIONS)]),
        "stream": lambda: speaker.stream(text, **OPTIONS),
        "stream-before": stream_before,
    }
    load = os.getloadavg()[0]
    print(f"\n## {label} (load average {load:.1f} at start, {os.cpu_count()} CPUs)")
    print("| text | variant | TTFA s | wall s | CPU s | TTFA / gen | wall / gen | CPU / gen |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for key in texts:
        text = TEXTS[key]
        rows: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
        for _ in range(reps):
            for name, run in variants.items():
                rows[name].append(_timed(run))
        gen = rows["generate"]
        for name in variants:
            med = {m: statistics.median(r[m] for r in rows[name]) for m in ("ttfa", "wall", "cpu")}
            ratio = {
                m: statistics.median(r[m] / g[m] for r, g in zip(rows[name], gen, strict=True))
                for m in med
            }
            print(
                f"| {key} | {name} | {med['ttfa']:.2f} | {med['wall']:.2f} | {med['cpu']:.2f} "
                f"| {ratio['ttfa']:.2f} | {ratio['wall']:.2f} | {ratio['cpu']:.2f} |",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--texts", default="short,medium", help="comma-separated keys of common.TEXTS")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-busy", action="store_true", help="skip the one-core-busy measurement")
    ap.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="playback clock of the window schedule: wall (real) or cpu (idle-"
        "equivalent on a shared machine, see CpuClock)",
    )
    args = ap.parse_args()

    import fullsize

    root = fullsize.build()
    from engine import TTS

    tts = TTS(device="cpu", bert_source=str(root))
    tts.load(VOICE_NAME, source=str(root))
    tts.prepare()
    speaker = tts.speakers[VOICE_NAME]
    texts = [t.strip() for t in args.texts.split(",") if t.strip()]
    for key in texts:  # warm-up: every shape path once
        speaker.generate(TEXTS[key], **OPTIONS)
        for _ in speaker.stream(TEXTS[key], **OPTIONS):
            pass
    if args.clock == "cpu":
        from engine.options import EngineOptions

        speaker.clock = CpuClock(EngineOptions().intra_op_threads)
        print("(window schedule: playback clock = CPU time / threads, see CpuClock)")
    measure(speaker, texts, args.reps, "idle")
    if not args.no_busy:
        busy = multiprocessing.Process(target=_spin, daemon=True)
        busy.start()
        try:
            time.sleep(0.5)
            measure(speaker, texts, args.reps, "one core busy")
        finally:
            busy.terminate()
            busy.join()


if __name__ == "__main__":
    main()
