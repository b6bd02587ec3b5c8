"""Lifecycles a user's processes go through, on the full-size random-weight voice.

    python -m benchmarks.lifecycle background [--rounds 4] [--busy]  # server: int8 behind
    python -m benchmarks.lifecycle fresh [--rounds 4] [--hayakoe]    # library: fresh vs warm
    python -m benchmarks.lifecycle cycles [--cycles 50]             # stopped at random moments
    python -m benchmarks.lifecycle all                              # the three, idle and busy

- `background`: the server's first start. One process serves the voice in fp32 while its
  int8 graphs are made behind it (`quantize_in_background`); a second process serves the
  same voice in fp32 with nothing behind it. Rounds alternate between them, and while the
  second one is timed the first is frozen (SIGSTOP), so its background work cannot run
  then. Printed: RTF with background work / RTF without (target ≤ 1.10), per round only
  while the work was running before and after the round.
- `fresh`: the library's contract. `TTS(precision="int8")` with the library's defaults on a
  fresh cache (int8 made inside `prepare()`), then a second process on the now warm cache;
  both run int8 (audio ≠ fp32 with the same seed: the SNR is printed), and their RTFs are
  compared in alternating calls (target fresh/warm ≤ 1.05). With `--hayakoe`, hayakoe 1.3.1
  on the same voice in the same run (its own venv, made from PyPI on first use).
- `cycles`: `--cycles` short-lived scripts (background int8, one request, exit at a random
  moment without `close()`) and `--cycles` server starts (`wyoming-hayakoe`, SIGTERM at a
  random moment) on one cache, each run resuming what the one before left; the cache is
  emptied whenever the graphs are complete so the next runs stop inside the work again.
  Printed: exit statuses (all must be 0), runs that resumed, completions. The small test
  voice by default (its int8 work takes seconds, so 50 cycles take minutes); `--full`
  runs it on the full-size voice.

The voices have random weights (no trained voice here): RTFs depend on shapes only, and the
int8/fp32 SNR says the graphs differ, not how a trained voice would sound.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.compare.drive import Worker, hayakoe_python
from benchmarks.compare.drive import engine_env as clean_env
from benchmarks.compare.worker import claim_stdout, memory, serve_commands
from benchmarks.lib import CACHE as BENCH_CACHE
from benchmarks.lib import REPO
from benchmarks.lib.voices import OPTIONS, TEXTS, VOICE_NAME

CACHE = BENCH_CACHE / "lifecycle"
SEED = 7


def log(msg: str) -> None:
    print(f"[lifecycle] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------ worker ---


class _LifecycleWorker:
    """One engine in a worker process; `mode` is how a user's process would make it:
    `base` (fp32, nothing behind it), `background` (the server's: int8 made behind the
    requests), `library` (`TTS(precision="int8")` with the library's defaults)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.tts: Any = None

    def prepare(self, msg: dict) -> dict:
        from engine import TTS, EngineOptions

        options = {
            "base": EngineOptions(precision="fp32"),
            "background": EngineOptions(precision="int8", quantize_in_background=True),
            "library": EngineOptions(precision="int8"),
        }[self.mode]
        t0 = time.perf_counter()
        tts = TTS(
            device="cpu", cache_dir=msg["cache_dir"], bert_source=msg["root"], options=options
        )
        for name in msg["speakers"]:
            tts.load(name, source=msg["root"])
        tts.prepare()
        self.tts = tts
        return {"prepare_s": time.perf_counter() - t0, **self.state({}), **memory()}

    def state(self, msg: dict) -> dict:
        up = self.tts.int8_upgrades.get(VOICE_NAME)
        return {
            "precision": self.tts.speakers[VOICE_NAME].precision,
            "upgrade": up.state if up is not None else None,
        }

    def generate(self, msg: dict) -> dict:
        import numpy as np

        speaker = self.tts.speakers[msg["speaker"]]
        t0 = time.perf_counter()
        audio = speaker.generate(msg["text"], **msg.get("options", OPTIONS))
        wall = time.perf_counter() - t0
        if msg.get("save"):
            np.save(msg["save"], audio.data)
        return {"wall_s": wall, "audio_s": len(audio.data) / audio.sr, **self.state({})}

    def handlers(self) -> dict:
        return {"prepare": self.prepare, "generate": self.generate, "state": self.state}


def _worker(mode: str) -> None:
    out = claim_stdout()
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    serve_commands(_LifecycleWorker(mode).handlers(), out)


def _start(mode: str, label: str) -> Worker:
    return Worker(
        label, [sys.executable, "-m", "benchmarks.lifecycle", "worker", mode], clean_env()
    )


# ------------------------------------------------------------------------------ common ---


@contextlib.contextmanager
def _load(busy: bool) -> Iterator[None]:
    """One core kept busy (a Pi running Home Assistant is never idle) while inside."""
    proc = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) if busy else None
    try:
        yield
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _rtf(replies: list[dict]) -> float:
    return sum(r["wall_s"] for r in replies) / max(sum(r["audio_s"] for r in replies), 1e-9)


