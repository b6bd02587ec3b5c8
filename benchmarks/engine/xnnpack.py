"""The int8 decoder on XNNPACK (through ExecuTorch) against ONNX Runtime's int8 decoder, in
one run (issue 49).

On the full-size voice (random weights of the real JP-Extra shapes: timings are a real
voice's, the fidelity figures say how int8 rounding behaves in this architecture, not how a
trained voice sounds):

- `ort_int8`: the engine's int8 decoder, `engine.int8.quantize.quantize_decoder` with
  `QuantSettings()`, run as the engine runs it (one ONNX Runtime session per stage);
- `xnnpack_<recipe>`: the voice's own decoder weights (`model.dec.*` of its synthesizer
  graph) in `engine.model.generator.Generator`, quantized with ExecuTorch's `XNNPACKQuantizer`
  (int8, symmetric per-channel weights, per-tensor activations ranged by min-max as
  `QuantSettings().method`; PT2E, calibrated on the same 50 calibration crops as `ort_int8`),
  every operator lowered to XNNPACK (`XnnpackPartitioner`, a dynamic length), run by
  ExecuTorch's runtime; `--variants` (`VARIANTS`) says what stays fp32;
- `fp32`: ONNX Runtime's fp32 decoder, the reference of the gate.

Printed: decoder time on x86 (medians of `--reps` alternating rounds, per-round ratio to
`ort_int8`, idle and with one core busy) and the fidelity of each int8 decoder against the
fp32 one on the held-out sentences (`engine.int8.gate`); then the aarch64 half
(`benchmarks/arm/xnnpack.py`): the same decoders under qemu on the A72, A76 and A55 targets,
instruction counts per core model (ONNX Runtime per stage), the estimated time against
`ort_int8`, and their outputs against x86's and through the gate; last, both comparisons in
one table. The aarch64 half needs root and the arm64 root with ExecuTorch (`sudo XNNPACK=1
bash benchmarks/arm/root.sh`); `--no-arm` skips it, `--arm-from` reads a stored one.
Programs and ONNX Runtime's int8 decoder are kept in benchmarks/.cache/xnnpack/.

Needs `executorch` (1.5.1, with torch 2.13.0 and torchao), which the project does not carry:
run it from a separate venv that has them, with the project on `PYTHONPATH`
(docs/synthesizer.md, "The int8 decoder on XNNPACK"). Without them it says so and measures
nothing. `QUICK = False`: a conversion of the full-size decoder takes minutes.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.lib import CACHE
from benchmarks.lib.report import Report, log
from benchmarks.lib.stats import alternate, busy_core, median

RESULT = "xnnpack"
QUICK = False
NEEDS = ("executorch", "torchao", "torch")

VARIANTS = {
    "engine": "the last upsampling layer, the last stage's stream and conv_post in fp32, as "
    "QuantSettings() keeps them in ONNX Runtime's graph",
    "fallback": "the last stage wholly fp32, as QuantSettings.fallback",
    "all": "everything int8 but conv_post",
}
"""XNNPACK recipe → what it leaves in fp32."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--frames", type=int, default=200, help="latent frames per decoder run")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--no-busy", action="store_true", help="skip the one-core-busy rounds")
    p.add_argument("--heldout", type=int, default=8, help="held-out sentences of the gate")
    p.add_argument(
        "--variants",
        default="engine,fallback",
        help=f"XNNPACK recipes, comma-separated ({', '.join(VARIANTS)})",
    )
    p.add_argument("--max-frames", type=int, default=1024, help="dynamic length bound")
    p.add_argument(
        "--arm-root",
        type=Path,
        default=None,
        help="the arm64 root for the aarch64 half (default $ARM64_ROOT, else "
        "/var/tmp/wyoming-hayakoe-arm64-evidence; made by `sudo XNNPACK=1 bash "
        "benchmarks/arm/root.sh`); the emulated runs need root (sudo)",
    )
    p.add_argument(
        "--arm-from",
        type=Path,
        default=None,
        help="no emulation: the aarch64 figures of a stored run's JSON (e.g. "
        "benchmarks/results/xnnpack.json) or of an emulated run's result.json in --arm-work",
    )
    p.add_argument("--no-arm", action="store_true", help="x86 only")
    p.add_argument(
        "--arm-cpus",
        default="cortex-a72,cortex-a76,cortex-a55",
        help="CPU targets of the aarch64 half (benchmarks/arm/emulator.py TARGETS)",
    )
    p.add_argument("--arm-frames", type=int, default=16, help="F: emulated runs of F and 2F frames")
    p.add_argument(
        "--arm-heldout",
        type=int,
        default=3,
        help="held-out sentences decoded on each target (the shortest)",
    )
    p.add_argument(
        "--arm-jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="emulated runs at once (each takes a core; default: this machine's cores)",
    )
    p.add_argument(
        "--arm-work",
        type=Path,
        default=Path("/var/tmp/wyoming-hayakoe-arm-xnnpack"),
        help="the emulated runs' work folder (decoders, plugin, logs)",
    )
    p.add_argument(
        "--reconvert",
        action="store_true",
        help="convert again even where benchmarks/.cache/xnnpack/ holds the program",
    )


def missing() -> list[str]:
    """The packages this part needs and this interpreter lacks."""
    return [m for m in NEEDS if importlib.util.find_spec(m) is None]


def _generator(synthesizer: Path, config: Any) -> Any:
    """The voice's decoder in PyTorch, its weights from the synthesizer graph."""
    import onnx
    import torch
    from onnx import numpy_helper

    from engine.model.generator import Generator

    m = config.model
    gen = Generator(
        m.inter_channels,
        m.resblock,
        m.resblock_kernel_sizes,
        m.resblock_dilation_sizes,
        m.upsample_rates,
        m.upsample_initial_channel,
        m.upsample_kernel_sizes,
        gin_channels=m.gin_channels,
    )
    graph = onnx.load(str(synthesizer))
    prefix = "model.dec."
    state = {
        i.name[len(prefix) :]: torch.from_numpy(numpy_helper.to_array(i).copy())
        for i in graph.graph.initializer
        if i.name.startswith(prefix)
    }
    gen.load_state_dict(state, strict=True)
    return gen.eval()


def _fp32_nodes(graph_module: Any, last_up: str, variant: str) -> set[str]:
    """Names of the nodes `variant` leaves in fp32: from the last upsampling layer on, those
    outside the residual blocks (`engine`: that layer, the last stage's stream — the sums of
    its residual blocks, the ÷ — and conv_post) or all of them (`fallback`); `all`: conv_post."""
    names: set[str] = set()
    seen = False
    for n in graph_module.graph.nodes:
        paths = [str(v[0]) for v in n.meta.get("nn_module_stack", {}).values()]
        if any(p == last_up or p.endswith("." + last_up) for p in paths):
            seen = True
        post = any(p.endswith("conv_post") for p in paths)
        if (
            post
            or (seen and variant == "fallback")
            or (seen and variant == "engine" and not any("resblocks." in p for p in paths))
        ):
            names.add(n.name)
    return names


def _xnnpack(
    gen: Any,
    calibration: list[dict[str, np.ndarray]],
    example: dict[str, np.ndarray],
    variant: str,
    max_frames: int,
    out: Path,
) -> tuple[dict[str, float], Any]:
    """Quantize `gen` for XNNPACK (`variant` of `VARIANTS`), lower it whole and write the
    ExecuTorch program to `out` (and beside it, `.pt2`, the quantized module before lowering:
    PT2E's reference, quantization simulated in fp32); the seconds each step took, and that
    reference module."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.exir import to_edge_transform_and_lower
    from torchao.quantization.pt2e.observer import MinMaxObserver
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    t = {"t0": time.perf_counter()}
    args = tuple(torch.from_numpy(example[k]) for k in ("z", "g") if k in example)
    frames = torch.export.Dim("frames", min=8, max=max_frames)
    dyn = ({2: frames}, None) if len(args) == 2 else ({2: frames},)
    with torch.no_grad():
        exported = torch.export.export(gen, args, dynamic_shapes=dyn).module()
        config = get_symmetric_quantization_config(is_per_channel=True)
        # activation ranges by min-max, as `QuantSettings().method` calibrates ONNX Runtime's
        # (the quantizer's default is a histogram observer)
        minmax = dataclasses.replace(
            config.input_activation,
            observer_or_fake_quant_ctr=MinMaxObserver.with_args(eps=2**-12),
        )
        config = dataclasses.replace(config, input_activation=minmax, output_activation=minmax)
        quantizer = XNNPACKQuantizer().set_global(config)
        fp32 = _fp32_nodes(exported, f"ups.{len(gen.ups) - 1}", variant)
        log(f"xnnpack {variant}: {len(fp32)} nodes left fp32")
        quantizer.set_filter_function(lambda n: n.name not in fp32)
        prepared = prepare_pt2e(exported, quantizer)
        t["export"] = time.perf_counter()
        for feeds in calibration:
            prepared(*(torch.from_numpy(feeds[k]) for k in ("z", "g") if k in feeds))
        t["calibrate"] = time.perf_counter()
        converted = convert_pt2e(prepared)
        reference = torch.export.export(converted, args, dynamic_shapes=dyn)
        torch.export.save(reference, out.with_suffix(".pt2"))
        lowered = to_edge_transform_and_lower(reference, partitioner=[XnnpackPartitioner()])
        graph = lowered.exported_program().graph_module.graph
        outside = sorted(
            {
                str(n.target).split(".")[-2]
                for n in graph.nodes
                if n.op == "call_function"
                and "executorch_call_delegate" not in str(n.target)
                and "getitem" not in str(n.target)
                and "_to_dim_order_copy" not in str(n.target)
            }
        )
        out.write_bytes(lowered.to_executorch().buffer)
        t["lower"] = time.perf_counter()
    log(f"xnnpack: operators outside the delegate: {outside or 'none'}")
    return {
        "fp32_nodes": len(fp32),
        "export_s": t["export"] - t["t0"],
        "calibrate_s": t["calibrate"] - t["export"],
        "convert_lower_s": t["lower"] - t["calibrate"],
        "outside": len(outside),
        "program_mb": out.stat().st_size / 2**20,
    }, converted


def _program_path(variant: str, key: str, bound: int) -> Path:
    """Where the ExecuTorch program of `variant` is kept between runs (with `.pt2`, PT2E's
    reference, and `.json`, what its conversion cost), per decoder, calibration, length bound
    and executorch version."""
    from importlib.metadata import version

    folder = CACHE / "xnnpack"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"xnnpack_{variant}-{key}-{bound}-et{version('executorch')}.pte"


def _reference(path: Path) -> Any:
    """PT2E's reference module, saved by `_xnnpack` (its quantize/dequantize operators
    registered first: `torch.export.load` resolves them by name)."""
    import torch
    import torch.ao.quantization.fx._decomposed  # noqa: F401 (registers quantized_decomposed)

    return torch.export.load(path).module()


def _executorch(program: Path, threads: int) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    import torch
    from executorch.extension.pybindings import portable_lib
    from executorch.runtime import Runtime

    portable_lib._unsafe_reset_threadpool(threads)
    method = Runtime.get().load_program(program).load_method("forward")
    assert method is not None

    def run(feeds: dict[str, np.ndarray]) -> np.ndarray:
        inputs = [torch.from_numpy(feeds[k]) for k in ("z", "g") if k in feeds]
        return np.asarray(method.execute(inputs)[0]).reshape(-1)

    return run


def _torch_run(module: Any) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    import torch

    def run(feeds: dict[str, np.ndarray]) -> np.ndarray:
        with torch.no_grad():
            out = module(*(torch.from_numpy(feeds[k]) for k in ("z", "g") if k in feeds))
        return np.asarray(out).reshape(-1)

    return run


def _fidelity(ref: list[np.ndarray], outputs: list[np.ndarray], sr: int) -> Any:
    """The gate's report of `outputs` against `ref` (audio, one per held-out sentence)."""
    from engine.int8.gate import SentenceFidelity, compare, judge

    rows = []
    for i, (want, got) in enumerate(zip(ref, outputs, strict=True)):
        snr, logmel, mcd = compare(np.clip(want, -1, 1), np.clip(got, -1, 1), sr)
        rows.append(SentenceFidelity(str(i), "", len(want) / sr, snr, logmel, mcd))
    return judge("bench", rows)


