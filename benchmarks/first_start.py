"""First start with no int8 graphs in the cache: how soon a voice serves, and what making its
int8 graphs in the background costs the requests served meanwhile.

    python benchmarks/first_start.py [--root benchmarks/.cache/fullsize] [--reps 3]
        [--calibration N] [--no-nice0] [--out benchmarks/results/first-start.txt]

All in one process, on the full-size random-weight voice (`fullsize.py`; weights do not
change the cost, so its figures hold for a real voice of the same shape), each phase in a
fresh int8 cache (the fp32 derived graphs are shared, so every phase starts alike):

1. fp32 alone: the medium text, `reps` times, nothing in the background (the baseline);
2. background, nice 19 (the default): `prepare()` time; the medium text while the graphs
   are made, each request followed by as long a pause (the machine half busy with requests;
   the quantization's BERT calls wait for idle moments, so back-to-back requests would stall
   it); when the voice switched; int8 requests after;
3. background, nice 0 (`--no-nice0` skips): the same, to show what the low priority buys;
4. blocking (`quantize_in_background=False`): `prepare()` time, which includes the graphs.

Figures are ratios against the baseline of the same run (the machine may be shared).
`--calibration N` uses the first N calibration sentences (all by default) in the background
phases; the blocking phase always uses all of them, so compare its time with the full set.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import OPTIONS, TEXTS, VOICE_NAME  # noqa: E402


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _tts(root: Path, cache: Path, derived: Path, **options: Any) -> Any:
    """A TTS on the benchmark voice; the cache shares `derived/` (fp32 graphs) with the
    other phases but has its own int8 folder."""
    from engine import TTS, EngineOptions

    (cache / "derived").parent.mkdir(parents=True, exist_ok=True)
    if not (cache / "derived").exists():
        (cache / "derived").symlink_to(derived, target_is_directory=True)
    worker = options.pop("background", None)
    return TTS(
        "cpu",
        cache_dir=cache,
        bert_source=str(root),
        options=EngineOptions(**options),
        background=worker,
    ).load(VOICE_NAME, source=str(root))


def _request(speaker: Any) -> tuple[float, float]:
    """(seconds, audio seconds) of one medium request."""
    t = time.perf_counter()
    audio = speaker.generate(TEXTS["medium"], **OPTIONS, seed=1)
    return time.perf_counter() - t, audio.duration


def _background(
    root: Path,
    work: Path,
    derived: Path,
    niceness: int,
    calibration: list[str] | None,
    max_wait: float,
) -> dict[str, Any]:
    from engine.background_int8 import BackgroundInt8

    worker = BackgroundInt8(threads=1, niceness=niceness, calibration=calibration)
    tts = _tts(root, work / f"nice{niceness}", derived, background=worker)
    t0 = time.perf_counter()
    tts.prepare(warmup=True)
    ready = time.perf_counter() - t0
    speaker = tts.speakers[VOICE_NAME]
    upgrade = tts.int8_upgrades[VOICE_NAME]
    during: list[float] = []
    while not upgrade.done.is_set() and time.perf_counter() - t0 < max_wait:
        seconds, audio = _request(speaker)
        if not upgrade.done.is_set():  # a request that ended after the switch is not counted
            during.append(seconds / audio)
            log(f"  nice {niceness}: request during quantization RTF {during[-1]:.2f}")
            upgrade.done.wait(seconds)  # idle as long as the request took
    switched = time.perf_counter() - t0 if upgrade.done.is_set() else None
    after = [r / a for r, a in (_request(speaker) for _ in range(3))]
    tts.close()
    return {
        "ready_s": ready,
        "switch_s": switched,
        "state": upgrade.state,
        "made_s": upgrade.seconds,
        "rtf_during": during,
        "rtf_int8": after,
        "precision": speaker.precision,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=HERE / ".cache" / "fullsize")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--calibration", type=int, default=None)
    ap.add_argument("--no-nice0", action="store_true")
    ap.add_argument("--no-blocking", action="store_true")
    ap.add_argument(
        "--max-wait",
        type=float,
        default=1800.0,
        help="seconds a background phase waits for the switch (on a machine busy with other "
        "work a nice-19 quantization may not finish)",
    )
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from engine import layout

    if not (args.root / layout.speaker_prefix(VOICE_NAME, "onnx")).is_dir():
        print(f"no benchmark voice in {args.root}: run benchmarks/fullsize.py first")
        return 2
    from engine.synth.quantize import CALIBRATION_FILE, read_sentences

    calibration = read_sentences(CALIBRATION_FILE)
    if args.calibration is not None:
        calibration = calibration[: args.calibration]
    work = Path(tempfile.mkdtemp(prefix="first-start-"))
    derived = work / "derived"
    derived.mkdir()
    results: dict[str, Any] = {"load_avg_start": os.getloadavg()}

    log("phase 1: fp32 alone")
    tts = _tts(args.root, work / "fp32", derived, precision="fp32")
    tts.prepare(warmup=True)
    base = [r / a for r, a in (_request(tts.speakers[VOICE_NAME]) for _ in range(args.reps))]
    results["rtf_fp32"] = base
    del tts

    log("phase 2: background, nice 19")
    results["nice19"] = _background(args.root, work, derived, 19, calibration, args.max_wait)
    if not args.no_nice0:
        log("phase 3: background, nice 0")
        results["nice0"] = _background(args.root, work, derived, 0, calibration, args.max_wait)
    if not args.no_blocking:
        log("phase 4: blocking")
        tts = _tts(args.root, work / "blocking", derived, quantize_in_background=False)
        t0 = time.perf_counter()
        tts.prepare(warmup=True)
        results["blocking_ready_s"] = time.perf_counter() - t0
        results["blocking_precision"] = tts.speakers[VOICE_NAME].precision
    results["load_avg_end"] = os.getloadavg()

    med = statistics.median
    b = med(base)
    lines = [
        f"first start, full-size one-style voice, calibration sentences: {len(calibration)} "
        f"(background), all (blocking); load average {results['load_avg_start'][0]:.1f} → "
        f"{results['load_avg_end'][0]:.1f}",
        f"baseline: fp32 medium request RTF {b:.2f} (median of {len(base)}, nothing in the "
        "background)",
        "| phase | prepare() s | serving from | int8 from s | requests during: n, RTF / "
        "baseline | RTF after / baseline |",
        "| --- | ---: | --- | ---: | --- | ---: |",
    ]
    for key in ("nice19", "nice0"):
        r = results.get(key)
        if r is None:
            continue
        during = r["rtf_during"]
        d = f"{len(during)}, {med(during) / b:.2f}× (max {max(during) / b:.2f}×)" if during else "0"
        switch = (
            f"{r['switch_s']:.0f} ({r['state']})"
            if r["switch_s"] is not None
            else f"not within {args.max_wait:.0f} ({r['state']})"
        )
        lines.append(
            f"| background, {key.replace('nice', 'nice ')} | {r['ready_s']:.1f} | fp32 at once | "
            f"{switch} | {d} | {r['precision']} after: {med(r['rtf_int8']) / b:.2f}× |"
        )
    if "blocking_ready_s" in results:
        lines.append(
            f"| blocking | {results['blocking_ready_s']:.1f} | "
            f"{results['blocking_precision']} after prepare | – | – | – |"
        )
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    code = main()
    from engine import int8_work_running

    if int8_work_running():  # a cancelled step still runs: no finalization (ORT may abort)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise SystemExit(code)
