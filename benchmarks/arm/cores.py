"""Per-core throughput of the instruction classes `insn_count.c` counts, and a cycle estimate.

Data, not measurement. Each core's figures are those of LLVM's AArch64 scheduling model for
it (llvm/lib/Target/AArch64/AArch64Sched*.td), which transcribe Arm's Software Optimization
Guides (SOG) into issue pipes and the pipe slots each instruction takes:

- Cortex-A72 (Raspberry Pi 4, CM4 / Home Assistant Yellow; Armv8.0, no dot product):
  `AArch64SchedA57.td` (LLVM schedules -mcpu=cortex-a72 with the Cortex-A57 model; "Cortex-A57
  SOG", UAN 0015B; the A72's "Cortex-A72 SOG", UAN 0016A, has the same pipes: two FP/ASIMD
  F0/F1, one load L, one store S, two integer, one multi-cycle, one branch; 3-wide decode).
  A 128-bit (Q-form) FP/ASIMD instruction takes both FP pipes (`A57WriteFPVMAQ`: [V, V]), so
  FMLA .4s issues once a cycle: 4 fp32 multiply-accumulates (MACs) per cycle. Integer
  multiplies ([SU]MULL, [SU]MLAL, MUL, MLA) issue on F0 only (`A57UnitW`), 8 int8 MACs a
  cycle with the widening forms; SADALP/UADALP on F1 only (`A57UnitX`).
- Cortex-A76 (Raspberry Pi 5; Armv8.2 with dot product and fp16): `AArch64SchedNeoverseN1.td`
  ("Arm Neoverse N1 SOG"; the N1 is Arm's server derivative of the A76 core, same pipes): two
  128-bit ASIMD pipes V0/V1, any FMLA/SDOT/UDOT (any width) on either (2 a cycle: 8 fp32,
  16 fp16 or 32 int8 MACs), integer multiplies on V0 only, SADALP/UADALP on V1 only, two
  load/store address pipes, two store-data pipes, three integer pipes, one branch; 4-wide.
- Cortex-A55 (RK3566 / Home Assistant Green; Armv8.2, dot product, fp16; in order):
  `AArch64SchedA55.td` ("Cortex-A55 SOG", ARM-EPM-128372): dual issue; the NEON datapath is
  two 64-bit halves, so a Q-form instruction takes both (`CortexA55WriteVq`: [res, res]):
  one FMLA .4s or SDOT .16b a cycle (4 fp32 or 16 int8 MACs); one load pipe moving 64 bits a
  cycle (a 128-bit load takes it two cycles), one store pipe, two integer ALUs, one branch.

`cycles(counts, core)` is a throughput bound: for each pipe (group), the slots the counted
instructions need divided by the slots it has a cycle; the largest wins. It ignores latency,
dependencies, cache misses and memory bandwidth — fine for the dense inner loops that are
nearly all of a decoder's instructions, optimistic for an in-order core (A55), and it says
nothing about absolute speed. Ratios of two precisions' bounds on one core are the figure
this is for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

CLASSES = (
    "dot.d", "dot.q", "mmla", "imul.d", "imul.q", "padal.d", "padal.q",
    "f32mla.d", "f32mla.q", "f16mla.d", "f16mla.q", "f16other", "fvecother",
    "simdother.d", "simdother.q", "fpscalar", "load", "store", "load.q",
    "branch", "scalar",
)  # fmt: skip
"""The plugin's classes, in its order (insn_classes.h)."""

SIMD_D = ("dot.d", "imul.d", "padal.d", "f32mla.d", "f16mla.d", "simdother.d")
SIMD_Q = ("dot.q", "mmla", "imul.q", "padal.q", "f32mla.q", "f16mla.q", "simdother.q")
SIMD_ANY = ("f16other", "fvecother")  # width not recorded: counted as Q-form (most are)


@dataclass(frozen=True)
class Core:
    name: str
    source: str
    pipes: Mapping[str, float]
    """Slots a cycle of each pipe (group)."""
    slots: Mapping[str, Mapping[str, float]]
    """Per class: the slots one instruction takes in each pipe (group)."""


