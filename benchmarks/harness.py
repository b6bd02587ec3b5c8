"""What the benchmark drivers share: worker processes, servers on loopback, timing, tables.

`run.py`, `precision.py` and `slow_board.py` import this module, not each other (`run.py`
calls `precision.phase_precision`; nothing imports `run.py`):

- paths (`CACHE`, `RESULTS`), `log`;
- hayakoe's own torch-free venv (`hayakoe_python`) and a clean environment (`clean_env`);
- `Worker` / `start`: an engine worker (ours_runner.py or hayakoe_runner.py) driven over
  stdin/stdout; `timed_calls`: the workers in turn on every text, medians;
- `start_server` / `stop_servers`: a Wyoming server (ours, or the one around hayakoe) on
  127.0.0.1 as a subprocess, its log under `CACHE/logs/`;
- `median`, `table_head` / `table_row` (Markdown tables).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from common import OPTIONS, TEXTS, VOICE_NAME  # noqa: E402 (after the path set-up)

from tests.helpers.net import free_port  # noqa: E402

CACHE = HERE / ".cache"
RESULTS = HERE / "results"
HAYAKOE_VENV = CACHE / "hayakoe-venv"
HAYAKOE_PINS = ["hayakoe==1.3.1", "psutil>=5.9", "wyoming==1.10.2"]
OURS_CACHE = CACHE / "ours-cache"

__all__ = ["free_port"]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def table_row(cells: Sequence[object]) -> str:
    """`| a | b |` (an empty cell: `|  |`)."""
    return "|" + "|".join(f" {c} " for c in cells) + "|"


def table_head(cells: Sequence[str], align: str) -> list[str]:
    """A Markdown table's header and rule; `align` has one letter per column, `l` or `r`."""
    return [table_row(cells), table_row(["---:" if a == "r" else "---" for a in align])]