def _calls(worker: Worker, texts: list[str], **extra: Any) -> list[dict]:
    opts = {**OPTIONS, "seed": SEED}
    return [
        worker.call("generate", speaker=VOICE_NAME, text=t, options=opts, **extra) for t in texts
    ]


def _fullsize() -> Path:
    from benchmarks.lib.voices import fullsize_root

    return fullsize_root()


def _ratio_line(label: str, values: list[float], target: float | None = None) -> str:
    med = statistics.median(values) if values else float("nan")
    spread = f"{min(values):.3f}-{max(values):.3f}" if values else "-"
    goal = (
        ""
        if target is None
        else f" (target ≤ {target:.2f}: {'met' if med <= target else 'NOT met'})"
    )
    return f"{label}: {med:.3f} (rounds {spread}, n={len(values)}){goal}"


# -------------------------------------------------------------------------- background ---


def run_background(rounds: int, busy: bool) -> dict:
    """RTF of a voice served while its int8 graphs are made behind it, against the same
    voice with nothing behind it; the two processes alternate, the idle one frozen."""
    root = _fullsize()
    texts = [TEXTS["medium"], TEXTS["assist"]]
    base = _start("base", "lifecycle-base")
    base.call(
        "prepare", root=str(root), speakers=[VOICE_NAME], cache_dir=str(_fresh(CACHE / "base"))
    )
    _calls(base, texts[:1])  # warm-up
    ratios: list[float] = []
    skipped = 0
    bg: Worker | None = None
    try:
        with _load(busy):
            for r in range(rounds):
                if bg is None:
                    bg = _start("background", "lifecycle-background")
                    st = bg.call(
                        "prepare",
                        root=str(root),
                        speakers=[VOICE_NAME],
                        cache_dir=str(_fresh(CACHE / "background")),
                    )
                    log(f"background process: {st['precision']}, int8 {st['upgrade']}")
                    _calls(bg, texts[:1])  # warm-up (the work runs meanwhile)
                order = ("base", "bg") if r % 2 == 0 else ("bg", "base")
                got: dict[str, float] = {}
                valid = True
                for who in order:
                    if who == "base":
                        os.kill(bg.proc.pid, signal.SIGSTOP)
                        try:
                            got["base"] = _rtf(_calls(base, texts))
                        finally:
                            os.kill(bg.proc.pid, signal.SIGCONT)
                    else:
                        before = bg.call("state")
                        replies = _calls(bg, texts)
                        after = replies[-1]
                        valid = before["upgrade"] == "making" and after["upgrade"] == "making"
                        got["bg"] = _rtf(replies)
                if valid:
                    ratios.append(got["bg"] / got["base"])
                    log(f"round {r + 1}: with/without background {ratios[-1]:.3f}")
                else:
                    skipped += 1
                    log(f"round {r + 1}: int8 work not running throughout; a fresh cache next")
                    bg.close()
                    bg = None
    finally:
        base.close()
        if bg is not None:
            bg.close()
    return {"ratios": ratios, "skipped": skipped, "busy": busy}


# ------------------------------------------------------------------------------- fresh ---


def _snr_db(ref_path: Path, test_path: Path) -> float:
    import numpy as np

    a = np.load(ref_path).astype(np.float64)
    b = np.load(test_path).astype(np.float64)
    n = min(len(a), len(b))
    noise = float(np.sum((a[:n] - b[:n]) ** 2))
    return float("inf") if noise == 0 else 10 * float(np.log10(np.sum(a[:n] ** 2) / noise))