def _figures(rep: Any) -> dict[str, Any]:
    return {
        "snr_db_min": rep.snr_db_min,
        "logmel_db_mean": rep.logmel_db_mean,
        "mcd_db_mean": rep.mcd_db_mean,
        "passed": rep.passed,
        "reasons": list(rep.reasons),
    }


def run(args: argparse.Namespace) -> Report:
    report = Report("int8 decoder: XNNPACK (ExecuTorch) against ONNX Runtime")
    lacking = missing()
    if lacking:
        msg = (
            f"skipped: this interpreter lacks {', '.join(lacking)} (the XNNPACK route needs "
            "executorch 1.5.1 with torch 2.13.0 and torchao, which the project does not "
            "carry; run it from a venv that has them, the project on PYTHONPATH)"
        )
        log(msg)
        report.note(msg)
        report.data["skipped"] = msg
        return report

    import torch

    from benchmarks.engine.int8_decoder import _latents, _stages
    from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, fullsize_root, small_root
    from engine import EngineOptions, layout
    from engine.int8.quantize import quantize_decoder
    from engine.int8.recipe import QuantSettings
    from engine.neural.build import split_synthesizer
    from engine.voice_config import load_config

    torch.set_num_threads(args.threads)
    root, name = (small_root(), SMALL_VOICE) if args.quick else (fullsize_root(), VOICE_NAME)
    files = layout.onnx_folder_files(root / layout.speaker_prefix(name, "onnx"))
    synth = split_synthesizer(files, EngineOptions(threads=2), CACHE / "ours-cache")
    from engine.bert import load_bert

    bert = load_bert(root, "cpu")
    # the int8_decoder part's latents: made there or here, and kept as .npz
    data = _latents(files, synth, bert, args.quick, 2 if args.quick else args.heldout)
    sr = synth.sample_rate
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    report.data["variants"] = {v: VARIANTS[v] for v in variants}
    with tempfile.TemporaryDirectory(prefix="xnnpack-", dir=CACHE) as tmp:
        scratch = Path(tmp)
        t0 = time.perf_counter()
        stat = synth.fp32_decoder_path.stat()
        key = f"{synth.fp32_decoder_path.parent.name}-{stat.st_size}-{len(data['calibration'])}"
        ort_path = CACHE / "xnnpack" / f"ort_int8-{key}.onnx"  # kept for the next run
        if not ort_path.is_file():
            ort_path.parent.mkdir(parents=True, exist_ok=True)
            quantize_decoder(
                synth.fp32_decoder_path, scratch / "ort.onnx", data["calibration"], QuantSettings()
            )
            (scratch / "ort.onnx").replace(ort_path)
        ort_s = time.perf_counter() - t0
        log(f"ort_int8: quantized (or read) in {ort_s:.0f} s")

        rng = np.random.default_rng(7)
        first = data["heldout"][0]
        feeds = {"z": rng.standard_normal((1, first["z"].shape[1], args.frames)).astype(np.float32)}
        if "g" in first:
            feeds["g"] = first["g"]

        gen = _generator(files.synthesizer, load_config(files.config))
        runs: dict[str, Callable[..., Any]] = {"ort_int8": _stages(ort_path, args.threads)}
        runs["fp32"] = _stages(synth.fp32_decoder_path, args.threads)
        with torch.no_grad():
            torch_out = gen(*(torch.from_numpy(feeds[k]) for k in ("z", "g") if k in feeds))
        ref0 = runs["fp32"](feeds)
        err = float(np.abs(torch_out.numpy().reshape(-1) - ref0).max())
        log(f"PyTorch generator against ONNX Runtime fp32: max |diff| {err:.2e}")
        report.data["torch_vs_ort_fp32_max_abs"] = err

        longest = max(f["z"].shape[2] for f in data["heldout"])
        references: dict[str, Any] = {}
        conversions: dict[str, dict[str, float]] = {}
        programs: dict[str, Path] = {}
        bound = max(args.max_frames, longest, args.frames)
        for variant in variants:
            program = _program_path(variant, key, bound)
            stats = program.with_suffix(".json")
            if args.reconvert or not (stats.is_file() and program.with_suffix(".pt2").is_file()):
                conv, _ = _xnnpack(gen, data["calibration"], feeds, variant, bound, program)
                stats.write_text(json.dumps(conv))
                log(f"xnnpack {variant}: {conv}")
            else:
                conv = {**json.loads(stats.read_text()), "cached": True}
                log(f"xnnpack {variant}: read from {program}")
            references[variant] = _reference(program.with_suffix(".pt2"))
            conversions[variant] = conv
            programs[variant] = program
            runs[f"xnnpack_{variant}"] = _executorch(program, args.threads)
        report.data["conversion"] = conversions
        report.data["ort_quantize_s"] = ort_s
        del gen

        def timing(fn: Callable[..., Any]) -> Callable[[], float]:
            def once() -> float:
                t = time.perf_counter()
                fn(feeds)
                return time.perf_counter() - t

            return once

        reps = 1 if args.quick else args.reps
        base = "ort_int8"
        rows = []
        for busy in (False,) if args.no_busy or args.quick else (False, True):
            with busy_core(busy):
                for fn in runs.values():
                    fn(feeds)  # warm-up
                rounds = alternate({n: timing(fn) for n, fn in runs.items()}, reps)
            for name, times in rounds.items():
                ratio = median(t / b for t, b in zip(times, rounds[base], strict=True))
                vs_fp32 = median(t / b for t, b in zip(times, rounds["fp32"], strict=True))
                load = "one core busy" if busy else "idle"
                rows.append([load, name, f"{median(times):.3f}", f"{ratio:.2f}", f"{vs_fp32:.2f}"])
            report.data.setdefault("rounds", []).append({"busy": busy, "rounds": rounds})
        report.note(
            f"Decoder time, {args.frames} frames, {args.threads} threads, medians of {reps} "
            "alternating rounds (ratios: medians of the per-round ratios):"
        )
        report.table(["load", "decoder", "s", f"/ {base}", "/ fp32"], rows, "llrrr")

        fid_rows = []
        fidelity = dict(runs)
        for variant, module in references.items():
            fidelity[f"{variant}, PT2E reference"] = _torch_run(module)
        outputs = {name: [fn(f) for f in data["heldout"]] for name, fn in fidelity.items()}
        for name in fidelity:
            if name == "fp32":
                continue
            rep = _fidelity(outputs["fp32"], outputs[name], sr)
            verdict = "passes" if rep.passed else "FAILS: " + "; ".join(rep.reasons)
            fid_rows.append(
                [
                    name,
                    f"{rep.snr_db_min:.1f}",
                    f"{rep.logmel_db_mean:.2f}",
                    f"{rep.mcd_db_mean:.2f}",
                    verdict,
                ]
            )
            report.data.setdefault("fidelity", {})[name] = _figures(rep)
        th = rep.thresholds
        report.note(
            f"Fidelity against the fp32 decoder, {len(outputs['fp32'])} held-out sentences "
            "(decoder only; "
            f"thresholds: SNR ≥ {th.min_snr_db:g} dB, log-mel ≤ {th.max_logmel_db:g} dB, "
            f"MCD ≤ {th.max_mcd_db:g} dB):"
        )
        report.table(["decoder", "SNR min dB", "log-mel dB", "MCD dB", "gate"], fid_rows, "lrrrl")
        report.note(
            "PT2E reference: the quantized PyTorch module before lowering (the same "
            "quantization simulated in fp32), which tells the recipe's rounding from XNNPACK's "
            "kernels."
        )
        report.table(
            ["XNNPACK recipe", "fp32 nodes", "export s", "calibrate s", "lower s", "program MB"],
            [
                [
                    v,
                    f"{c['fp32_nodes']:g}",
                    f"{c['export_s']:.0f}",
                    f"{c['calibrate_s']:.0f}",
                    f"{c['convert_lower_s']:.0f}",
                    f"{c['program_mb']:.1f}",
                ]
                for v, c in conversions.items()
            ],
            "lrrrrr",
        )
        cached = [v for v, c in conversions.items() if c.get("cached")]
        report.note(
            f"Conversion on 2 shared cores; ONNX Runtime's quantization {ort_s:.0f} s (0: read "
            "from benchmarks/.cache/xnnpack/). Operators outside the XNNPACK delegate: "
            + ", ".join(f"{v} {c['outside']:g}" for v, c in conversions.items())
            + "."
            + (
                f" Read from benchmarks/.cache/xnnpack/ ({', '.join(cached)}): the figures of "
                "the run that converted it."
                if cached
                else ""
            )
        )
        del runs
        arm = _aarch64(args, report, ort_path, programs, data["heldout"], outputs, synth)
    _both(report, rows, arm)
    return report


