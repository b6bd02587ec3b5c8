"""engine/int8/kernels.py: which CPUs get 7-bit int8 weights."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from engine.int8.kernels import cpu_flags, cpuinfo_value, int8_kernels_saturate, saturates
from engine.int8.recipe import QuantSettings, stamp_for, stamp_matches

AMD_AVX2 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC
flags\t\t: fpu vme sse sse2 ssse3 sse4_1 sse4_2 avx f16c avx2 bmi2

processor\t: 1
flags\t\t: fpu vme sse sse2 ssse3 sse4_1 sse4_2 avx f16c avx2 bmi2
"""
INTEL_VNNI = "flags\t\t: sse2 avx2 avx512f avx512bw avx512_vnni amx_int8\n"
ALDER_LAKE = "flags\t\t: sse2 avx2 avx_vnni\n"
PI4 = "processor\t: 0\nFeatures\t: fp asimd evtstrm crc32 cpuid\nCPU part\t: 0xd08\n"


def test_flags_are_read_from_the_first_flags_line() -> None:
    flags = cpu_flags(AMD_AVX2)
    assert flags is not None and "avx2" in flags and "avx512_vnni" not in flags
    assert cpu_flags(PI4) is None  # ARM's cpuinfo has "Features", not "flags"
    # the CPU model a measurement is stamped with, from the same reader
    assert cpuinfo_value(AMD_AVX2, ("model name", "CPU part")) == "AMD EPYC"
    assert cpuinfo_value(PI4, ("model name", "CPU part")) == "0xd08"


@pytest.mark.parametrize(
    ("machine", "cpuinfo", "expected"),
    [
        ("x86_64", AMD_AVX2, True),  # VPMADDUBSW: 16-bit sums
        ("x86_64", INTEL_VNNI, False),  # VPDPBUSD: 32-bit sums
        ("AMD64", ALDER_LAKE, False),  # AVX-VNNI, as Windows names the architecture
        ("x86_64", "", True),  # flags not known: the safe side
        ("aarch64", PI4, False),  # widening multiplies / sdot
        ("arm64", "", False),
    ],
)
def test_saturation_by_architecture_and_flags(machine: str, cpuinfo: str, expected: bool) -> None:
    assert saturates(machine, cpu_flags(cpuinfo)) is expected


def test_the_recipe_defaults_to_this_machines_answer_and_stamps_it() -> None:
    settings = QuantSettings()
    assert settings.reduce_range is int8_kernels_saturate()
    assert settings.to_dict()["reduce_range"] is settings.reduce_range
    # graphs made for the other kind of CPU have another stamp: made again, not run saturated
    other = QuantSettings(reduce_range=not settings.reduce_range)
    assert other.to_dict() != settings.to_dict()


def test_graphs_stamped_for_the_other_kind_of_cpu_or_before_the_choice_are_not_used(
    tmp_path,
) -> None:
    source = tmp_path / "synthesizer.onnx"
    source.write_bytes(b"graph")
    here = QuantSettings()
    stamp = asdict(stamp_for(source, here))
    assert stamp_matches(stamp, source, here)
    other = asdict(stamp_for(source, QuantSettings(reduce_range=not here.reduce_range)))
    assert not stamp_matches(other, source, here)
    before = {
        **stamp,
        "settings": {k: v for k, v in stamp["settings"].items() if k != "reduce_range"},
    }
    assert not stamp_matches(before, source, here)  # an older engine's graphs: made again
