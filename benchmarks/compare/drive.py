"""The driver's side: variants (name → engine + environment), their workers and Wyoming
servers, and the three measurements both parts make of them, each figure the median over
rounds in which every variant runs once, the order reversed every other round
(`stats.alternate`), the other variants' processes frozen meanwhile (`paused`: an idle
ONNX Runtime's spinning threads would take the timed one's cores). hayakoe runs in its own
torch-free venv, made from PyPI on first use.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from subprocess import PIPE
from typing import Any

from benchmarks.lib import CACHE, REPO
from benchmarks.lib.procs import Server, program_env
from benchmarks.lib.report import log
from benchmarks.lib.stats import Figures, alternate, medians
from benchmarks.lib.voices import TEXTS, VOICE_NAME, server_args
from benchmarks.lib.wyoming import listen

HAYAKOE_VENV = CACHE / "hayakoe-venv"
HAYAKOE_PINS = ["hayakoe==1.3.1", "psutil>=5.9", "wyoming==1.10.2"]
PerText = dict[str, dict[str, Figures]]  # variant → text → figures


def hayakoe_python() -> Path:
    """hayakoe's venv interpreter, the venv made (from PyPI, without torch) on first use."""
    py, stamp = HAYAKOE_VENV / "bin" / "python", HAYAKOE_VENV / ".pins"
    if py.is_file() and stamp.is_file() and stamp.read_text() == " ".join(HAYAKOE_PINS):
        return py
    log(f"creating {HAYAKOE_VENV} with {' '.join(HAYAKOE_PINS)} (no torch)")
    # venv makes it from the interpreter beneath this venv: none of this venv's packages
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(HAYAKOE_VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", *HAYAKOE_PINS], check=True)
    probe = "import importlib.util as u; print(u.find_spec('torch') is None)"
    check = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, check=True)
    if check.stdout.strip() != "True":
        raise RuntimeError(f"{HAYAKOE_VENV} has torch installed; the baseline must be torch-free")
    stamp.write_text(" ".join(HAYAKOE_PINS))
    return py


@dataclass(frozen=True)
class Variant:
    """What one column measures: an engine (`ours` or `hayakoe`) in an environment."""

    engine: str
    env: dict[str, str] = field(default_factory=dict)

    def program(self, module: str) -> tuple[list[str], dict[str, str]]:
        """`python -m module` in the engine's venv, and its environment (its own model cache
        unless the variant's environment names one; hayakoe's sees only `benchmarks`, from
        the working directory)."""
        env = program_env({"HAYAKOE_CACHE": str(CACHE / f"{self.engine}-cache"), **self.env})
        if self.engine != "hayakoe":
            return [sys.executable, "-m", module], env
        env.pop("PYTHONPATH")
        return [str(hayakoe_python()), "-m", module], env


@contextmanager
def paused(pids: Iterable[int]) -> Iterator[None]:
    """These processes stopped (SIGSTOP) meanwhile, continued after."""
    stopped = list(pids)
    for pid in stopped:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)


class Call:
    """`call(command, **fields)`: one command to a worker process (`pid`), its JSON answer."""

    def __init__(self, label: str, proc: subprocess.Popen[str], log_path: Path) -> None:
        self.label, self.proc, self.pid, self.log_path = label, proc, proc.pid, log_path

    def __call__(self, cmd: str, **kw: Any) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"cmd": cmd, **kw}, ensure_ascii=False) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline() or '{"error": "exited"}')
        if "error" in reply:
            raise RuntimeError(f"{self.label}: {cmd}: {reply['error']} (see {self.log_path})")
        return reply


@contextmanager
def worker(label: str, variant: Variant, root: Path) -> Iterator[Call]:
    """A `worker` process of `variant` for the voices of `root`: `call(command, **fields)`."""
    log_path = CACHE / "logs" / f"{label.replace(' ', '_')}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    program, env = variant.program("benchmarks.compare.worker")
    argv, err = [*program, variant.engine, str(root)], log_path.open("ab")
    proc = subprocess.Popen(argv, stdin=PIPE, stdout=PIPE, stderr=err, env=env, text=True, cwd=REPO)
    err.close()  # the worker has its own copy
    try:
        yield Call(label, proc, log_path)
    finally:
        assert proc.stdin
        proc.stdin.close()  # the worker ends with its input
        proc.wait()


def server(label: str, variant: Variant, root: Path) -> Server:
    """`variant`'s Wyoming server on loopback for the voice of `root`, with `voices.OPTIONS`:
    ours, or the minimal one around hayakoe's `astream()` (`hayakoe_runner`)."""
    hayakoe = variant.engine == "hayakoe"
    module = "benchmarks.compare.hayakoe_runner" if hayakoe else "wyoming_hayakoe"
    program, env = variant.program(module)
    args = ["--root", str(root), "--voice", VOICE_NAME] if hayakoe else server_args(root)
    return Server(args, label=f"wyoming-{label}", env=env, program=program)