def run_fresh(rounds: int, busy: bool, hayakoe: bool) -> dict:
    """The library on a fresh cache against the same on a warm one (and hayakoe)."""
    root = _fullsize()
    texts = [TEXTS["medium"], TEXTS["long"]]
    out: dict[str, Any] = {
        "fresh_over_warm": [],
        "prepare_fresh_s": [],
        "prepare_warm_s": [],
        "snr_db": [],
    }
    if hayakoe:
        out["ours_over_hayakoe"] = []
    tmp = Path(tempfile.mkdtemp(prefix="lifecycle-audio-"))
    with _load(busy):
        ref = _start("base", "lifecycle-fp32")
        ref.call(
            "prepare", root=str(root), speakers=[VOICE_NAME], cache_dir=str(_fresh(CACHE / "fp32"))
        )
        _calls(ref, texts[:1], save=str(tmp / "fp32.npy"))
        ref.close()
        hk: Worker | None = None
        if hayakoe:
            hk = Worker(
                "lifecycle-hayakoe",
                [str(hayakoe_python()), "-m", "benchmarks.compare.hayakoe_runner", "worker"],
                clean_env(hayakoe=True),
            )
            hk.call(
                "prepare",
                root=str(root),
                speakers=[VOICE_NAME],
                cache_dir=str(_fresh(CACHE / "hayakoe")),
            )
            hk.call("generate", speaker=VOICE_NAME, text=texts[0], options=OPTIONS)
        try:
            for r in range(rounds):
                cache = _fresh(CACHE / "library")
                fresh = _start("library", "lifecycle-fresh")
                st = fresh.call(
                    "prepare", root=str(root), speakers=[VOICE_NAME], cache_dir=str(cache)
                )
                out["prepare_fresh_s"].append(st["prepare_s"])
                warm = _start("library", "lifecycle-warm")
                sw = warm.call(
                    "prepare", root=str(root), speakers=[VOICE_NAME], cache_dir=str(cache)
                )
                out["prepare_warm_s"].append(sw["prepare_s"])
                log(
                    f"round {r + 1}: fresh prepare {st['prepare_s']:.1f} s → {st['precision']}, "
                    f"warm prepare {sw['prepare_s']:.1f} s → {sw['precision']}"
                )
                if st["precision"] != "int8" or sw["precision"] != "int8":
                    raise SystemExit(f"the library did not return int8: fresh {st}, warm {sw}")
                _calls(fresh, texts[:1], save=str(tmp / "int8.npy"))
                out["snr_db"].append(_snr_db(tmp / "fp32.npy", tmp / "int8.npy"))
                _calls(warm, texts[:1])
                walls: dict[str, list[dict]] = {"fresh": [], "warm": [], "hayakoe": []}
                for k in range(2):
                    pairs = [("fresh", fresh), ("warm", warm)] + ([("hayakoe", hk)] if hk else [])
                    if k % 2:
                        pairs.reverse()
                    for name, w in pairs:
                        if name == "hayakoe":
                            walls[name] += [
                                w.call("generate", speaker=VOICE_NAME, text=t, options=OPTIONS)
                                for t in texts
                            ]
                        else:
                            walls[name] += _calls(w, texts)
                out["fresh_over_warm"].append(_rtf(walls["fresh"]) / _rtf(walls["warm"]))
                if hk is not None:
                    ours = (_rtf(walls["fresh"]) + _rtf(walls["warm"])) / 2
                    out["ours_over_hayakoe"].append(ours / _rtf(walls["hayakoe"]))
                fresh.close()
                warm.close()
        finally:
            if hk is not None:
                hk.close()
            shutil.rmtree(tmp, ignore_errors=True)
    out["busy"] = busy
    return out


# ------------------------------------------------------------------------------ cycles ---

