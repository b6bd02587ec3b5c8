"""The ARM evidence tools (benchmarks/arm/): the instruction classifier of the TCG plugin, the
cycle model, the plugin's log, and (where an arm64 root exists) the quick run end to end."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.arm import cores, evidence
from tests.helpers.paths import REPO_ROOT

REPO = REPO_ROOT
ARM = REPO / "benchmarks" / "arm"

# Encodings made by GNU as (binutils-aarch64-linux-gnu, `.arch armv8.6-a+fp16+dotprod+i8mm
# +fp16fml`) for the instructions in the comments, and the class each must count as.
ENCODINGS = [
    (0x4E829420, "dot.q"),  # sdot v0.4s, v1.16b, v2.16b
    (0x2E829420, "dot.d"),  # udot v0.2s, v1.8b, v2.8b
    (0x4FA2E020, "dot.q"),  # sdot v0.4s, v1.16b, v2.4b[1]
    (0x6FA5E883, "dot.q"),  # udot v3.4s, v4.16b, v5.4b[3]
    (0x4E829C20, "dot.q"),  # usdot v0.4s, v1.16b, v2.16b
    (0x4E82A420, "mmla"),  # smmla v0.4s, v1.16b, v2.16b
    (0x6E82A420, "mmla"),  # ummla v0.4s, v1.16b, v2.16b
    (0x2E22C020, "imul.d"),  # umull v0.8h, v1.8b, v2.8b
    (0x6E22C020, "imul.q"),  # umull2 v0.8h, v1.16b, v2.16b
    (0x0E228020, "imul.d"),  # smlal v0.8h, v1.8b, v2.8b
    (0x4E228020, "imul.q"),  # smlal2 v0.8h, v1.16b, v2.16b
    (0x2F622020, "imul.d"),  # umlal v0.4s, v1.4h, v2.h[2]
    (0x4EA29C20, "imul.q"),  # mul v0.4s, v1.4s, v2.4s
    (0x6F520020, "imul.q"),  # mla v0.8h, v1.8h, v2.h[1]
    (0x4FA28020, "imul.q"),  # mul v0.4s, v1.4s, v2.s[1]
    (0x6E606820, "padal.q"),  # uadalp v0.4s, v1.8h
    (0x0E606820, "padal.d"),  # sadalp v0.2s, v1.4h
    (0x4E22CC20, "f32mla.q"),  # fmla v0.4s, v1.4s, v2.4s
    (0x0E22CC20, "f32mla.d"),  # fmla v0.2s, v1.2s, v2.2s
    (0x4FA21820, "f32mla.q"),  # fmla v0.4s, v1.4s, v2.s[3]
    (0x6E22DC20, "f32mla.q"),  # fmul v0.4s, v1.4s, v2.4s
    (0x4EA2CC20, "f32mla.q"),  # fmls v0.4s, v1.4s, v2.4s
    (0x4E420C20, "f16mla.q"),  # fmla v0.8h, v1.8h, v2.8h
    (0x4F321820, "f16mla.q"),  # fmla v0.8h, v1.8h, v2.h[7]
    (0x6E421C20, "f16mla.q"),  # fmul v0.8h, v1.8h, v2.8h
    (0x4E22EC20, "f16mla.q"),  # fmlal v0.4s, v1.4h, v2.4h
    (0x4E421420, "f16other"),  # fadd v0.8h, v1.8h, v2.8h
    (0x4E22D420, "fvecother"),  # fadd v0.4s, v1.4s, v2.4s
    (0x4E22F420, "fvecother"),  # fmax v0.4s, v1.4s, v2.4s
    (0x6E22EC20, "fvecother"),  # facge v0.4s, v1.4s, v2.4s
    (0x4E62CC20, "fvecother"),  # fmla v0.2d, v1.2d, v2.2d
    (0x4EA28420, "simdother.q"),  # add v0.4s, v1.4s, v2.4s
    (0x0EA28420, "simdother.d"),  # add v0.2s, v1.2s, v2.2s
    (0x6E022020, "simdother.q"),  # ext v0.16b, v1.16b, v2.16b, #4
    (0x4E823820, "simdother.q"),  # zip1 v0.4s, v1.4s, v2.4s
    (0x4E040420, "simdother.q"),  # dup v0.4s, v1.s[0]
    (0x0F08A420, "simdother.d"),  # sxtl v0.8h, v1.8b
    (0x4F000400, "simdother.q"),  # movi v0.4s, #0x0
    (0x0E217820, "simdother.d"),  # fcvtl v0.4s, v1.4h
    (0x4E21D820, "simdother.q"),  # scvtf v0.4s, v1.4s
    (0x1E222820, "fpscalar"),  # fadd s0, s1, s2
    (0x1F020C20, "fpscalar"),  # fmadd s0, s1, s2, s3
    (0x5FA21020, "fpscalar"),  # fmla s0, s1, v2.s[1]
    (0x3DC00020, "load+q"),  # ldr q0, [x1]
    (0x3CC10C20, "load+q"),  # ldr q0, [x1, #16]!
    (0xACC10440, "load+q"),  # ldp q0, q1, [x2], #32
    (0x4CDFA060, "load+q"),  # ld1 {v0.16b, v1.16b}, [x3], #32
    (0x0C407060, "load"),  # ld1 {v0.8b}, [x3]
    (0xF9400020, "load"),  # ldr x0, [x1]
    (0xB8627820, "load"),  # ldr w0, [x1, x2, lsl #2]
    (0xA94007E0, "load"),  # ldp x0, x1, [sp]
    (0xBD400020, "load"),  # ldr s0, [x1]
    (0xB9800020, "load"),  # ldrsw x0, [x1]
    (0x580002C0, "load"),  # ldr x0, label
    (0xC85F7C20, "load"),  # ldxr x0, [x1]
    (0x4D40C820, "load+q"),  # ld1r {v0.4s}, [x1]
    (0xB8200041, "load"),  # ldadd w0, w1, [x2]
    (0x3D800020, "store"),  # str q0, [x1]
    (0xAD000420, "store"),  # stp q0, q1, [x1]
    (0x4C007820, "store"),  # st1 {v0.4s}, [x1]
    (0xF9000420, "store"),  # str x0, [x1, #8]
    (0xA9BF7BFD, "store"),  # stp x29, x30, [sp, #-16]!
    (0xC8027C20, "store"),  # stxr w2, x0, [x1]
    (0x1400000C, "branch"),  # b label
    (0x9400000B, "branch"),  # bl label
    (0x54000141, "branch"),  # b.ne label
    (0xB4000120, "branch"),  # cbz x0, label
    (0x37180100, "branch"),  # tbnz w0, #3, label
    (0xD65F03C0, "branch"),  # ret
    (0xD61F0020, "branch"),  # br x1
    (0x8B020020, "scalar"),  # add x0, x1, x2
    (0x9B020C20, "scalar"),  # madd x0, x1, x2, x3
    (0xD28000A0, "scalar"),  # mov x0, #0x5
    (0xD503201F, "scalar"),  # nop
    (0xD4000001, "scalar"),  # svc #0x0
]

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "insn_classes.h"
int main(int argc, char **argv) {
    for (int k = 1; k < argc; k++) {
        int q;
        int c = classify((uint32_t)strtoul(argv[k], NULL, 16), &q);
        printf("%s%s\n", class_names[c], (c == C_LOAD && q) ? "+q" : "");
    }
    return 0;
}
"""


