"""A Wyoming server on loopback as a process of its own: the real program by default.

    with Server(["--voice", "openjtalk-mei"], label="rss") as server:
        await server.wait_ready()             # its log says Ready (or it exited: raises)
        server.port, server.usage()           # (RSS bytes, open fds, threads) via psutil
    # stopped (SIGTERM, then SIGKILL after 30 s); its log stays in benchmarks/.cache/logs/

`program` replaces `python -m wyoming_hayakoe` (hayakoe's wrapper: `compare.hayakoe_runner`);
either is started as `PROGRAM --uri tcp://127.0.0.1:PORT ARGS...`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.lib import CACHE, REPO
from tests.helpers.net import free_port

OURS = (sys.executable, "-m", "wyoming_hayakoe")


def program_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment less the server's own settings and tokens, the checkout importable,
    offline."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("WYOMING_HAYAKOE_", "OMP_", "HF_TOKEN"))
    }
    env["PYTHONPATH"] = str(REPO)
    env["HF_HUB_OFFLINE"] = "1"
    env.update(extra or {})
    return env


class Server:
    """One server process on 127.0.0.1 (see the module text)."""

    def __init__(
        self,
        args: Sequence[str] = (),
        *,
        label: str = "server",
        env: dict[str, str] | None = None,
        program: Sequence[str] = OURS,
        cwd: Path = REPO,
    ) -> None:
        self.port = free_port()
        self.uri = f"tcp://127.0.0.1:{self.port}"
        self.label = label
        self.log_path = CACHE / "logs" / f"{label.replace(' ', '_')}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [*program, "--uri", self.uri, *args],
            cwd=cwd,
            env=env if env is not None else program_env(),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
        )
        self.started = time.monotonic()
        self.ready_s: float | None = None

    def log(self) -> str:
        """The end of its log."""
        return self.log_path.read_text(errors="replace")[-4000:]

    async def wait_ready(self, timeout: float = 1800.0) -> float:
        """Seconds from the start until its log says Ready; raises if it exits or times out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.label} exited with {self.proc.returncode}:\n{self.log()}"
                )
            if b"Ready" in self.log_path.read_bytes():
                self.ready_s = time.monotonic() - self.started
                return self.ready_s
            await asyncio.sleep(0.1)
        raise TimeoutError(f"{self.label} not ready after {timeout:.0f} s:\n{self.log()}")

    def usage(self) -> tuple[int, int, int]:
        """(RSS bytes, open fds, threads) of the server process now."""
        import psutil

        ps = psutil.Process(self.proc.pid)
        return ps.memory_info().rss, ps.num_fds(), ps.num_threads()

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, then SIGKILL after `timeout`; its exit status (-9 when killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return -9
        finally:
            self._log.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
