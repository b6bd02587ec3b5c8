"""`wyoming-hayakoe say --play` on a speaker node: time to first sound and to the end.

The real program is started as a cron job would start it, with a stand-in ``aplay`` first on
PATH that notes the wall-clock time of the first byte it receives and of the end of its
input (it plays nothing, so "end" is when the last audio was handed over). Two ways:

- here: the voice is loaded by `say` itself (the baseline of the ratios);
- server: `say --server` asks a server already running on 127.0.0.1 with the same voice.

Medians over ``--repeat`` runs of each, alternating. Also the cost of starting the command
at all (interpreter and imports, `say --help`), which both pay.

``--slow CPUS`` measures something else: a board slower than speech. `say --play` (voice
loaded here) runs in a CPU-quota cgroup of CPUS CPUs (`tests/helpers/cgroup.py`, needs root),
with the playback guard on (`auto`) and off; the stand-in player notes when each piece of
audio arrives and a real-time player started at the first piece is replayed on those
times: first audio, gaps (count, seconds of silence) and the end, per run.

    python benchmarks/bench_say.py [--repeat 5] [--voice NAME=SOURCE] [--out FILE]
    python benchmarks/bench_say.py --slow 0.03 --small-voice [--repeat 2]

``--small-voice`` speaks with the tests' small random-weight neural voice (built once into
``benchmarks/.cache/say-small`` by `tests.helpers.voices.build_layout_root`; needs torch),
one ONNX thread, offline: the embedded voice reports no audio still to come, so the guard
cannot hold it back.
"""

from __future__ import annotations

import argparse
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT = "おはようございます。七時になりました。今日は燃えるごみの日です。"

PLAYER = """#!{python}
import os, sys, time
procs = os.environ.get("BENCH_PLAYER_CGROUP")
if procs:  # the player itself runs at full speed, outside the slow board's quota
    with open(procs, "w") as f:
        f.write(str(os.getpid()))
arrivals = []
while chunk := sys.stdin.buffer.read1(1 << 20):
    arrivals.append((time.time(), len(chunk)))
with open(os.environ["BENCH_PLAYER_TIMES"], "w") as f:
    f.write("\\n".join(f"{{t}} {{n}}" for t, n in arrivals))
"""

GAP_S = 0.02
"""A wait of the real-time player shorter than this is not counted as a gap."""


def replay(arrivals: list[tuple[float, int]], byte_rate: float) -> tuple[int, float]:
    """(gaps, seconds of silence) of a player that starts at the first arrival and plays in
    real time, waiting (without skipping) when the next audio is not there yet."""
    if not arrivals:
        return 0, 0.0
    clock = arrivals[0][0]  # when the audio handed over so far will have been played
    gaps, silence = 0, 0.0
    for t, n in arrivals:
        if t > clock + GAP_S:
            gaps += 1
            silence += t - clock
        clock = max(clock, t) + n / byte_rate
    return gaps, silence


