"""Issue 49's aarch64 half, its arithmetic (benchmarks/arm/): the plugin's log into phases,
phases into runs and stages, counts per second of audio, the cycle bound per core model and
the ratios against ONNX Runtime, and the report of a stored run. No qemu, root or executorch
here: those runs are the benchmark's (`python -m benchmarks.engine.xnnpack --arm-root ...`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from benchmarks.arm import cores, emulator
from benchmarks.arm import xnnpack as arm
from benchmarks.engine import xnnpack as bench
from benchmarks.lib.report import Report

LOG = """\
insn_count mark 1 total=100 dot.q=0 imul.q=10 load=5
noise from qemu
insn_count mark 2 total=300 dot.q=0 imul.q=50 load=25
insn_count mark 1 total=400 dot.q=0 imul.q=60 load=30
insn_count mark 0 total=1000 dot.q=0 imul.q=200 load=100
insn_count exit 0 total=1001 dot.q=0 imul.q=200 load=100
"""


def test_phases_are_the_differences_of_consecutive_marks() -> None:
    phases = emulator.phase_counts(LOG)
    assert phases == [
        {"total": 200, "dot.q": 0, "imul.q": 40, "load": 20},
        {"total": 100, "dot.q": 0, "imul.q": 10, "load": 5},
        {"total": 600, "dot.q": 0, "imul.q": 140, "load": 70},
    ]


def test_phases_group_into_runs_of_stages() -> None:
    assert arm.split_runs([{"a": 1}, {"a": 2}, {"a": 3}, {"a": 4}], 2) == [
        [{"a": 1}, {"a": 2}],
        [{"a": 3}, {"a": 4}],
    ]
    with pytest.raises(ValueError):
        arm.split_runs([{"a": 1}, {"a": 2}, {"a": 3}], 2)


def test_per_audio_second_takes_the_difference_of_the_two_runs() -> None:
    # runs of 16 and 32 frames: 16 frames cost 1000 - 400; one second is 44100 / 512 frames
    got = arm.per_audio_second({"total": 400}, {"total": 1000}, 16, 512, 44100)
    assert got["total"] == pytest.approx(600 / 16 * 44100 / 512)


def test_stages_sum() -> None:
    assert arm.summed([{"a": 1.0, "b": 2.0}, {"a": 3.0}]) == {"a": 4.0, "b": 2.0}


def test_a72_estimate_has_both_readings_and_the_ratio_follows_the_bound() -> None:
    # ORT: widening multiplies on F0 alone; "XNNPACK": half of them, plus Q-form FMLAs that
    # bind the A72 on both FP pipes (LLVM's reading) but not with one pipe each
    ort = {"total": 3e9, "imul.q": 2e9, "f32mla.q": 0.0, "scalar": 1e9}
    xnn = {"total": 2.6e9, "imul.q": 1e9, "f32mla.q": 1.2e9, "scalar": 0.4e9}
    decoders = {
        "ort_int8": {"per_audio_second": ort, "estimate": arm.estimates(ort, "cortex-a72")},
        "xnnpack_x": {"per_audio_second": xnn, "estimate": arm.estimates(xnn, "cortex-a72")},
    }
    assert set(decoders["ort_int8"]["estimate"]) == {"cortex-a72", "cortex-a72-q128"}
    r = arm.ratios(decoders)
    assert r["ort_int8"] == {"instructions": 1.0, "cortex-a72": 1.0, "cortex-a72-q128": 1.0}
    # ORT: F0 alone carries the 2e9 widening multiplies → 2e9 cycles. XNNPACK, LLVM's model:
    # F0/F1 together take 2 slots per Q-form FMLA and 1 per multiply, 2 slots a cycle →
    # (2 × 1.2e9 + 1e9) / 2 = 1.7e9; with a Q-form FMLA in one pipe: (1.2e9 + 1e9) / 2 = 1.1e9
    assert cores.cycles(ort, cores.CORES["cortex-a72"]) == (pytest.approx(2e9), "F0")
    assert r["xnnpack_x"]["cortex-a72"] == pytest.approx(1.7 / 2)
    assert r["xnnpack_x"]["cortex-a72-q128"] == pytest.approx(1.1 / 2)
    assert r["xnnpack_x"]["instructions"] == pytest.approx(2.6 / 3)


def test_kernels_named_from_the_classes() -> None:
    assert arm.kernels({"dot.q": 1e9, "imul.q": 1e8}) == "SDOT/UDOT"
    assert arm.kernels({"imul.q": 1e9, "padal.q": 1e8}) == "SMULL/SMLAL + SADALP/UADALP"
    assert arm.kernels({"imul.d": 1e9}) == "SMULL/SMLAL"
    assert arm.kernels({"load": 1e9}) == "?"


def test_targets_show_an_arm_cpuinfo_per_core() -> None:
    a55 = emulator.TARGETS["cortex-a55"]
    text = a55.cpuinfo(2)
    assert text.count("CPU part\t: 0xd05") == 2
    assert "asimddp" in text
    assert "asimddp" not in emulator.TARGETS["cortex-a72"].cpuinfo(1)
    assert set(emulator.TARGETS) == set(cores.MODELS)


def _stored(ort: dict[str, float], xnn: dict[str, float]) -> dict[str, object]:
    """An emulated run's result.json for one target, as `arm.run` writes it."""
    gate = {"snr_db_min": 20.0, "logmel_db_mean": 0.5, "mcd_db_mean": 2.0, "passed": True}
    decoders = {}
    for name, counts in (("ort_int8", ort), ("xnnpack_fallback", xnn)):
        decoders[name] = {
            "per_audio_second": counts,
            "kernels": arm.kernels(counts),
            "estimate": arm.estimates(counts, "cortex-a72"),
            "vs_x86": {**gate, "max_abs": 1e-4},
            "gate": gate,
        }
    decoders["ort_int8"]["stages"] = [
        {"per_audio_second": counts, "estimate": arm.estimates(counts, "cortex-a72")}
        for counts in (ort, ort)
    ]
    info = {"onnxruntime": "1.32.0", "executorch": "1.5.1", "torch": "2.13.0"}
    target = {"info": info, "decoders": decoders, "ratios": arm.ratios(decoders)}
    return {"qemu": "qemu 7.2", "frames": 16, "heldout": 3, "targets": {"cortex-a72": target}}