_SCRIPT = textwrap.dedent(
    """
    import logging, random, sys, time
    from engine import TTS, EngineOptions

    logging.basicConfig(level=logging.INFO)

    root, cache, voice, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    tts = TTS("cpu", cache_dir=cache, bert_source=root,
              options=EngineOptions(threads=1, precision="int8", quantize_in_background=True))
    tts.load(voice, source=root).prepare()
    tts.speakers[voice].generate("こんにちは。")
    time.sleep(random.Random(seed).uniform(0, float(sys.argv[5])))
    up = tts.int8_upgrades.get(voice)
    print("state", up.state if up is not None else "ready", flush=True)
    # no close(): leaving the interpreter must stop the work by itself
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _complete(cache: Path) -> bool:
    from engine.int8.recipe import STAMP_FILE

    return any(cache.rglob(STAMP_FILE))


def _small_voice(where: Path) -> tuple[Path, str]:
    from tests.helpers.voices import LAYOUT_VOICE, build_layout_root

    if not (where / ".built").is_file():
        shutil.rmtree(where, ignore_errors=True)
        build_layout_root(where, LAYOUT_VOICE)
        (where / ".built").write_text("1")
    return where, LAYOUT_VOICE


def _server(
    root: Path, voice: str, cache: Path, port: int, env: dict[str, str]
) -> subprocess.Popen:
    argv = [
        sys.executable, "-m", "wyoming_hayakoe", "--uri", f"tcp://127.0.0.1:{port}",
        "--voice", f"{voice}={root}", "--bert-source", str(root), "--cache-dir", str(cache),
        "--precision", "int8", "--threads", "1",
    ]  # fmt: skip
    return subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def _wait_port(port: int, proc: subprocess.Popen, timeout: float = 300) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.1)
    return False


def run_cycles(cycles: int, busy: bool, full: bool) -> dict:
    """Scripts and servers stopped at random moments of int8 work on one cache."""
    if full:
        root, voice, window = _fullsize(), VOICE_NAME, 60.0
    else:
        root, voice = _small_voice(CACHE / "small-voice")
        window = 6.0
    rng = random.Random(1)
    env = clean_env()
    out: dict[str, Any] = {"busy": busy}
    with _load(busy):
        for kind in ("script", "server"):
            cache = _fresh(CACHE / f"cycles-{kind}")
            codes: list[int] = []
            resumed = completed = 0
            t_kind = time.monotonic()
            for i in range(cycles):
                if kind == "script":
                    seed = str(rng.randrange(10**6))
                    argv = [sys.executable, "-c", _SCRIPT, str(root), str(cache), voice, seed]
                    run = subprocess.run(
                        [*argv, str(window)],
                        cwd=REPO,
                        env=env,
                        capture_output=True,
                        text=True,
                        timeout=900,
                    )
                    code, err = run.returncode, run.stderr
                else:
                    port = _free_port()
                    proc = _server(root, voice, cache, port, env)
                    if _wait_port(port, proc):
                        time.sleep(rng.uniform(0, window))
                    proc.send_signal(signal.SIGTERM)
                    try:
                        _, err = proc.communicate(timeout=120)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        _, err = proc.communicate()
                    code = proc.returncode
                codes.append(code)
                if "kept from an earlier run" in err:
                    resumed += 1
                if code != 0:
                    log(f"{kind} {i + 1}: exit {code}\n{err[-2000:]}")
                if _complete(cache):
                    completed += 1
                    _fresh(cache)
                if (i + 1) % 10 == 0:
                    log(f"{kind}: {i + 1}/{cycles} runs, {resumed} resumed, {completed} completed")
            out[kind] = {
                "runs": len(codes),
                "exit_0": sum(c == 0 for c in codes),
                "other_exits": sorted({c for c in codes if c != 0}),
                "resumed": resumed,
                "completed": completed,
                "wall_s": time.monotonic() - t_kind,
            }
    return out


# -------------------------------------------------------------------------------- main ---


def _print_background(res: dict) -> None:
    load = "one core busy" if res["busy"] else "idle"
    print(
        _ratio_line(f"background, {load}: RTF with int8 work behind / without", res["ratios"], 1.10)
    )
    if res["skipped"]:
        print(f"  ({res['skipped']} rounds left out: the work was not running throughout)")


def _print_fresh(res: dict) -> None:
    load = "one core busy" if res["busy"] else "idle"
    print(
        _ratio_line(
            f"library, {load}: RTF fresh cache / warm cache (both int8)",
            res["fresh_over_warm"],
            1.05,
        )
    )
    print(
        f"  prepare(): fresh {statistics.median(res['prepare_fresh_s']):.1f} s (int8 made), "
        f"warm {statistics.median(res['prepare_warm_s']):.1f} s; "
        f"int8 vs fp32 audio, same seed: SNR {statistics.median(res['snr_db']):.1f} dB (≠ fp32)"
    )
    if "ours_over_hayakoe" in res:
        print(_ratio_line("  ours (int8) / hayakoe 1.3.1 RTF", res["ours_over_hayakoe"]))


def _print_cycles(res: dict) -> None:
    load = "one core busy" if res["busy"] else "idle"
    for kind in ("script", "server"):
        k = res[kind]
        print(
            f"cycles, {load}, {kind}: {k['exit_0']}/{k['runs']} exit 0"
            + (f" (others: {k['other_exits']})" if k["other_exits"] else "")
            + f", {k['resumed']} resumed an earlier run, {k['completed']} completed the graphs"
            + f" ({k['wall_s']:.0f} s)"
        )


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "worker":
        _worker(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=("background", "fresh", "cycles", "all"))
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--cycles", type=int, default=50)
    parser.add_argument("--busy", action="store_true", help="one core busy (default: idle)")
    parser.add_argument(
        "--hayakoe", action="store_true", help="fresh: hayakoe 1.3.1 in the same run"
    )
    parser.add_argument("--full", action="store_true", help="cycles on the full-size voice")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    results: dict[str, Any] = {"commit": _commit(), "cpus": os.cpu_count()}
    loads = (False, True) if args.part == "all" else (args.busy,)
    for busy in loads:
        tag = "busy" if busy else "idle"
        if args.part in ("background", "all"):
            results[f"background-{tag}"] = res = run_background(args.rounds, busy)
            _print_background(res)
        if args.part in ("fresh", "all"):
            results[f"fresh-{tag}"] = res = run_fresh(max(1, args.rounds // 2), busy, args.hayakoe)
            _print_fresh(res)
        if args.part in ("cycles", "all"):
            results[f"cycles-{tag}"] = res = run_cycles(args.cycles, busy, args.full)
            _print_cycles(res)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    main()
