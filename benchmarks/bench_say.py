"""`wyoming-hayakoe say --play` on a speaker node: time to first sound and to the end.

The real program is started as a cron job would start it, with a stand-in ``aplay`` first on
PATH that notes the wall-clock time of the first byte it receives and of the end of its
input (it plays nothing, so "end" is when the last audio was handed over). Two ways:

- here: the voice is loaded by `say` itself (the baseline of the ratios);
- server: `say --server` asks a server already running on 127.0.0.1 with the same voice.

Medians over ``--repeat`` runs of each, alternating. Also the cost of starting the command
at all (interpreter and imports, `say --help`), which both pay.

    python benchmarks/bench_say.py [--repeat 5] [--voice NAME=SOURCE] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
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
data = sys.stdin.buffer.read1(1 << 20)
first = time.time()
n = len(data)
while chunk := sys.stdin.buffer.read(1 << 16):
    n += len(chunk)
with open(os.environ["BENCH_PLAYER_TIMES"], "w") as f:
    f.write(f"{{first}} {{time.time()}} {{n}}")
"""


def env_with(player_dir: Path, times: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["PATH"] = f"{player_dir}{os.pathsep}{env.get('PATH', '')}"
    env["BENCH_PLAYER_TIMES"] = str(times)
    return env


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
    first, end, size = times.read_text().split()
    return float(first) - started, float(end) - started, int(size)


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
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-say-"))
    player = work / "aplay"
    player.write_text(PLAYER.format(python=sys.executable))
    player.chmod(0o755)
    times = work / "times"
    env = env_with(work, times)

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