def test_the_report_reads_a_stored_aarch64_run(tmp_path: Path) -> None:
    ort = {"total": 3e9, "imul.d": 2e9, "scalar": 1e9}
    xnn = {"total": 2e9, "imul.d": 1e9, "scalar": 1e9}
    stored = tmp_path / "result.json"
    stored.write_text(json.dumps(_stored(ort, xnn)))
    report = Report("t")
    fid = {"snr_db_min": 20.0, "logmel_db_mean": 0.5, "mcd_db_mean": 2.0, "passed": True}
    report.data["fidelity"] = {"ort_int8": fid, "xnnpack_fallback": fid}
    args = argparse.Namespace(arm_from=stored, no_arm=False, arm_root=None)
    res = bench._aarch64(args, report, stored, {}, [], {}, None)
    rows = [["idle", "ort_int8", "0.4", "1.00"], ["idle", "xnnpack_fallback", "0.4", "0.90"]]
    bench._both(report, rows, res)
    text = report.markdown()
    assert report.data["aarch64"]["targets"]["cortex-a72"]["ratios"]["xnnpack_fallback"][
        "cortex-a72"
    ] == pytest.approx(0.5)
    # both comparisons in one table: x86 measured beside the A72 estimate (both readings)
    assert "| xnnpack_fallback | 0.90 | – | passes | 0.50 | 0.50 | 20.0 dB passes |" in text
