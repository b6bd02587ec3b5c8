"""A CPU-quota cgroup: a slower machine for one process (a server under test or benchmark).

Processes moved into a `CpuQuota` get at most `cpus` CPUs' worth of time per scheduling
period, whatever the machine has free: a 2-core x86 made to run a voice as slowly as a
Raspberry Pi would. cgroup v1 (`cpu` controller: `cpu.cfs_period_us`, `cpu.cfs_quota_us`)
or v2 (`cpu.max`), whichever this machine mounts with the cpu controller; both need root.

    reason = quota_unavailable()            # None, or why not (for pytest.skip)
    with CpuQuota("bench", cpus=0.2) as cg:  # created here ...
        cg.add(server_pid)                   # all its threads, and what it starts later
        cg.set(0.1)                          # change the quota at any time
        cg.throttled()                       # periods in which it was held back
    # ... and removed here (processes still in it go back to the parent first)

A short period (10 ms by default) spreads the quota evenly: with 100 ms a process at 10 %
would run 10 ms and then stop for 90 ms, which a listener would hear as stalls the real slow
board does not have. The kernel's smallest quota is 1 ms, so below 10 % of a CPU the period
is lengthened to fit (2 %: 1 ms every 50 ms).
"""

from __future__ import annotations

import gzip
import itertools
import math
import os
from pathlib import Path

PERIOD_US = 10_000
"""Scheduling period (10 ms)."""
MIN_QUOTA_US = 1_000
"""The kernel's smallest quota per period (1 ms): below 10 % of a CPU the period grows."""
MAX_PERIOD_US = 1_000_000
"""The kernel's longest period (1 s)."""
DEFAULT_HZ = 250
"""The kernel's tick rate where its build configuration cannot be read (Debian's default)."""

_MOUNTS = Path("/proc/self/mounts")
_counter = itertools.count()


def _cpu_root() -> tuple[Path, int] | None:
    """(mount point, cgroup version) of a hierarchy with the cpu controller, v1 first."""
    try:
        lines = _MOUNTS.read_text().splitlines()
    except OSError:
        return None
    v2: Path | None = None
    for line in lines:
        fields = line.split()
        if len(fields) < 4:
            continue
        point, kind, opts = Path(fields[1]), fields[2], fields[3].split(",")
        if kind == "cgroup" and "cpu" in opts:
            return point, 1
        if kind == "cgroup2" and v2 is None:
            try:
                if "cpu" in (point / "cgroup.controllers").read_text().split():
                    v2 = point
            except OSError:
                pass
    return (v2, 2) if v2 is not None else None


def kernel_tick_us() -> int:
    """The kernel's scheduler tick (µs), from its build configuration (`CONFIG_HZ` in
    /proc/config.gz or /boot/config-<release>), else `DEFAULT_HZ`'s."""
    for path in (Path("/proc/config.gz"), Path(f"/boot/config-{os.uname().release}")):
        try:
            data = path.read_bytes()
            text = (gzip.decompress(data) if path.suffix == ".gz" else data).decode()
        except (OSError, EOFError, gzip.BadGzipFile):
            continue
        for line in text.splitlines():
            if line.startswith("CONFIG_HZ="):
                return 1_000_000 // int(line.split("=", 1)[1])
    return 1_000_000 // DEFAULT_HZ


def quota_unavailable() -> str | None:
    """None where a CPU-quota cgroup can be made here; else the reason, for a skip."""
    found = _cpu_root()
    if found is None:
        return "no cgroup hierarchy with the cpu controller is mounted (v1 cpu or v2 cpu.max)"
    root, version = found
    probe = root / f"hayakoe-probe-{os.getpid()}-{next(_counter)}"
    try:
        probe.mkdir()
    except OSError as err:
        return f"cannot create a cgroup under {root} (needs root): {err}"
    try:
        name = "cpu.cfs_quota_us" if version == 1 else "cpu.max"
        if not (probe / name).exists():
            return f"{root} (cgroup v{version}) has no {name} (cpu controller not enabled there)"
    finally:
        probe.rmdir()
    return None


class CpuQuota:
    """One cgroup limited to `cpus` CPUs (0.25: a quarter of one core's time)."""

    def __init__(self, name: str, cpus: float, period_us: int = PERIOD_US) -> None:
        found = _cpu_root()
        if found is None:
            raise RuntimeError("no cgroup hierarchy with the cpu controller is mounted")
        self.root, self.version = found
        self.path = self.root / f"hayakoe-{name}-{os.getpid()}-{next(_counter)}"
        self.period_us = period_us
        self.period = period_us
        """The period in use (µs): `period_us`, or longer for a small quota."""
        self.cpus = cpus
        """The share in use (CPUs), as the kernel was given it."""
        self.quota = MIN_QUOTA_US
        """The quota in use (µs per period)."""

    def __enter__(self) -> CpuQuota:
        self.create()
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def create(self) -> None:
        if self.version == 2:
            # The parent must hand the cpu controller down to its children.
            control = self.root / "cgroup.subtree_control"
            if "cpu" not in control.read_text().split():
                control.write_text("+cpu")
        self.path.mkdir()
        self.set(self.cpus)

    def set(self, cpus: float) -> None:
        """Allow `cpus` CPUs' time per period from now on."""
        if cpus <= 0:
            raise ValueError(f"cpus must be positive, got {cpus}")
        period = min(MAX_PERIOD_US, max(self.period_us, math.ceil(MIN_QUOTA_US / cpus)))
        quota = max(MIN_QUOTA_US, round(cpus * period))
        if self.version == 1:
            (self.path / "cpu.cfs_quota_us").write_text("-1")  # any period is accepted then
            (self.path / "cpu.cfs_period_us").write_text(str(period))
            (self.path / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            (self.path / "cpu.max").write_text(f"{quota} {period}")
        self.period, self.quota = period, quota
        self.cpus = quota / period

    def longest_stall_us(self) -> int:
        """The longest a process in the cgroup may be held back at once, whatever it does:
        the kernel charges CPU time at its tick, so a burst can overrun the quota by up to a
        tick, and the debt is repaid from the following periods' quotas (CFS bandwidth
        control): up to 1 + tick/quota periods. At 1 ms per ~100 ms and a 4 ms tick, about
        0.5 s of silence that a steadily running slow board never makes."""
        return (1 + math.ceil(kernel_tick_us() / self.quota)) * self.period

    def add(self, pid: int) -> None:
        """Move process `pid` (every thread of it) into the cgroup."""
        (self.path / "cgroup.procs").write_text(str(pid))

    def pids(self) -> list[int]:
        return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]

    def throttled(self) -> int:
        """Periods in which the cgroup used up its quota and was held back."""
        for line in (self.path / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "nr_throttled":
                return int(value)
        return 0

    def remove(self) -> None:
        """Move what is still inside back to the parent and delete the cgroup."""
        if not self.path.is_dir():
            return
        parent = self.path.parent / "cgroup.procs"
        for pid in self.pids():
            try:
                parent.write_text(str(pid))
            except OSError:  # it exited meanwhile
                pass
        self.path.rmdir()
