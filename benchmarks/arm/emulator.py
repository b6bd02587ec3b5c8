"""The arm64 root under qemu user-mode emulation, the CPU targets and the counting plugin.

Adapted from the retired `benchmarks/arm/evidence.py` (commit fb9978f): one private mount
namespace per emulated run (proc, the target's /proc/cpuinfo, sysfs, the work folder), a
chroot into the root that `root.sh` made, and the host's dynamically linked qemu-aarch64
(the one that loads TCG plugins) with `-cpu` of the target. Needs root.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_LOG = logging.getLogger("benchmarks.arm")

HERE = Path(__file__).resolve().parent
DEFAULT_ROOT = Path(os.environ.get("ARM64_ROOT", "/var/tmp/wyoming-hayakoe-arm64-evidence"))
VENV_PYTHON = "/opt/venv-evidence/bin/python"
BUNDLE = "/opt/qemu-host"  # inside the root (root.sh)
INSIDE_WORK = "/opt/arm-evidence"  # the work folder, bind-mounted inside the root


@dataclass(frozen=True)
class CpuTarget:
    """A qemu CPU model and the /proc/cpuinfo identity shown with it."""

    key: str
    qemu_cpu: str
    part: int
    variant: int
    revision: int
    features: str
    boards: str
    note: str = ""

    def cpuinfo(self, count: int) -> str:
        one = (
            "processor\t: {i}\nBogoMIPS\t: 50.00\nFeatures\t: {f}\nCPU implementer\t: 0x41\n"
            "CPU architecture: 8\nCPU variant\t: {v:#x}\nCPU part\t: {p:#05x}\n"
            "CPU revision\t: {r}\n\n"
        )
        return "".join(
            one.format(i=i, f=self.features, v=self.variant, p=self.part, r=self.revision)
            for i in range(count)
        )


V80 = "fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid"
V82 = V80 + " atomics fphp asimdhp asimdrdm lrcpc dcpop asimddp"
TARGETS = {
    "cortex-a72": CpuTarget(
        "cortex-a72", "cortex-a72", 0xD08, 0, 3, V80, "Raspberry Pi 4, CM4 (HA Yellow)"
    ),
    "cortex-a76": CpuTarget("cortex-a76", "cortex-a76", 0xD0B, 4, 1, V82, "Raspberry Pi 5"),
    "cortex-a55": CpuTarget(
        "cortex-a55",
        "cortex-a76",
        0xD05,
        2,
        0,
        V82,
        "RK3566 (HA Green)",
        "qemu 7.2 has no cortex-a55 model: the cortex-a76 model (the same Armv8.2 features: "
        "dot product, fp16) with an A55's /proc/cpuinfo (part 0xd05), so cpuinfo (in ONNX "
        "Runtime and in XNNPACK) takes the core for an A55 and may choose its A55 kernels",
    ),
}


def _run(cmd: list[str], timeout: float, **kw: Any) -> subprocess.CompletedProcess[str]:
    _LOG.debug("$ %s", " ".join(cmd))
    return subprocess.run(cmd, text=True, capture_output=True, timeout=timeout, check=False, **kw)


def plugin_header(work: Path) -> Path:
    """The folder holding qemu-plugin.h: $QEMU_PLUGIN_INCLUDE, an installed one, or the
    header extracted from Debian's qemu source package (`apt-get source --download-only`,
    needs a deb-src entry: root.sh adds one) into `work`."""
    env = os.environ.get("QEMU_PLUGIN_INCLUDE")
    candidates = [Path(env)] if env else []
    candidates += [Path("/usr/include"), Path("/usr/include/qemu"), work / "qemu-include"]
    for c in candidates:
        if (c / "qemu-plugin.h").is_file():
            return c
    src = work / "qemu-source"
    src.mkdir(parents=True, exist_ok=True)
    got = _run(["apt-get", "source", "--download-only", "qemu"], 900, cwd=src)
    tarballs = sorted(src.glob("qemu_*.orig.tar.*"))
    if not tarballs:
        raise RuntimeError(
            "no qemu-plugin.h: set QEMU_PLUGIN_INCLUDE, or add a deb-src line for Debian so "
            f"`apt-get source qemu` works ({got.stderr.strip()[-300:]})"
        )
    out = work / "qemu-include"
    out.mkdir(parents=True, exist_ok=True)
    listing = _run(["tar", "-tf", str(tarballs[-1])], 600).stdout.splitlines()
    member = next(m for m in listing if m.endswith("include/qemu/qemu-plugin.h"))
    data = subprocess.run(
        ["tar", "-xOf", str(tarballs[-1]), member], capture_output=True, check=True
    )
    (out / "qemu-plugin.h").write_bytes(data.stdout)
    return out


def build_plugin(work: Path) -> Path:
    """Compile insn_count.c → work/insn_count.so."""
    include = plugin_header(work)
    out = work / "insn_count.so"
    cc = os.environ.get("CC", "cc")
    cmd = [cc, "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-shared", "-fPIC",
           f"-I{include}", f"-I{HERE}", "-o", str(out), str(HERE / "insn_count.c")]  # fmt: skip
    got = _run(cmd, 300)
    if got.returncode:
        raise RuntimeError(f"building the plugin failed: {got.stderr.strip()}")
    return out


def lacking(root: Path) -> str | None:
    """Why the emulated runs cannot be made here, or None."""
    if os.geteuid() != 0:
        return "needs root (mount namespaces, chroot)"
    qemu = root / BUNDLE.lstrip("/") / "qemu-aarch64"
    py = root / VENV_PYTHON.lstrip("/")
    if not qemu.is_file() or not (py.is_file() or py.is_symlink()):
        return (
            f"{root}: no arm64 root with {BUNDLE} and {VENV_PYTHON} "
            "(make it with `sudo XNNPACK=1 bash benchmarks/arm/root.sh`)"
        )
    return None


class Emulator:
    """Runs a guest script (copied into the work folder) in the arm64 root under the host's
    qemu-aarch64, one private mount namespace per run."""

    def __init__(self, root: Path, work: Path, plugin: Path | None) -> None:
        why = lacking(root)
        if why:
            raise RuntimeError(why)
        self.root, self.work, self.plugin = root, work, plugin
        shutil.copy(HERE / "guest.py", work / "guest.py")
        if plugin is not None and plugin.resolve() != (work / "insn_count.so").resolve():
            shutil.copy(plugin, work / "insn_count.so")

    def qemu_version(self) -> str:
        return (self.root / BUNDLE.lstrip("/") / "VERSION").read_text().strip()

    def run(
        self,
        target: CpuTarget,
        args: list[str],
        *,
        count: str | None = None,
        timeout: float = 3600,
    ) -> tuple[str, str]:
        """(stdout of guest.py, the plugin's log) for `args` on `target`; with `count`, the
        plugin counts and logs into the work folder's file of that name."""
        cpuinfo = self.work / f"cpuinfo-{target.key}"
        text = target.cpuinfo(os.cpu_count() or 1)
        if not cpuinfo.is_file() or cpuinfo.read_text() != text:  # runs in parallel share it
            cpuinfo.write_text(text)
        log = self.work / (count or f"plugin-{target.key}.log")
        log.unlink(missing_ok=True)
        ld = f"{BUNDLE}/lib/ld-linux-x86-64.so.2"
        qemu = [ld, "--library-path", f"{BUNDLE}/lib", f"{BUNDLE}/qemu-aarch64",
                "-cpu", target.qemu_cpu]  # fmt: skip
        if count:
            qemu += ["-plugin", f"{INSIDE_WORK}/insn_count.so", "-d", "plugin",
                     "-D", f"{INSIDE_WORK}/{log.name}"]  # fmt: skip
        inner = [*qemu, VENV_PYTHON, f"{INSIDE_WORK}/guest.py", *args]
        script = (
            'set -e; R="$1"; shift; mkdir -p "$R/proc" "$R$INSIDE"; '
            'mount -t proc proc "$R/proc"; mount --bind "$CPUINFO" "$R/proc/cpuinfo"; '
            'mkdir -p "$R/sys"; mount -t sysfs sysfs "$R/sys"; '
            'mount --bind "$WORK" "$R$INSIDE"; '
            'exec chroot "$R" /usr/bin/env -i HOME=/root LANG=C.UTF-8 '
            'PATH=/usr/local/bin:/usr/bin:/bin OMP_NUM_THREADS=1 "$@"'
        )
        cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
               str(self.root), *inner]  # fmt: skip
        env = {**os.environ, "CPUINFO": str(cpuinfo), "WORK": str(self.work), "INSIDE": INSIDE_WORK}
        t0 = time.monotonic()
        got = _run(cmd, timeout, env=env)
        _LOG.info("%s %s: %.0f s", target.key, " ".join(args[:2]), time.monotonic() - t0)
        if got.returncode:
            raise RuntimeError(
                f"{target.key} {args}: exit {got.returncode}: {got.stderr.strip()[-2000:]}"
            )
        return got.stdout, log.read_text() if log.is_file() else ""


def marks(log: str) -> list[dict[str, int]]:
    """The plugin's `mark` lines, in order, as {class: count} (plus "total")."""
    out = []
    for line in log.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[0] != "insn_count" or parts[1] != "mark":
            continue
        out.append({k: int(v) for k, v in (p.split("=", 1) for p in parts[3:])})
    return out


def phase_counts(log: str) -> list[dict[str, int]]:
    """Counts between consecutive markers."""
    m = marks(log)
    return [{k: b[k] - a[k] for k in b} for a, b in zip(m, m[1:], strict=False)]