def test_classes_agree_between_plugin_and_model() -> None:
    header = (ARM / "insn_classes.h").read_text()
    block = header[
        header.index("class_names[C_N] = {") : header.index("};", header.index("class_names"))
    ]
    names = [part.strip().strip('"') for part in block.split("{", 1)[1].split(",") if part.strip()]
    assert tuple(names) == cores.CLASSES


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_classifier_matches_the_assemblers_encodings(tmp_path: Path) -> None:
    src = tmp_path / "drv.c"
    src.write_text(DRIVER)
    exe = tmp_path / "drv"
    subprocess.run(
        ["cc", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{ARM}", "-o", str(exe), str(src)],
        check=True,
    )
    out = subprocess.run(
        [str(exe), *(f"{w:08x}" for w, _ in ENCODINGS)], check=True, capture_output=True, text=True
    ).stdout.split()
    wrong = [
        (f"{w:08x}", want, got)
        for (w, want), got in zip(ENCODINGS, out, strict=True)
        if want != got
    ]
    assert wrong == []


def test_cycle_model_follows_the_published_pipes() -> None:
    a72, a76, a55 = (cores.CORES[k] for k in ("cortex-a72", "cortex-a76", "cortex-a55"))
    n = 1e9
    # FMLA .4s: once a cycle on the A72 (both 64-bit halves of F0/F1) and the A55, twice on the A76
    assert cores.cycles({"f32mla.q": n}, a72) == (n, "F0F1")
    assert cores.cycles({"f32mla.q": n}, a76) == (n / 2, "V")
    assert cores.cycles({"f32mla.q": n}, a55) == (n, "NEON")
    # widening integer multiplies: F0 / V0 alone
    assert cores.cycles({"imul.q": n}, a72) == (n, "F0")
    assert cores.cycles({"imul.q": n, "padal.q": n}, a76)[0] == n
    # loads bound a load-heavy mix; 128-bit loads take the A55's load pipe twice
    assert cores.cycles({"load": n, "load.q": n, "f32mla.d": n}, a55) == (2 * n, "Ld")
    assert cores.cycles({"load": n, "f32mla.d": n}, a72) == (n, "L")
    # nothing exceeds the issue width
    assert cores.cycles({"scalar": 9 * n}, a76) == (9 * n / 3, "I")
    assert cores.cycles({"scalar": n, "branch": n, "load": n, "store": n}, a55) == (2 * n, "issue")


def test_plugin_log_to_counts_per_audio_second() -> None:
    log = "\n".join(
        [
            "some other qemu line",
            "insn_count mark 1 total=100 dot.q=0 load=10",
            "insn_count mark 2 total=1100 dot.q=600 load=110",
            "insn_count mark 3 total=3100 dot.q=1800 load=310",
            "insn_count exit 0 total=3200 dot.q=1800 load=320",
        ]
    )
    phases = evidence.phase_counts(log)
    assert phases == [
        {"total": 1000, "dot.q": 600, "load": 100},
        {"total": 2000, "dot.q": 1200, "load": 200},
    ]
    # 8 frames more cost 1000 instructions; one second is 44100/512 frames
    per_s = evidence.per_audio_second(phases, 8, 512, 44100)
    assert per_s["total"] == pytest.approx(1000 / 8 * 44100 / 512)
    assert per_s["dot.q"] == pytest.approx(600 / 8 * 44100 / 512)


def _emulation_missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (chroot, mount namespaces)"
    root = evidence.DEFAULT_ROOT
    if not (root / evidence.BUNDLE.lstrip("/") / "qemu-aarch64").is_file():
        return (
            f"no arm64 root at {root} (made by `sudo bash benchmarks/arm/root.sh`, about 10 "
            "minutes with downloads; CI does not make it)"
        )
    if shutil.which("cc") is None or shutil.which("unshare") is None:
        return "needs cc and unshare"
    return None


@pytest.mark.slow
@pytest.mark.timeout(1200)  # ~65 s measured here; emulation is much slower under other load
@pytest.mark.skipif(_emulation_missing() is not None, reason=str(_emulation_missing()))
def test_quick_run_shows_integer_dot_products_in_int8_only(tmp_path: Path) -> None:
    out = tmp_path / "quick.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.arm.evidence",
            "--quick",
            "--work",
            str(tmp_path / "work"),
            "--json",
            str(out),
        ],
        cwd=REPO,
        check=True,
        timeout=1100,
    )
    import json

    res = json.loads(out.read_text())
    t = res["targets"]["cortex-a76"]
    assert "asimddp" in t["info"]["hwcaps"]
    fp32, int8 = t["graphs"]["fp32"], t["graphs"]["int8"]
    assert "QuantizeLinear" not in fp32["ops_all"]
    assert int8["per_audio_second"]["dot.q"] > 0
    assert fp32["per_audio_second"]["dot.q"] == 0
    assert fp32["per_audio_second"]["f32mla.q"] > 0