def _slots(
    simd: str,
    q_cost: float,
    long_q_cost: float,
    imul: str,
    padal: str,
    load: Mapping[str, float],
    loadq_extra: Mapping[str, float],
    store: Mapping[str, float],
    scalar: str,
) -> dict[str, dict[str, float]]:
    s: dict[str, dict[str, float]] = {}
    for c in SIMD_D:
        s[c] = {simd: 1.0}
    for c in (*SIMD_Q, *SIMD_ANY):
        s[c] = {simd: q_cost}
    # widening multiplies and pairwise accumulates: one pipe whatever the width on A57/A72
    # and N1/A76 (on their F0/V0 or F1/V1 alone), both halves for Q-forms on the A55
    for c, pipe in (("imul", imul), ("padal", padal)):
        s[f"{c}.q"] = {simd: long_q_cost}
        for form in ("d", "q"):
            if pipe != simd:
                s[f"{c}.{form}"][pipe] = 1.0
    s["fpscalar"] = {simd: 1.0}
    s["load"] = dict(load)
    s["load.q"] = dict(loadq_extra)  # on top of its count in "load"
    s["store"] = dict(store)
    s["branch"] = {"branch": 1.0}
    s["scalar"] = {scalar: 1.0}
    for c in s:
        if c != "load.q":
            s[c]["issue"] = 1.0
    return s


CORES: dict[str, Core] = {
    "cortex-a72": Core(
        "Cortex-A72",
        "LLVM AArch64SchedA57.td (Cortex-A57/A72 SOG, UAN 0015B / UAN 0016A)",
        {"F0F1": 2, "F0": 1, "F1": 1, "L": 1, "S": 1, "I": 2, "branch": 1, "issue": 3},
        _slots("F0F1", 2.0, 1.0, "F0", "F1", {"L": 1}, {}, {"S": 1}, "I"),
    ),
    "cortex-a76": Core(
        "Cortex-A76",
        "LLVM AArch64SchedNeoverseN1.td (Neoverse N1 SOG; the N1 is the A76 core)",
        {"V": 2, "V0": 1, "V1": 1, "L": 2, "D": 2, "I": 3, "branch": 1, "issue": 4},
        _slots("V", 1.0, 1.0, "V0", "V1", {"L": 1}, {}, {"L": 1, "D": 1}, "I"),
    ),
    "cortex-a55": Core(
        "Cortex-A55",
        "LLVM AArch64SchedA55.td (Cortex-A55 SOG, ARM-EPM-128372)",
        {"NEON": 2, "Ld": 1, "St": 1, "ALU": 2, "branch": 1, "issue": 2},
        _slots("NEON", 2.0, 2.0, "NEON", "NEON", {"Ld": 1}, {"Ld": 1}, {"St": 1}, "ALU"),
    ),
}

CORES["cortex-a72-q128"] = Core(
    "Cortex-A72 (sensitivity: a 128-bit FP/ASIMD instruction in one pipe)",
    "the A57 model above with Q-forms taking one of F0/F1, not both: FMLA .4s twice a cycle",
    CORES["cortex-a72"].pipes,
    _slots("F0F1", 1.0, 1.0, "F0", "F1", {"L": 1}, {}, {"S": 1}, "I"),
)
"""Whether the A72 issues a Q-form FMLA to one pipe or both is the one figure here that decides
int8 against fp32 on a Pi 4 (LLVM's model: both; the integer multiplies int8 uses issue on F0
alone either way), so the report shows both."""

MODELS = {
    "cortex-a72": ("cortex-a72", "cortex-a72-q128"),
    "cortex-a76": ("cortex-a76",),
    "cortex-a55": ("cortex-a55",),
}
"""The core models each CPU target's counts are weighed with (the first: the cited one)."""


def pipe_cycles(counts: Mapping[str, float], core: Core) -> dict[str, float]:
    """Cycles each pipe (group) of `core` needs for `counts` (instructions by class)."""
    need = dict.fromkeys(core.pipes, 0.0)
    for cls, n in counts.items():
        for pipe, slots in core.slots.get(cls, {}).items():
            need[pipe] += n * slots
    return {pipe: need[pipe] / core.pipes[pipe] for pipe in need}


def cycles(counts: Mapping[str, float], core: Core) -> tuple[float, str]:
    """The throughput bound (cycles) of `counts` on `core`, and the pipe that sets it."""
    per = pipe_cycles(counts, core)
    pipe = max(per, key=lambda p: per[p])
    return per[pipe], pipe
