"""Whether this CPU's int8 kernels saturate on full-range weights; the one reader of
`/proc/cpuinfo` for the int8 package (`cpuinfo_value`: also the CPU model of a measurement).

ONNX Runtime (and OpenVINO) multiply uint8 activations by int8 weights on x86-64 with
`VPMADDUBSW` unless the CPU has VNNI: that instruction adds two products into a signed
16-bit lane, which saturates when both are large (255 × 127 × 2 > 32767). The result is
not an occasional rounding: on model_small the int8 decoder's audible-band SNR fell from
17.3 dB to 6.8 dB (docs/synthesizer.md, "int8 on CPUs without VNNI"). Weights in 7 bits
(`QuantSettings.reduce_range`) keep every pair's sum in range. CPUs with VNNI
(`vpdpbusd` adds into 32 bits) and ARM's int8 kernels (widening multiplies, `sdot`/`udot`)
do not saturate, so they keep the eighth bit.
"""

from __future__ import annotations

import functools
import logging
import platform
from collections.abc import Collection
from pathlib import Path

_LOGGER = logging.getLogger(__name__)

CPUINFO = Path("/proc/cpuinfo")
VNNI_FLAGS = frozenset({"avx512_vnni", "avx_vnni"})
"""`/proc/cpuinfo` flags of the x86 dot-product instructions that add into 32 bits."""
_X86 = frozenset({"x86_64", "amd64", "i386", "i686", "x86"})


def saturates(machine: str, flags: frozenset[str] | None) -> bool:
    """Whether uint8 × int8 products saturate on a CPU of architecture `machine`
    (`platform.machine()`) with these `/proc/cpuinfo` flags (None: not known, as on a
    system without `/proc`; an x86 CPU is then taken to saturate, the safe side)."""
    if machine.lower() not in _X86:
        return False
    if flags is None:
        return True
    return not (flags & VNNI_FLAGS)


def read_cpuinfo() -> str:
    """`/proc/cpuinfo`'s text ("" where there is none)."""
    try:
        return CPUINFO.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def cpuinfo_value(cpuinfo: str, keys: Collection[str]) -> str | None:
    """The value of the first line of `/proc/cpuinfo`'s text whose key is one of `keys`
    (None: no such line)."""
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in keys:
            return value.strip()
    return None


def cpu_flags(cpuinfo: str) -> frozenset[str] | None:
    """The flags of the first processor in `/proc/cpuinfo`'s text (None: no flags line)."""
    value = cpuinfo_value(cpuinfo, ("flags",))
    return None if value is None else frozenset(value.split())


@functools.lru_cache(maxsize=1)
def int8_kernels_saturate() -> bool:
    """`saturates` for this machine (read once per process)."""
    result = saturates(platform.machine(), cpu_flags(read_cpuinfo()))
    _LOGGER.debug(
        "int8 kernels on this %s CPU %s", platform.machine(), "saturate" if result else "do not"
    )
    return result


def int8_gain(machine: str, flags: frozenset[str] | None) -> str:
    """What int8 gains on a CPU of this kind (architecture `machine`, `/proc/cpuinfo`
    `flags`), as measured or estimated for the full-size voice (random weights) — the one
    place these figures live; `auto` quotes them when int8 is not made yet."""
    kind = machine.lower()
    if kind in _X86:
        if flags is not None and flags & VNNI_FLAGS:
            return (
                "on x86 CPUs with VNNI its decoder ran in 0.53× fp32's time (measured: a 2-core "
                "Xeon with AVX-512 VNNI)"
            )
        return (
            "on x86 CPUs without VNNI it ran in 0.51–0.54× fp32's time (measured: a 2-core "
            "EPYC with AVX2, 7-bit weights)"
        )
    if kind in ("aarch64", "arm64"):
        return (
            "on ARM boards its decoder is estimated at 0.35–0.89× fp32's time (Cortex-A55/A76/"
            "A72 instruction counts: docs/arm-evidence.md)"
        )
    return "on this CPU its gain has not been measured"


def int8_gain_here() -> str:
    """`int8_gain` for this machine."""
    return int8_gain(platform.machine(), cpu_flags(read_cpuinfo()))
