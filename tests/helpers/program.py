"""The real program, `python -m wyoming_hayakoe ...`, as a subprocess of a test."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from tests.helpers.paths import REPO_ROOT


def program_env() -> dict[str, str]:
    """This process's environment, with the work tree importable and no Hub token."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("HF_TOKEN", None)
    return env


class Program:
    """`python -m wyoming_hayakoe ...` with its stderr collected."""

    def __init__(self, *args: str, stdio: bool = False) -> None:
        self.args = args
        self.stdio = stdio
        self.lines: list[str] = []
        self.ready = asyncio.Event()

    async def __aenter__(self) -> Program:
        pipe = asyncio.subprocess.PIPE
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "wyoming_hayakoe",
            *self.args,
            cwd=REPO_ROOT,
            env=program_env(),
            stderr=pipe,
            stdin=pipe if self.stdio else asyncio.subprocess.DEVNULL,
            stdout=pipe if self.stdio else asyncio.subprocess.DEVNULL,
        )
        self._reader = asyncio.create_task(self._read_stderr())
        return self

    async def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while line := await self.proc.stderr.readline():
            self.lines.append(line.decode(errors="replace"))
            if "Ready" in self.lines[-1]:
                self.ready.set()

    async def wait_ready(self, timeout: float = 60) -> None:
        waiter = asyncio.create_task(self.ready.wait())
        await asyncio.wait(
            {waiter, asyncio.ensure_future(self.proc.wait())},
            timeout=timeout,
            return_when=asyncio.FIRST_COMPLETED,
        )
        assert self.ready.is_set(), "server did not start:\n" + self.log

    async def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        code = await asyncio.wait_for(self.proc.wait(), 15)
        await self._reader
        return code

    @property
    def log(self) -> str:
        return "".join(self.lines)

    async def __aexit__(self, *exc: object) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()


class Finished:
    """A program run to its end: exit status and what it wrote."""

    def __init__(self, returncode: int, stdout: bytes, stderr: bytes) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr.decode(errors="replace")


async def run_program(
    *args: str,
    stdin: bytes = b"",
    env: dict[str, str] | None = None,
    timeout: float = 120.0,
) -> Finished:
    """`python -m wyoming_hayakoe ARGS` to its end (killed after `timeout` seconds), fed
    `stdin`; `env` overrides entries of `program_env()`."""
    pipe = asyncio.subprocess.PIPE
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "wyoming_hayakoe",
        *args,
        cwd=REPO_ROOT,
        env={**program_env(), **(env or {})},
        stdin=pipe,
        stdout=pipe,
        stderr=pipe,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except BaseException:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    assert proc.returncode is not None
    return Finished(proc.returncode, out, err)