def hayakoe_python() -> Path:
    """hayakoe's venv interpreter, creating the venv (from PyPI) on first use."""
    py = HAYAKOE_VENV / "bin" / "python"
    stamp = HAYAKOE_VENV / ".pins"
    if py.is_file() and stamp.is_file() and stamp.read_text() == " ".join(HAYAKOE_PINS):
        return py
    log(f"creating {HAYAKOE_VENV} with {' '.join(HAYAKOE_PINS)} (no torch)")
    base = shutil.which("python3") or sys.executable
    if Path(sys.prefix) != Path(sys.base_prefix):  # we run in a venv: use its base interpreter
        cand = (
            Path(sys.base_prefix)
            / "bin"
            / f"python{sys.version_info.major}.{sys.version_info.minor}"
        )
        if cand.is_file():
            base = str(cand)
    subprocess.run([base, "-m", "venv", "--clear", str(HAYAKOE_VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", *HAYAKOE_PINS], check=True)
    check = subprocess.run(
        [str(py), "-c", "import importlib.util as u; print(u.find_spec('torch') is None)"],
        capture_output=True,
        text=True,
        check=True,
    )
    if check.stdout.strip() != "True":
        raise RuntimeError(f"{HAYAKOE_VENV} has torch installed; the baseline must be torch-free")
    stamp.write_text(" ".join(HAYAKOE_PINS))
    return py


def clean_env(extra: dict[str, str] | None = None, *, hayakoe: bool = False) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("WYOMING_HAYAKOE_", "OMP_", "HF_TOKEN"))
    }
    env.pop("PYTHONPATH", None)
    env["HF_HUB_OFFLINE"] = "1"
    env["HAYAKOE_CACHE"] = str(CACHE / ("hayakoe-cache" if hayakoe else "ours-cache"))
    if not hayakoe:
        env["PYTHONPATH"] = str(REPO)
    env.update(extra or {})
    return env


class Worker:
    """A benchmark worker process (ours_runner.py or hayakoe_runner.py worker)."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        self.name = name
        self.log_path = CACHE / "logs" / f"{name.replace(' ', '_').replace(':', '')}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            text=True,
            encoding="utf-8",
            cwd=REPO,
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

    def close(self) -> None:
        try:
            self.call("quit")
        except Exception:  # noqa: BLE001, S110 - already gone
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._log.close()


def start(engine: str, extra_env: dict[str, str] | None = None, label: str | None = None) -> Worker:
    if engine == "hayakoe":
        return Worker(
            label or engine,
            [str(hayakoe_python()), str(HERE / "hayakoe_runner.py"), "worker"],
            clean_env(extra_env, hayakoe=True),
        )
    return Worker(
        label or engine, [sys.executable, str(HERE / "ours_runner.py")], clean_env(extra_env)
    )


def median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def timed_calls(
    workers: dict[str, Worker],
    texts: dict[str, str],
    reps: int,
    *,
    generate: bool = True,
    stream: bool = True,
    stream_texts: set[str] | None = None,
) -> dict:
    """Alternate the workers on every text; medians of generate wall/RTF and stream TTFA."""
    raw: dict[str, dict[str, dict[str, list[float]]]] = {n: {t: {} for t in texts} for n in workers}
    names = list(workers)
    for w in workers.values():  # warm-up: first-call costs are not what we compare
        for text in texts.values():
            w.call("stream", speaker=VOICE_NAME, text=text, options=OPTIONS, first_only=True)
        w.call(
            "generate",
            speaker=VOICE_NAME,
            text=TEXTS.get("short", next(iter(texts.values()))),
            options=OPTIONS,
        )
    for rep in range(reps):
        order = names if rep % 2 == 0 else names[::-1]
        for key, text in texts.items():
            for name in order:
                rec = raw[name][key]
                w = workers[name]
                if generate:
                    r = w.call("generate", speaker=VOICE_NAME, text=text, options=OPTIONS)
                    rec.setdefault("wall_s", []).append(r["wall_s"])
                    rec.setdefault("audio_s", []).append(r["audio_s"])
                    rec.setdefault("rtf", []).append(r["wall_s"] / max(r["audio_s"], 1e-9))
                    rec.setdefault("rss_after", []).append(r["rss"])
                if stream and (stream_texts is None or key in stream_texts):
                    r = w.call("stream", speaker=VOICE_NAME, text=text, options=OPTIONS)
                    rec.setdefault("ttfa_s", []).append(r["ttfa_s"])
                    rec.setdefault("stream_wall_s", []).append(r["wall_s"])
                    rec.setdefault("stream_chunks", []).append(r["chunks"])
                    rec.setdefault("gap_s", []).append(r["gap_s"])
                    rec.setdefault("played_s", []).append(r["played_s"])
        log(f"speed: rep {rep + 1}/{reps} done")
    return {
        n: {t: {k: median(v) for k, v in m.items()} for t, m in per.items()}
        for n, per in raw.items()
    }


def stop_servers(procs: dict[str, subprocess.Popen]) -> None:
    """Stop the servers `start_server` started: SIGTERM, then SIGKILL after 30 s."""
    for proc in procs.values():
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def start_server(
    engine: str,
    root: Path,
    port: int,
    extra_env: dict[str, str] | None = None,
    label: str | None = None,
    args: Sequence[str] = (),
) -> subprocess.Popen:
    """A Wyoming server on 127.0.0.1:`port` (ours with the benchmark options and `args`
    added, or the one around hayakoe), its output in `CACHE/logs/wyoming-<label>.log`."""
    name = (label or engine).replace(" ", "_")
    (CACHE / "logs").mkdir(parents=True, exist_ok=True)
    logf = open(CACHE / "logs" / f"wyoming-{name}.log", "ab")  # noqa: SIM115 - the server keeps it
    uri = f"tcp://127.0.0.1:{port}"
    if engine == "hayakoe":
        argv = [
            str(hayakoe_python()),
            str(HERE / "hayakoe_runner.py"),
            "serve",
            "--root",
            str(root),
            "--voice",
            VOICE_NAME,
            "--uri",
            uri,
        ]
        environ = clean_env(hayakoe=True)
    else:
        argv = [
            sys.executable,
            "-m",
            "wyoming_hayakoe",
            "--uri",
            uri,
            "--voice",
            f"{VOICE_NAME}={root}",
            "--bert-source",
            str(root),
            "--speed",
            str(OPTIONS["speed"]),
            "--sdp-ratio",
            str(OPTIONS["sdp_ratio"]),
            "--noise",
            str(OPTIONS["noise"]),
            "--noise-w",
            str(OPTIONS["noise_w"]),
            *args,
        ]
        environ = clean_env(extra_env)
    return subprocess.Popen(argv, stdout=logf, stderr=logf, env=environ, cwd=REPO)
