"""Issue 49's aarch64 half: the int8 decoder on XNNPACK (an ExecuTorch program) against ONNX
Runtime's int8 decoder under qemu, per CPU target (`emulator.TARGETS`: A72, A76, A55).

Called by `benchmarks.engine.xnnpack` (`--arm-root`), which made both decoders on x86:

1. instructions by class (`insn_count.c`) over runs of F and 2F latent frames after warm-ups,
   ONNX Runtime one session per stage (as the engine runs it, one thread) with a marker per
   stage, ExecuTorch's program whole (XNNPACK's threadpool at one thread); (2F − F) / F is one
   frame's cost without the per-run overhead, scaled to one second of audio;
2. the throughput-bound cycles of those counts on each core model (`cores.py`, both A72
   readings), and the ratio XNNPACK / ONNX Runtime: the estimated time ratio;
3. the held-out latents decoded on the target; the audio against x86's of the same decoder
   (equal within the gate?) and against x86's fp32 decoder (the gate itself).

Needs root and an arm64 root with ExecuTorch (`sudo XNNPACK=1 bash benchmarks/arm/root.sh`).
"""

from __future__ import annotations

import json
import platform
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.arm import cores
from benchmarks.arm.emulator import (
    INSIDE_WORK,
    TARGETS,
    Emulator,
    build_plugin,
    phase_counts,
)

ORT = "ort_int8"
KERNEL_CLASSES = {
    "SDOT/UDOT": ("dot.d", "dot.q"),
    "SMULL/SMLAL/MUL": ("imul.d", "imul.q"),
    "SADALP/UADALP": ("padal.d", "padal.q"),
    "FMLA .4s/.2s": ("f32mla.d", "f32mla.q"),
}
"""Instruction groups that say which kernels ran (the int8 MACs, and fp32's)."""


def per_audio_second(
    one: dict[str, int], two: dict[str, int], frames: int, hop: int, sample_rate: int
) -> dict[str, float]:
    """Counts for one second of audio from runs of `frames` and 2 × `frames` latent frames:
    their difference (the per-run overhead cancels) over `frames` frames."""
    scale = sample_rate / hop / frames
    return {k: (two[k] - one.get(k, 0)) * scale for k in two}


def split_runs(phases: list[dict[str, int]], stages: int) -> list[list[dict[str, int]]]:
    """The plugin's phases (one per stage per run, in order) grouped by run."""
    if len(phases) % stages:
        raise ValueError(f"{len(phases)} phases do not make runs of {stages} stages")
    return [phases[i : i + stages] for i in range(0, len(phases), stages)]