def _aarch64(
    args: argparse.Namespace,
    report: Report,
    ort_path: Path,
    programs: dict[str, Path],
    heldout: list[dict[str, np.ndarray]],
    outputs: dict[str, list[np.ndarray]],
    synth: Any,
) -> dict[str, Any] | None:
    """The aarch64 half: emulated here (`--arm-root`), or read from a stored run's JSON
    (`--arm-from`), or skipped with the reason."""
    from benchmarks.arm import emulator
    from benchmarks.arm import xnnpack as arm

    res: dict[str, Any] | None = None
    source = ""
    root = args.arm_root or emulator.DEFAULT_ROOT
    why = None if args.arm_from or args.no_arm else emulator.lacking(root)
    if args.arm_from:
        stored = json.loads(args.arm_from.read_text())
        # a stored run's JSON, or the work folder's result.json (written after each target)
        res = stored if "targets" in stored else stored.get("aarch64")
        source = f"read from {args.arm_from}"
        if res is None:
            why = f"{args.arm_from} holds no aarch64 results"
    elif args.no_arm:
        why = "--no-arm"
    elif why is None:
        # the shortest held-out sentences: emulated decoding costs ~0.1 G instructions a frame
        by_length = sorted(range(len(heldout)), key=lambda i: heldout[i]["z"].shape[2])
        chosen = sorted(by_length[: args.arm_heldout])

        def fidelity(ref: list[np.ndarray], got: list[np.ndarray]) -> dict[str, Any]:
            return _figures(_fidelity(ref, got, synth.sample_rate))

        res = arm.run(
            root=root,
            work=args.arm_work,
            targets=[c.strip() for c in args.arm_cpus.split(",") if c.strip()],
            ort_path=ort_path,
            programs=programs,
            heldout=[heldout[i] for i in chosen],
            x86_outputs={k: [v[i] for i in chosen] for k, v in outputs.items()},
            fidelity=fidelity,
            frames=args.arm_frames,
            hop=synth.hop_length,
            sample_rate=synth.sample_rate,
            jobs=args.arm_jobs,
            log=log,
        )
        source = f"emulated now, arm64 root {root}"
    if res is None:
        msg = f"aarch64 part skipped: {why}"
        log(msg)
        report.note(msg)
        return None
    report.data["aarch64"] = res
    first = next(iter(res["targets"].values()))
    report.note(
        f"aarch64 under qemu ({source}; {res['qemu']}; ONNX Runtime "
        f"{first['info'].get('onnxruntime')}, executorch {first['info'].get('executorch')}, "
        f"torch {first['info'].get('torch')}, PyPI's aarch64 wheels), one thread, instructions "
        f"over runs of {res['frames']} and {2 * res['frames']} latent frames, the difference "
        "per second of audio; estimated time: the throughput bound of those counts on each "
        "core model (benchmarks/arm/cores.py, docs/arm-evidence.md):"
    )
    report.table(
        ["core model", "decoder", "int8 multiplies", "G instr / s", "Gcycles / s (bound)",
         "instr / ort_int8", "est. time / ort_int8"],
        arm.estimate_rows(res),
        "lllrrrr",
    )  # fmt: skip
    report.note(
        f"aarch64 outputs (the {res.get('heldout', '?')} shortest held-out sentences, decoded "
        "on each target) against the same decoder's x86 outputs, and against x86's fp32 "
        "decoder (the gate):"
    )
    report.table(
        ["target", "decoder", "max |diff| vs x86", "SNR min vs x86", "MCD vs x86",
         "gate: SNR min", "log-mel", "MCD", "gate"],
        arm.fidelity_rows(res),
        "llrrrrrrl",
    )  # fmt: skip
    report.note("ONNX Runtime's int8 decoder per stage, each stage's share of its cycle bound:")
    report.table(["core model", "stages 0 / 1 / …"], arm.stage_rows(res), "ll")
    return res


