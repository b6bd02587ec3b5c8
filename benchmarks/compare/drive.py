"""The driver's side of the comparison: engine workers and servers of both engines.

- `hayakoe_python`: hayakoe 1.3.1's own torch-free venv (made from PyPI on first use);
- `start(engine, env)`: a worker process (`ours_runner` or `hayakoe_runner worker`) driven
  over stdin/stdout (`Worker.call`); `timed_calls`: the workers in turn on every text;
- `server(engine, root)`: a Wyoming server on loopback, ours or the one around hayakoe,
  both with `voices.OPTIONS`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.lib import CACHE, REPO
from benchmarks.lib.procs import Server, program_env
from benchmarks.lib.report import log
from benchmarks.lib.stats import median
from benchmarks.lib.voices import OPTIONS, TEXTS, VOICE_NAME, server_args

HAYAKOE_VENV = CACHE / "hayakoe-venv"
HAYAKOE_PINS = ["hayakoe==1.3.1", "psutil>=5.9", "wyoming==1.10.2"]
OURS_CACHE = CACHE / "ours-cache"


def hayakoe_python() -> Path:
    """hayakoe's venv interpreter, creating the venv (from PyPI) on first use."""
    py = HAYAKOE_VENV / "bin" / "python"
    stamp = HAYAKOE_VENV / ".pins"
    if py.is_file() and stamp.is_file() and stamp.read_text() == " ".join(HAYAKOE_PINS):
        return py
    log(f"creating {HAYAKOE_VENV} with {' '.join(HAYAKOE_PINS)} (no torch)")
    base = shutil.which("python3") or sys.executable
    if Path(sys.prefix) != Path(sys.base_prefix):  # we run in a venv: use its base interpreter
        v = sys.version_info
        cand = Path(sys.base_prefix) / "bin" / f"python{v.major}.{v.minor}"
        base = str(cand) if cand.is_file() else base
    subprocess.run([base, "-m", "venv", "--clear", str(HAYAKOE_VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", *HAYAKOE_PINS], check=True)
    probe = "import importlib.util as u; print(u.find_spec('torch') is None)"
    check = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, check=True)
    if check.stdout.strip() != "True":
        raise RuntimeError(f"{HAYAKOE_VENV} has torch installed; the baseline must be torch-free")
    stamp.write_text(" ".join(HAYAKOE_PINS))
    return py


def engine_env(extra: dict[str, str] | None = None, *, hayakoe: bool = False) -> dict[str, str]:
    """The environment of an engine's process: its own model cache; hayakoe's venv does not
    see the project (it imports `benchmarks` from the working directory only)."""
    env = program_env(extra)
    env["HAYAKOE_CACHE"] = str(CACHE / ("hayakoe-cache" if hayakoe else "ours-cache"))
    if hayakoe:
        env.pop("PYTHONPATH")
    return env


class Worker:
    """A benchmark worker process, one JSON command and answer per line."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        self.name = name
        self.log_path = CACHE / "logs" / f"{name.replace(' ', '_').replace(':', '')}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        pipe = subprocess.PIPE
        self.proc = subprocess.Popen(
            argv, stdin=pipe, stdout=pipe, stderr=self._log, env=env, text=True, cwd=REPO
        )

    def call(self, cmd: str, **kw: Any) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"cmd": cmd, **kw}, ensure_ascii=False) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name} died (see {self.log_path})")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{self.name}: {cmd} failed: {reply['error']} (see {self.log_path})")
        return reply

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.call("quit")
        except (RuntimeError, OSError):  # already gone
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._log.close()


def start(engine: str, extra_env: dict[str, str] | None = None, label: str | None = None) -> Worker:
    """A worker of `engine` (`ours` or `hayakoe`) with `extra_env` set."""
    if engine == "hayakoe":
        argv = [str(hayakoe_python()), "-m", "benchmarks.compare.hayakoe_runner", "worker"]
        return Worker(label or engine, argv, engine_env(extra_env, hayakoe=True))
    argv = [sys.executable, "-m", "benchmarks.compare.ours_runner"]
    return Worker(label or engine, argv, engine_env(extra_env))


def server(
    engine: str,
    root: Path,
    extra_env: dict[str, str] | None = None,
    label: str | None = None,
    args: tuple[str, ...] = (),
) -> Server:
    """A Wyoming server of `engine` on loopback for the voice of `root`."""
    name = f"wyoming-{label or engine}"
    if engine == "hayakoe":
        program = [str(hayakoe_python()), "-m", "benchmarks.compare.hayakoe_runner", "serve"]
        env = engine_env(hayakoe=True)
        return Server(
            ["--root", str(root), "--voice", VOICE_NAME], label=name, env=env, program=program
        )
    return Server([*server_args(root), *args], label=name, env=engine_env(extra_env))


def timed_calls(
    workers: dict[str, Worker],
    texts: dict[str, str],
    reps: int,
    *,
    generate: bool = True,
    stream: bool = True,
) -> dict:
    """The workers in turn on every text, order alternating; medians of `generate()` wall
    time and RTF, and of `stream()`'s first audio, gaps and end."""
    raw: dict[str, dict[str, dict[str, list[float]]]] = {n: {t: {} for t in texts} for n in workers}
    names = list(workers)
    for w in workers.values():  # warm-up: first-call costs are not what we compare
        for text in texts.values():
            w.call("stream", speaker=VOICE_NAME, text=text, options=OPTIONS, first_only=True)
        w.call("generate", speaker=VOICE_NAME, text=TEXTS["short"], options=OPTIONS)
    for rep in range(reps):
        for key, text in texts.items():
            for name in names if rep % 2 == 0 else names[::-1]:
                rec, w = raw[name][key], workers[name]
                if generate:
                    r = w.call("generate", speaker=VOICE_NAME, text=text, options=OPTIONS)
                    rec.setdefault("wall_s", []).append(r["wall_s"])
                    rec.setdefault("audio_s", []).append(r["audio_s"])
                    rec.setdefault("rtf", []).append(r["wall_s"] / max(r["audio_s"], 1e-9))
                    rec.setdefault("rss_after", []).append(r["rss"])
                if stream:
                    r = w.call("stream", speaker=VOICE_NAME, text=text, options=OPTIONS)
                    for key_out, key_in in (
                        ("ttfa_s", "ttfa_s"),
                        ("stream_wall_s", "wall_s"),
                        ("stream_chunks", "chunks"),
                        ("gap_s", "gap_s"),
                        ("played_s", "played_s"),
                    ):
                        rec.setdefault(key_out, []).append(r[key_in])
        log(f"speed: rep {rep + 1}/{reps} done")
    return {
        n: {t: {k: median(v) for k, v in m.items()} for t, m in per.items()}
        for n, per in raw.items()
    }


def load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]