def env_with(player_dir: Path, times: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["PATH"] = f"{player_dir}{os.pathsep}{env.get('PATH', '')}"
    env["BENCH_PLAYER_TIMES"] = str(times)
    return env


def read_arrivals(times: Path) -> list[tuple[float, int]]:
    rows = [line.split() for line in times.read_text().splitlines() if line.strip()]
    return [(float(t), int(n)) for t, n in rows]


def say(argv: list[str], env: dict[str, str], times: Path) -> tuple[float, float, int]:
    """(seconds to the first audio byte, seconds to the end, bytes) of one run."""
    times.unlink(missing_ok=True)
    started = time.time()
    subprocess.run(
        [sys.executable, "-m", "wyoming_hayakoe", "say", TEXT, "--play", *argv],
        env=env,
        cwd=ROOT,
        check=True,
    )
    arrivals = read_arrivals(times)
    return arrivals[0][0] - started, arrivals[-1][0] - started, sum(n for _, n in arrivals)


def slow_board(args: argparse.Namespace, env: dict[str, str], times: Path) -> list[str]:
    """`say --play` in a CPU-quota cgroup, guard on and off: the table's lines."""
    sys.path.insert(0, str(ROOT))
    from tests.helpers.cgroup import CpuQuota, quota_unavailable

    reason = quota_unavailable()
    if reason is not None:
        raise SystemExit(f"--slow: {reason}")
    voice = ["--voice", args.voice] if args.voice else []
    voice += shlex.split(args.say_args)
    lines = [
        f"say --play, voice loaded here, in a CPU-quota cgroup of {args.slow:g} CPU "
        f"({args.voice or 'openjtalk-mei (embedded)'} {args.say_args}, {len(TEXT)} characters; "
        "times from "
        "the start of the process; a real-time player replayed on the arrival times)",
        "",
        "| guard | run | first audio (s) | audio (s) | gaps | silence (s) | end of playback (s) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    with CpuQuota("say", cpus=args.slow) as quota:
        env = {**env, "BENCH_PLAYER_CGROUP": str(quota.root / "cgroup.procs")}
        for run in range(args.repeat):
            for guard in ("auto", "off"):
                times.unlink(missing_ok=True)
                started = time.time()
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "wyoming_hayakoe",
                        "say",
                        TEXT,
                        "--play",
                        *voice,
                        "--playback-guard",
                        guard,
                    ],
                    env=env,
                    cwd=ROOT,
                    check=True,
                    preexec_fn=lambda: quota.add(os.getpid()),  # noqa: PLW1509 - before exec
                )
                arrivals = read_arrivals(times)
                byte_rate = 2.0 * args.rate
                audio_s = sum(n for _, n in arrivals) / byte_rate
                gaps, silence = replay(arrivals, byte_rate)
                first = arrivals[0][0] - started
                end = first + audio_s + silence
                lines.append(
                    f"| {guard} | {run + 1} | {first:.2f} | {audio_s:.2f} | {gaps} | "
                    f"{silence:.2f} | {end:.2f} |"
                )
                print(lines[-1], flush=True)
    return lines


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the server exited before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"no server on port {port} after {timeout:g} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--voice", default=None, help="NAME=SOURCE (default: the embedded voice)")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")
    parser.add_argument(
        "--slow", type=float, default=None, metavar="CPUS", help="a slow board: see above"
    )
    parser.add_argument(
        "--rate", type=int, default=48000, help="--slow: the voice's sample rate (Hz)"
    )
    parser.add_argument(
        "--small-voice", action="store_true", help="the tests' small neural voice (see above)"
    )
    parser.add_argument(
        "--say-args",
        default="",
        help="more voice flags for say (and the server), e.g. '--bert-source ROOT --offline'",
    )
    args = parser.parse_args()
    if args.small_voice:
        sys.path.insert(0, str(ROOT))
        from engine.layout import speaker_prefix
        from tests.helpers.voices import LAYOUT_VOICE, build_layout_root

        root = ROOT / "benchmarks" / ".cache" / "say-small"
        if not (root / speaker_prefix(LAYOUT_VOICE, "onnx")).is_dir():
            root.mkdir(parents=True, exist_ok=True)
            build_layout_root(root, LAYOUT_VOICE)
        args.voice = f"{LAYOUT_VOICE}={root}"
        args.say_args = f"--bert-source {root} --offline --threads 1 {args.say_args}".strip()
        args.rate = 44100

    work = Path(tempfile.mkdtemp(prefix="bench-say-"))
    player = work / "aplay"
    player.write_text(PLAYER.format(python=sys.executable))
    player.chmod(0o755)
    times = work / "times"
    env = env_with(work, times)
    if args.slow is not None:
        text = "\n".join(slow_board(args, env, times))
        if args.out is not None:
            args.out.write_text(text + "\n")
        return 0

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server_argv = [sys.executable, "-m", "wyoming_hayakoe", "--uri", f"tcp://127.0.0.1:{port}"]
    here_argv: list[str] = []
    server_voice: list[str] = []
    if args.voice:
        server_argv += ["--voice", args.voice]
        here_argv = ["--voice", args.voice]
        server_voice = ["--voice", args.voice.partition("=")[0]]
    server_argv += shlex.split(args.say_args)
    here_argv += shlex.split(args.say_args)
    server = subprocess.Popen(
        server_argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_port(port, server)
        via = ["--server", f"tcp://127.0.0.1:{port}", *server_voice]
        say(via, env, times)  # the server's first request warms nothing we measure twice
        rows: dict[str, list[tuple[float, float, int]]] = {"here": [], "server": []}
        for _ in range(args.repeat):
            rows["here"].append(say(here_argv, env, times))
            rows["server"].append(say(via, env, times))
        started = []
        for _ in range(args.repeat):
            t0 = time.time()
            subprocess.run(
                [sys.executable, "-m", "wyoming_hayakoe", "say", "--help"],
                env=env,
                cwd=ROOT,
                check=True,
                stdout=subprocess.DEVNULL,
            )
            started.append(time.time() - t0)
    finally:
        server.terminate()
        server.wait(timeout=30)

    voice = args.voice.partition("=")[0] if args.voice else "openjtalk-mei (embedded)"
    base_first = statistics.median(r[0] for r in rows["here"])
    base_end = statistics.median(r[1] for r in rows["here"])
    lines = [
        f"say --play, {voice}, {len(TEXT)} characters, median of {args.repeat} runs "
        f"(stand-in aplay; times from the start of the process)",
        "",
        "| way | first audio (s) | ratio | end (s) | ratio |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, runs in rows.items():
        first = statistics.median(r[0] for r in runs)
        end = statistics.median(r[1] for r in runs)
        lines.append(
            f"| {name} | {first:.2f} | {first / base_first:.2f} | {end:.2f} | "
            f"{end / base_end:.2f} |"
        )
    start = statistics.median(started)
    lines.append(f"| start-up alone (`say --help`) | {start:.2f} | {start / base_first:.2f} | | |")
    sizes = {r[2] for runs in rows.values() for r in runs}
    lines += ["", f"audio bytes per run: {sorted(sizes)}"]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
