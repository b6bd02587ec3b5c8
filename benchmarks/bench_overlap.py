"""Overlap across sentences: serial against overlapped rendering of a 4-sentence text.

    python benchmarks/bench_overlap.py [--precisions fp32,int8] [--reps 3] [--no-busy]

On the full-size benchmark voice (`benchmarks/fullsize.py`; random weights of the real
JP-Extra shapes: the timings are those of a real voice, the audio is not speech), for each
precision it streams one 4-sentence text (`Speaker.stream`, the path every Home Assistant
request takes) in these variants, in turn, `--reps` rounds:

- `serial t2`       — today's path, every ONNX Runtime session with 2 intra-op threads (the
  baseline of every ratio);
- `overlap t2/t2`   — the next sentence's BERT and front graph on a background thread
  (`EngineOptions.overlap`), the same sessions: decoder 2 threads, BERT/front 2 threads;
- `overlap t2/t1`   — as above, but BERT and front graph from sessions with 1 thread (the
  background work takes one core, the decoder keeps two);
- `serial t1`       — every session with 1 thread;
- `overlap t1/t1`   — overlapped, every session with 1 thread (one core each).

The playback guard is off (its wait would hide the render times). It prints time to first
audio (TTFA), wall time and CPU time of this process, each also as a ratio to `serial t2` in
the same round (medians over rounds), first on the machine as it is ("idle"), then with one
core busy (a child process spinning for the whole measurement).
Target: wall time ≤ 0.85× serial on 2 cores. Writes benchmarks/results/overlap.md.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import OPTIONS, VOICE_NAME  # noqa: E402
from harness import OURS_CACHE, RESULTS, table_head, table_row  # noqa: E402

TEXT = (
    "はい、キッチンの電気をつけました。玄関のドアは施錠されています。"
    "今夜は雨が降る予報なので、窓を閉めておきますね。ほかに何かお手伝いできることはありますか？"
)
"""Four sentences, about 11 s of audio on the benchmark voice."""


def _spin() -> None:
    """Keep one core busy until killed."""
    x = 0
    while True:
        x += 1


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


def _load(root: Path, precision: str, threads: int) -> Any:
    from engine import TTS, EngineOptions

    tts = TTS(
        device="cpu",
        bert_source=str(root),
        cache_dir=OURS_CACHE,
        options=EngineOptions(threads=threads, precision=precision),
    )
    tts.load(VOICE_NAME, source=str(root))
    tts.prepare(warmup=False)
    return tts.speakers[VOICE_NAME]


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


def measure(two: Any, one: Any, reps: int, label: str, out: list[str]) -> dict[str, Any]:
    def stream(speaker: Any, overlap: bool, front_from_one: bool = False) -> Callable:
        def run() -> Iterator[Any]:
            with _variant(speaker if speaker is two else one, one, overlap, front_from_one):
                yield from speaker.stream(TEXT, guard=False, **OPTIONS, seed=1)

        return run

    variants: dict[str, Callable[[], Iterator[Any]]] = {
        "serial t2": stream(two, False),
        "overlap t2/t2": stream(two, True),
        "overlap t2/t1": stream(two, True, True),
        "serial t1": stream(one, False),
        "overlap t1/t1": stream(one, True),
    }
    for run in variants.values():  # warm-up: every shape once
        _timed(run)
    load = os.getloadavg()[0]
    lines = [
        f"\n### {label} (load average {load:.1f} at start, {os.cpu_count()} CPUs)\n",
        *table_head(
            [
                "variant",
                "TTFA s",
                "wall s",
                "CPU s",
                "TTFA / serial",
                "wall / serial",
                "CPU / serial",
            ],
            "lrrrrrr",
        ),
    ]
    rows: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for _ in range(reps):
        for name, run in variants.items():
            rows[name].append(_timed(run))
    base = rows["serial t2"]
    summary: dict[str, Any] = {}
    for name in variants:
        med = {m: statistics.median(r[m] for r in rows[name]) for m in ("ttfa", "wall", "cpu")}
        ratio = {
            m: statistics.median(r[m] / b[m] for r, b in zip(rows[name], base, strict=True))
            for m in med
        }
        summary[name] = {"median": med, "ratio": ratio}
        lines.append(
            table_row(
                [
                    name,
                    f"{med['ttfa']:.2f}",
                    f"{med['wall']:.2f}",
                    f"{med['cpu']:.2f}",
                    f"{ratio['ttfa']:.2f}",
                    f"{ratio['wall']:.2f}",
                    f"{ratio['cpu']:.2f}",
                ]
            )
        )
    for line in lines:
        print(line, flush=True)
    out.extend(lines)
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--precisions", default="fp32,int8")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-busy", action="store_true", help="skip the one-core-busy measurement")
    ap.add_argument("--out", default=str(RESULTS / "overlap.md"))
    args = ap.parse_args()

    import fullsize

    root = fullsize.build()
    out = [
        "# Overlap across sentences (benchmarks/bench_overlap.py)",
        "",
        f"Full-size random-weight voice, text of 4 sentences, `Speaker.stream`, "
        f"{args.reps} rounds, medians; ratios to `serial t2` in the same round. "
        f"{os.cpu_count()} CPUs, shared with other work (load average below).",
    ]
    for precision in [p.strip() for p in args.precisions.split(",") if p.strip()]:
        two = _load(root, precision, 2)
        one = _load(root, precision, 1)
        audio_s = (
            sum(len(c.data) for c in two.stream(TEXT, guard=False, **OPTIONS, seed=1))
            / two.sample_rate
        )
        head = f"\n## {precision} ({audio_s:.1f} s of audio)"
        print(head, flush=True)
        out.append(head)
        measure(two, one, args.reps, f"{precision}, idle", out)
        if not args.no_busy:
            busy = multiprocessing.Process(target=_spin, daemon=True)
            busy.start()
            try:
                time.sleep(0.5)
                measure(two, one, args.reps, f"{precision}, one core busy", out)
            finally:
                busy.terminate()
                busy.join()
        del two, one
        gc.collect()
    Path(args.out).write_text("\n".join(out) + "\n", encoding="utf-8")
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