def summed(parts: Sequence[dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for p in parts:
        for k, v in p.items():
            out[k] = out.get(k, 0.0) + v
    return out


def estimates(per_s: dict[str, float], target: str) -> dict[str, dict[str, Any]]:
    """Per core model of `target`: the cycle bound of one second of audio, and its pipe."""
    out = {}
    for model in cores.MODELS[target]:
        cyc, pipe = cores.cycles(per_s, cores.CORES[model])
        out[model] = {"cycles": cyc, "bound_by": pipe}
    return out


def ratios(decoders: dict[str, dict[str, Any]], base: str = ORT) -> dict[str, dict[str, float]]:
    """Per decoder and core model: instructions and estimated time against `base`."""
    b = decoders[base]
    out: dict[str, dict[str, float]] = {}
    for name, d in decoders.items():
        r = {"instructions": d["per_audio_second"]["total"] / b["per_audio_second"]["total"]}
        for model, e in d["estimate"].items():
            r[model] = e["cycles"] / b["estimate"][model]["cycles"]
        out[name] = r
    return out


def kernels(per_s: dict[str, float]) -> str:
    """Which int8 multiply the counts show (dot product, or widening multiplies)."""
    g = {name: sum(per_s.get(c, 0.0) for c in cls) for name, cls in KERNEL_CLASSES.items()}
    if g["SDOT/UDOT"] > 0.1 * g["SMULL/SMLAL/MUL"]:
        return "SDOT/UDOT"
    if g["SMULL/SMLAL/MUL"] > 0:
        return "SMULL/SMLAL" + (" + SADALP/UADALP" if g["SADALP/UADALP"] > 0 else "")
    return "?"


def _manifests(
    work: Path, ort_path: Path, programs: dict[str, Path], g: np.ndarray | None, channels: int
) -> dict[str, Path]:
    """The decoders as the guest sees them: ONNX Runtime's split into its stages here."""
    import onnx

    from engine.synth.decoder_split import G_NAME, STAGE_IN, Z_NAME, split_decoder_stages

    gfile = None
    if g is not None:
        np.save(work / "g.npy", g)
        gfile = f"{INSIDE_WORK}/g.npy"
    out = {}
    stages = []
    for k, stage in enumerate(split_decoder_stages(onnx.load(str(ort_path)))):
        onnx.save(stage, str(work / f"ort-stage{k}.onnx"))
        stages.append(f"{INSIDE_WORK}/ort-stage{k}.onnx")
    m: dict[str, Any] = {"kind": "ort", "stages": stages, "z": Z_NAME, "stage_in": STAGE_IN,
                         "g": G_NAME if g is not None else None}  # fmt: skip
    for name, spec in [(ORT, m), *((f"xnnpack_{v}", {"kind": "pte"}) for v in programs)]:
        if spec["kind"] == "pte":
            variant = name.removeprefix("xnnpack_")
            (work / f"{name}.pte").write_bytes(programs[variant].read_bytes())
            spec = {**spec, "program": f"{INSIDE_WORK}/{name}.pte"}
        spec = {**spec, "channels": channels, "g_file": gfile}
        (work / f"{name}.json").write_text(json.dumps(spec))
        out[name] = work / f"{name}.json"
    return out


def _decoder(
    emu: Emulator,
    key: str,
    name: str,
    manifest: Path,
    x86_outputs: dict[str, list[np.ndarray]],
    fidelity: Callable[[list[np.ndarray], list[np.ndarray]], dict[str, Any]],
    counting: tuple[int, int, int],
    log: Callable[[str], None],
) -> dict[str, Any]:
    """One decoder on one target: its counts (per stage), estimates, and its outputs."""
    frames, hop, sample_rate = counting
    target = TARGETS[key]
    inside = f"{INSIDE_WORK}/{manifest.name}"
    stdout, plog = emu.run(target, ["count", inside, f"{frames},{2 * frames}"],
                           count=f"plugin-{key}-{name}.log")  # fmt: skip
    stages = json.loads(stdout.strip().splitlines()[-1])["stages"]
    runs = split_runs(phase_counts(plog), stages)
    per_stage = [
        per_audio_second(a, b, frames, hop, sample_rate)
        for a, b in zip(runs[0], runs[1], strict=True)
    ]
    per_s = summed(per_stage)
    d: dict[str, Any] = {"per_audio_second": per_s, "kernels": kernels(per_s),
                         "estimate": estimates(per_s, key)}  # fmt: skip
    if stages > 1:
        d["stages"] = [{"per_audio_second": s, "estimate": estimates(s, key)} for s in per_stage]
    log(f"aarch64 {key} {name}: {per_s['total'] / 1e9:.2f} G instructions / s audio")
    got_file = emu.work / f"out-{key}-{name}.npz"
    emu.run(target, ["outputs", inside, f"{INSIDE_WORK}/heldout.npz",
                     f"{INSIDE_WORK}/{got_file.name}"])  # fmt: skip
    with np.load(got_file) as data:
        got = [data[k] for k in sorted(data.files)]
    d["vs_x86"] = fidelity(x86_outputs[name], got)
    d["vs_x86"]["max_abs"] = max(
        float(np.abs(a - b).max()) for a, b in zip(x86_outputs[name], got, strict=True)
    )
    d["gate"] = fidelity(x86_outputs["fp32"], got)
    log(f"aarch64 {key} {name}: against x86 {d['vs_x86']}; gate {d['gate']}")
    return d


def run(
    *,
    root: Path,
    work: Path,
    targets: Sequence[str],
    ort_path: Path,
    programs: dict[str, Path],
    heldout: list[dict[str, np.ndarray]],
    x86_outputs: dict[str, list[np.ndarray]],
    fidelity: Callable[[list[np.ndarray], list[np.ndarray]], dict[str, Any]],
    frames: int,
    hop: int,
    sample_rate: int,
    jobs: int = 1,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """The aarch64 half (module docstring). `fidelity(reference, test)` gives the gate's
    figures of `test` against `reference` (lists of audio, one per held-out sentence);
    `x86_outputs` has each decoder's x86 audio and "fp32" (the gate's reference). `jobs`
    emulated runs at once (each takes one host core); `work`/result.json holds what is done,
    rewritten as each target finishes."""
    work.mkdir(parents=True, exist_ok=True)
    emu = Emulator(root, work, build_plugin(work))
    first = heldout[0]
    manifests = _manifests(work, ort_path, programs, first.get("g"), int(first["z"].shape[1]))
    held: dict[str, Any] = {
        f"held{i:04d}.{k}": v for i, f in enumerate(heldout) for k, v in f.items()
    }
    np.savez(work / "heldout.npz", **held)
    res: dict[str, Any] = {"qemu": emu.qemu_version(), "host": platform.machine(),
                           "frames": frames, "heldout": len(heldout), "targets": {}}  # fmt: skip
    counting = (frames, hop, sample_rate)
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        work_items = {
            (key, name): pool.submit(
                _decoder, emu, key, name, m, x86_outputs, fidelity, counting, log
            )
            for key in targets
            for name, m in manifests.items()
        }
        for key in targets:
            target = TARGETS[key]
            t: dict[str, Any] = {"qemu_cpu": target.qemu_cpu, "cpu_part": hex(target.part),
                                 "boards": target.boards, "note": target.note}  # fmt: skip
            out, _ = emu.run(target, ["info"], timeout=900)
            t["info"] = json.loads(out.strip().splitlines()[-1])
            log(f"aarch64 {key}: {t['info']}")
            t["decoders"] = {name: work_items[key, name].result() for name in manifests}
            t["ratios"] = ratios(t["decoders"])
            res["targets"][key] = t
            (work / "result.json").write_text(json.dumps(res, indent=1))
    return res


def model_name(model: str) -> str:
    return (
        "Cortex-A72, 128-bit FMLA in one pipe"
        if model.endswith("q128")
        else cores.CORES[model].name
    )


def estimate_rows(res: dict[str, Any]) -> list[list[str]]:
    """One row per core model and decoder: kernels, instructions, cycles, ratios to ORT."""
    rows = []
    for key, t in res["targets"].items():
        for model in cores.MODELS[key]:
            for name, d in t["decoders"].items():
                e = d["estimate"][model]
                r = t["ratios"][name]
                rows.append([model_name(model), name, d["kernels"],
                             f"{d['per_audio_second']['total'] / 1e9:.2f}",
                             f"{e['cycles'] / 1e9:.2f} ({e['bound_by']})",
                             f"{r['instructions']:.2f}", f"{r[model]:.2f}"])  # fmt: skip
    return rows


def fidelity_rows(res: dict[str, Any]) -> list[list[str]]:
    """One row per target and decoder: against x86's same decoder, and the gate."""
    rows = []
    for key, t in res["targets"].items():
        for name, d in t["decoders"].items():
            v, g = d["vs_x86"], d["gate"]
            rows.append([key, name, f"{v['max_abs']:.1e}", f"{v['snr_db_min']:.1f}",
                         f"{v['mcd_db_mean']:.2f}", f"{g['snr_db_min']:.1f}",
                         f"{g['logmel_db_mean']:.2f}", f"{g['mcd_db_mean']:.2f}",
                         "passes" if g["passed"] else "FAILS"])  # fmt: skip
    return rows


def stage_rows(res: dict[str, Any]) -> list[list[str]]:
    """ONNX Runtime's stages on each core model: the share of its cycle bound."""
    rows = []
    for key, t in res["targets"].items():
        d = t["decoders"].get(ORT, {})
        for model in cores.MODELS[key]:
            whole = d["estimate"][model]["cycles"]
            shares = [s["estimate"][model]["cycles"] / whole for s in d.get("stages", [])]
            rows.append([model_name(model), " / ".join(f"{x:.0%}" for x in shares)])
    return rows