def _both(report: Report, rows: list[list[str]], arm: dict[str, Any] | None) -> None:
    """Both comparisons in one table: x86 measured, aarch64 estimated, each with its gate."""
    from benchmarks.arm import cores
    from benchmarks.arm import xnnpack as armx

    fid = report.data.get("fidelity", {})
    names = [n for n in fid if "PT2E" not in n]
    x86 = {(r[0], r[1]): r[3] for r in rows}
    models = [] if arm is None else [
        (k, m) for k in arm["targets"] for m in cores.MODELS[k]
    ]  # fmt: skip
    head = ["decoder", "x86 idle", "x86 one core busy", "gate (x86)"]
    head += [f"{armx.model_name(m)} (est.)" for _, m in models]
    if arm is not None:
        head.append("gate (aarch64, each target)")
    out = []
    for name in names:
        cells = [name, x86.get(("idle", name), "–"), x86.get(("one core busy", name), "–"),
                 "passes" if fid[name]["passed"] else "FAILS"]  # fmt: skip
        gates = []
        for k, m in models:
            cells.append(f"{arm['targets'][k]['ratios'][name][m]:.2f}")  # type: ignore[index]
        if arm is not None:
            for t in arm["targets"].values():
                g = t["decoders"][name]["gate"]
                gates.append(f"{g['snr_db_min']:.1f} dB " + ("passes" if g["passed"] else "FAILS"))
            cells.append(", ".join(sorted(set(gates))))
        out.append(cells)
    report.note("Both comparisons: decoder time / ort_int8 (x86 measured; aarch64 estimated):")
    report.table(head, out, "l" + "r" * (len(head) - 1))


if __name__ == "__main__":  # python -m benchmarks.engine.xnnpack [options]
    import sys

    from benchmarks.lib import cli

    sys.exit(cli.main(__spec__.name, __doc__ or "", {"run": __spec__.name}, ["run", *sys.argv[1:]]))