def test_board_estimate_keeps_its_anchor_and_orders_the_precisions() -> None:
    from benchmarks.arm import boards

    fp32 = {c: 0.0 for c in cores.CLASSES} | {"f32mla.q": 7e9, "load": 1.5e9, "total": 9e9}
    int8_a72 = {c: 0.0 for c in cores.CLASSES} | {"imul.q": 3e9, "padal.q": 1.5e9, "total": 9e9}
    int8_a76 = {c: 0.0 for c in cores.CLASSES} | {"dot.q": 1.6e9, "total": 4e9}
    res = {
        "targets": {
            "cortex-a72": {
                "graphs": {
                    "fp32": {"per_audio_second": fp32},
                    "int8": {"per_audio_second": int8_a72},
                }
            },
            "cortex-a76": {
                "graphs": {
                    "fp32": {"per_audio_second": fp32},
                    "int8": {"per_audio_second": int8_a76},
                }
            },
        }
    }
    rows = {r["board"]: r for r in boards.estimate(res)}
    pi4 = rows[boards.ANCHOR.name]
    # the anchor: hayakoe's published Pi 4 RTF, times our measured fp32 speed-up over it
    assert pi4["rtf"]["fp32"][0] == pytest.approx(
        boards.HAYAKOE_PI4_RTF * boards.OURS_VS_HAYAKOE_FP32
    )
    # A72: both core models (FMLA .4s in both pipes or one) give a range, int8 below fp32 here
    lo, hi = pi4["ratio"]["int8"][0], pi4["ratio"]["int8"][1]
    assert len(pi4["ratio"]["int8"]) == 2 and lo < hi < 1
    # the slower clock of the Yellow's CM4 costs in proportion
    yellow = rows["Home Assistant Yellow (CM4, 4× Cortex-A72 1.5 GHz)"]
    assert yellow["rtf"]["fp32"][0] == pytest.approx(pi4["rtf"]["fp32"][0] * 1.8 / 1.5)
    assert "Home Assistant Green (RK3566, 4× Cortex-A55 1.8 GHz)" not in rows  # no counts for it