def _rounds(variants: dict[str, Variant], one: Callable[[str], Any], reps: int) -> dict[str, list]:
    return alternate({name: partial(one, name) for name in variants}, reps)


def _per_text(rounds: dict[str, list[dict[str, Figures]]]) -> PerText:
    return {n: {text: medians([r[text] for r in rs]) for text in rs[0]} for n, rs in rounds.items()}


def memory(
    root: Path, variants: dict[str, Variant], reps: int, texts: dict[str, str] | None = None
) -> dict[str, Figures]:
    """RSS and peak RSS after `prepare()` with one voice, a fresh process per variant and
    round; with `texts`, also the peak while speaking them and (a fresh process again) the
    RSS per extra speaker, two more copies of the voice."""

    def one(name: str) -> Figures:
        with worker(name, variants[name], root) as call:
            r = call("prepare")
            figs = {"rss_after_prepare": r["rss"], "peak_after_prepare": r["hwm"]}
            figs["prepare_s"] = r["prepare_s"]
            if texts is None:
                return figs
            for text in texts.values():
                call("generate", text=text)
                call("stream", text=text, first_only=True)
            figs["peak_while_speaking"] = call("mem")["hwm"]
        # Each speaker speaks once after it is added: heap freed while loading one and
        # reused by the next neither hides nor inflates what a speaker holds once in use.
        rss = []
        with worker(f"{name} speakers", variants[name], root) as call:
            for speaker in (VOICE_NAME, "bench2", "bench3"):
                call("prepare", speaker=speaker)
                rss.append(call("generate", speaker=speaker, text=TEXTS["short"])["rss_after"])
        log(f"memory {name}: {rss[0] / 2**20:.0f} MiB with one voice, {rss[2] / 2**20:.0f} with 3")
        figs["rss_per_extra_speaker"] = (rss[2] - rss[0]) / 2
        figs["rss_1_voice_used"], figs["rss_3_voices_used"] = rss[0], rss[2]
        return figs

    return {n: medians(rs) for n, rs in _rounds(variants, one, reps).items()}


def speed(root: Path, variants: dict[str, Variant], texts: dict[str, str], reps: int) -> PerText:
    """The variants' workers loaded side by side and called in turn on every text:
    `generate()` wall time and real-time factor, `stream()` first audio, gaps and end."""
    with ExitStack() as stack:
        calls = {n: stack.enter_context(worker(n, v, root)) for n, v in variants.items()}
        for call in calls.values():
            call("prepare")
            for text in texts.values():  # warm-up: first-call costs are not what we compare
                call("stream", text=text, first_only=True)
            call("generate", text=TEXTS["short"])

        def one(name: str) -> dict[str, Figures]:
            log(f"speed: {name}")
            call = calls[name]
            with paused(c.pid for n, c in calls.items() if n != name):
                return {
                    k: {**call("generate", text=t), **call("stream", text=t)}
                    for k, t in texts.items()
                }

        return _per_text(_rounds(variants, one, reps))


def wyoming(
    root: Path, variants: dict[str, Variant], texts: dict[str, str], reps: int, oneshot: bool
) -> PerText:
    """Every variant's Wyoming server on loopback, timed by a real TCP client: first audio and
    end, streaming (text deltas) and, with `oneshot`, one `synthesize`."""
    modes = ("oneshot", "streaming") if oneshot else ("streaming",)
    with ExitStack() as stack:
        servers = {n: stack.enter_context(server(n, v, root)) for n, v in variants.items()}

        def once(name: str, text: str, mode: str) -> Figures:
            port, streamed = servers[name].port, mode == "streaming"
            heard = asyncio.run(listen("127.0.0.1", port, text, VOICE_NAME, streamed=streamed))
            figs = {f"{mode}_ttfa_s": heard.first_audio_s, f"{mode}_wall_s": heard.total_s}
            return {**figs, "audio_s": heard.clock.audio_s}

        def one(name: str) -> dict[str, Figures]:
            log(f"wyoming: {name}")
            with paused(s.proc.pid for n, s in servers.items() if n != name):
                return {
                    k: {f: v for m in modes for f, v in once(name, t, m).items()}
                    for k, t in texts.items()
                }

        for s in servers.values():
            asyncio.run(s.wait_ready())
        for name in servers:  # warm-up
            for text in texts.values():
                once(name, text, "oneshot")
        return _per_text(_rounds(variants, one, reps))
