"""deploy/haproxy/haproxy.cfg, run as it is by Debian's HAProxy in front of two real server
processes on loopback (addresses through the environment variables the file reads).

Requests go through the proxy while both replicas serve; then one replica is killed
(SIGKILL: a crash, not a drain) with requests in flight. The proxy's Wyoming `describe`
health check, or the refused connections of real traffic, must take it out: every request
started after the proxy logs it DOWN gets audio from the other replica, and the requests
before the kill all got audio from both.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest

from tests.helpers.net import free_port
from tests.helpers.paths import REPO_ROOT
from tests.helpers.program import Program
from wyoming_hayakoe.client import ClientError, WyomingClient

CONFIG = REPO_ROOT / "deploy" / "haproxy" / "haproxy.cfg"
HAPROXY = shutil.which("haproxy") or next(
    (p for p in ("/usr/sbin/haproxy",) if os.access(p, os.X_OK)), None
)
TEXT = "テストです。"
REQUESTS = 100
KILL_AFTER = 20
"""In the second round, the replica is killed as request KILL_AFTER + 1 starts."""
CONCURRENCY = 4

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        HAPROXY is None, reason="HAProxy is not installed (apt-get install haproxy; .ci/run does)"
    ),
]


@dataclass
class Proxy:
    """A running HAProxy and what its log said, with the time each line arrived."""

    proc: asyncio.subprocess.Process
    lines: list[tuple[float, str]] = field(default_factory=list)

    def first(self, pattern: str) -> float | None:
        """Arrival time of the first log line matching `pattern`."""
        rx = re.compile(pattern)
        return next((t for t, line in self.lines if rx.search(line)), None)

    def served_by(self) -> dict[str, int]:
        """Connections per backend server, from the tcplog lines."""
        counts: dict[str, int] = {}
        for _, line in self.lines:
            if m := re.search(r" hayakoe/(hayakoe\d) ", line):
                counts[m.group(1)] = counts.get(m.group(1), 0) + 1
        return counts

    @property
    def log(self) -> str:
        return "".join(line for _, line in self.lines)


@asynccontextmanager
async def _haproxy(bind: str, replicas: list[str]) -> AsyncIterator[Proxy]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAYAKOE_")}
    env["HAYAKOE_LB_BIND"] = bind
    for n, address in enumerate(replicas, start=1):
        env[f"HAYAKOE_REPLICA_{n}"] = address
    assert HAPROXY is not None
    proc = await asyncio.create_subprocess_exec(
        HAPROXY,
        "-db",
        "-f",
        str(CONFIG),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    proxy = Proxy(proc)

    async def read() -> None:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            proxy.lines.append((time.monotonic(), line.decode(errors="replace")))

    reader = asyncio.create_task(read())
    try:
        yield proxy
    finally:
        if proc.returncode is None:
            proc.terminate()
        await asyncio.wait_for(proc.wait(), 10)
        await reader


@dataclass
class Outcome:
    index: int
    started: float
    finished: float
    error: str | None
    seconds: float = 0.0


async def _one(index: int, port: int) -> Outcome:
    started = time.monotonic()
    try:
        spoken = await WyomingClient(f"tcp://127.0.0.1:{port}", timeout=60).speak(TEXT)
    # A replica killed mid-answer shows as a cut stream (ConnectionClosed).
    except ClientError as err:
        return Outcome(index, started, time.monotonic(), f"{type(err).__name__}: {err}")
    error = None if spoken.seconds > 0.3 and spoken.rms > 50 else "no audible audio"
    return Outcome(index, started, time.monotonic(), error, spoken.seconds)


async def _run(
    count: int, port: int, first_index: int = 0, on_start: Callable[[int], None] | None = None
) -> list[Outcome]:
    """`count` requests through the proxy, CONCURRENCY at a time; `on_start(n)` is called
    as the n-th (from 1) starts."""
    indices = iter(range(first_index, first_index + count))
    outcomes: list[Outcome] = []
    started = 0

    async def worker() -> None:
        nonlocal started
        for index in indices:
            started += 1
            if on_start is not None:
                on_start(started)
            outcomes.append(await _one(index, port))

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return outcomes


async def test_haproxy_keeps_answering_when_a_replica_dies(capsys):
    ports = [free_port(), free_port()]
    lb_port = free_port()
    servers = [Program("--uri", f"tcp://127.0.0.1:{p}", "--voice", "openjtalk-mei") for p in ports]
    async with servers[0] as victim, servers[1] as survivor:
        await asyncio.gather(victim.wait_ready(), survivor.wait_ready())
        async with _haproxy(f"127.0.0.1:{lb_port}", [f"127.0.0.1:{p}" for p in ports]) as proxy:
            await WyomingClient(f"tcp://127.0.0.1:{lb_port}").wait_until_answering(30)
            # The unused third slot (its default name does not resolve) must not break the
            # proxy; both live replicas pass their describe checks before traffic starts.
            assert proxy.proc.returncode is None, proxy.log

            # 1. both replicas up: every request gets audio, from both
            healthy = await _run(REQUESTS, lb_port)
            await asyncio.sleep(0.5)  # tcplog lines are written as connections close
            served_healthy = proxy.served_by()

            # 2. the same again, one replica killed (SIGKILL, requests in flight on it)
            killed_at: float | None = None

            def kill(n: int) -> None:
                nonlocal killed_at
                if n == KILL_AFTER + 1:
                    victim.proc.kill()
                    killed_at = time.monotonic()

            crash = await _run(REQUESTS, lb_port, first_index=REQUESTS, on_start=kill)
            assert killed_at is not None
            await victim.proc.wait()
            # The kill is noticed: by the describe check or by refused connections.
            down_at = await _wait_for(proxy, r"hayakoe/hayakoe1 is DOWN", timeout=10)
            # A fresh round after the proxy noticed: all on the survivor.
            crash += await _run(10, lb_port, first_index=2 * REQUESTS)

    failed_healthy = [(o.index, o.error) for o in healthy if o.error]
    window = [o for o in crash if killed_at <= o.started < down_at]
    later = [o for o in crash if o.started >= down_at]
    failed_crash = [o for o in crash if o.error]
    with capsys.disabled():
        print(
            f"\nHAProxy: {len(healthy) - len(failed_healthy)} of {len(healthy)} ok with both "
            f"replicas (per replica: {served_healthy}); replica killed after {KILL_AFTER} of the "
            f"next {REQUESTS}: {len(failed_crash)} failed (in flight on it or started before "
            f"DOWN), DOWN {down_at - killed_at:.2f} s after the kill, "
            f"{sum(1 for o in later if not o.error)} of {len(later)} ok after"
        )
    assert not failed_healthy, failed_healthy
    assert served_healthy.get("hayakoe1", 0) > 0 and served_healthy.get("hayakoe2", 0) > 0
    assert later, "no request started after the proxy noticed"
    assert all(o.error is None for o in later), [(o.index, o.error) for o in later if o.error]
    # only what was in flight on the victim, or started before the proxy noticed, may fail
    assert all(o.started < down_at for o in failed_crash)
    assert len(failed_crash) <= CONCURRENCY + len(window), [o.error for o in failed_crash]


async def _wait_for(proxy: Proxy, pattern: str, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while (at := proxy.first(pattern)) is None:
        assert time.monotonic() < deadline, (
            f"no log line /{pattern}/ in {timeout:g} s:\n{proxy.log}"
        )
        await asyncio.sleep(0.1)
    return at


async def test_describe_check_tells_a_wyoming_server_from_an_open_port(capsys):
    """A replica that accepts connections but never answers `describe` (hung, or not a
    Wyoming server) is DOWN by the layer-7 check; a killed one is found by the check alone,
    with no client traffic."""
    silent_connections: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        silent_connections.append(writer)  # read nothing, answer nothing

    silent_server = await asyncio.start_server(silent, "127.0.0.1", 0)
    silent_port = silent_server.sockets[0].getsockname()[1]
    port, lb_port = free_port(), free_port()
    async with Program("--uri", f"tcp://127.0.0.1:{port}", "--voice", "openjtalk-mei") as server:
        await server.wait_ready()
        replicas = [f"127.0.0.1:{port}", f"127.0.0.1:{silent_port}"]
        async with _haproxy(f"127.0.0.1:{lb_port}", replicas) as proxy:
            await _wait_for(proxy, r"hayakoe/hayakoe2 is DOWN, reason: Layer7", timeout=20)
            assert silent_connections, "the check never connected to the silent replica"
            # Every request goes to the one real server.
            for _ in range(5):
                spoken = await WyomingClient(f"tcp://127.0.0.1:{lb_port}", timeout=60).speak(TEXT)
                assert spoken.seconds > 0.3
            assert proxy.first(r"hayakoe/hayakoe1 is DOWN") is None, proxy.log
            server.proc.kill()
            killed_at = time.monotonic()
            down_at = await _wait_for(proxy, r"hayakoe/hayakoe1 is DOWN", timeout=15)
            await server.proc.wait()
    # Health checks hang up after `info`: the server takes that in its stride.
    assert "Traceback" not in server.log and "ERROR" not in server.log, server.log
    silent_server.close()
    for writer in silent_connections:
        writer.close()
    with capsys.disabled():
        print(
            f"\nHAProxy: killed replica DOWN by the describe check alone after "
            f"{down_at - killed_at:.2f} s"
        )
    assert down_at - killed_at < 5.0
