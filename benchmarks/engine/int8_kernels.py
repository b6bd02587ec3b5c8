"""ONNX Runtime's int8 kernels that bound the int8 decoder, each on its own (issue 36).

The int8 decoder spends about 80 % of its kernel time in `QLinearConv` and most of the rest
in `QLinearLeakyRelu` (`int8_decoder`'s profile). This part times those kernels alone, on
uint8 tensors of the decoder's own shapes: channels × samples of each upsampling stage for
`--frames` latent frames of the full-size voice. No voice is needed: the tensors are random,
the weights too, and only time and exactness are measured. Printed:

1. Elementwise, ns per element, 1 and 2 threads:
   - `QLinearLeakyRelu`: ONNX Runtime's fusion of Dequantize → LeakyRelu → Quantize, which
     looks up a 256-entry table one byte at a time;
   - `QLinearAdd`: the residual addition, vectorised;
   - LeakyRelu written as `QLinearAdd(α·x, (1 − α)·Max(x, zero point))`, and how many of
     the 256 input values come out different from the table's.
2. `QLinearConv` per stage width, G multiply-accumulates/s: the residual blocks' kernel 3,
   dilation 1 and kernel 11, dilation 5, in channels-last layout (as ONNX Runtime runs
   the decoder's int8 region). Two weight types:
   - int8 weights with zero point 0, which the quantizer writes (ONNX Runtime's symmetric
     indirect convolution);
   - uint8 weights (its generic im2col GEMM).

Medians of `--reps` alternating rounds after a warm-up round (`common.walls`), idle and
with one core busy; sessions built with the engine's `session_options`.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from benchmarks.engine.common import walls
from benchmarks.lib.report import Report, log
from benchmarks.lib.stats import busy_core

if TYPE_CHECKING:
    import onnx
    import onnxruntime as ort

RESULT = "int8-kernels"

STAGES = ((256, 8), (128, 64), (64, 128), (32, 256), (16, 512))
"""Each upsampling stage's (channels, samples per latent frame) in the full-size decoder."""

KERNELS = ((3, 1), (11, 5))
"""(kernel, dilation) of the residual blocks' shortest and widest convolutions."""

ALPHA = 0.1
"""HiFi-GAN's LeakyRelu slope."""

SPAN_S = 0.05
"""The least time one timing runs a case for."""

X_SCALE, X_ZERO = 0.05, 128
"""An activation's quantization (any would do: the kernels' time does not depend on it)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--frames", type=int, default=200, help="latent frames the shapes are for")
    p.add_argument("--reps", type=int, default=15, help="alternating rounds")
    p.add_argument("--no-busy", action="store_true", help="skip the one-core-busy rounds")


@dataclass(frozen=True)
class Case:
    """One graph to time: `run` runs it `repeats` times back to back; `elements` outputs,
    `macs` multiply-accumulates (0: elementwise)."""

    run: Callable[[], object]
    repeats: int
    elements: int
    macs: int = 0


def _session(graph: onnx.GraphProto, threads: int) -> ort.InferenceSession:
    import onnxruntime as ort
    from onnx import helper

    from engine.synth.onnx_backend import session_options

    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
    )
    return ort.InferenceSession(
        model.SerializeToString(), session_options(threads), providers=["CPUExecutionProvider"]
    )


def _leaky_output() -> tuple[float, int]:
    """The LeakyRelu output's quantization, from its range as min-max calibration sets it."""
    lo, hi = ALPHA * X_SCALE * (0 - X_ZERO), X_SCALE * (255 - X_ZERO)
    scale = (hi - lo) / 255
    return scale, round(-lo / scale)


def _elementwise(kind: str, shape: tuple[int, ...]) -> onnx.GraphProto:
    """A graph `x (uint8) → y (uint8)` for one of the elementwise forms."""
    from onnx import TensorProto, helper, numpy_helper

    y_scale, y_zero = _leaky_output()

    def const(name: str, value: float, dtype: type) -> TensorProto:
        return numpy_helper.from_array(np.array(value, dtype), name)

    inits = [
        const("z", X_ZERO, np.uint8),
        const("ys", y_scale, np.float32),
        const("yz", y_zero, np.uint8),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.UINT8, shape)]
    if kind == "table":  # fused by ONNX Runtime into QLinearLeakyRelu
        inits.append(const("s", X_SCALE, np.float32))
        nodes = [
            helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"]),
            helper.make_node("LeakyRelu", ["xf"], ["yf"], alpha=ALPHA),
            helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"]),
        ]
    elif kind == "max_add":
        inits += [const("sa", ALPHA * X_SCALE, np.float32)]
        inits += [const("sb", (1 - ALPHA) * X_SCALE, np.float32)]
        nodes = [
            helper.make_node("Max", ["x", "z"], ["r"]),
            helper.make_node(
                "QLinearAdd",
                ["x", "sa", "z", "r", "sb", "z", "ys", "yz"],
                ["y"],
                domain="com.microsoft",
            ),
        ]
    else:  # "add": the residual addition, x + x2
        inits.append(const("s", X_SCALE, np.float32))
        inputs.append(helper.make_tensor_value_info("x2", TensorProto.UINT8, shape))
        nodes = [
            helper.make_node(
                "QLinearAdd",
                ["x", "s", "z", "x2", "s", "z", "ys", "yz"],
                ["y"],
                domain="com.microsoft",
            )
        ]
    out = helper.make_tensor_value_info("y", TensorProto.UINT8, shape)
    return helper.make_graph(nodes, kind, inputs, [out], inits)


def _conv(channels: int, samples: int, kernel: int, dilation: int, signed: bool) -> onnx.GraphProto:
    """A channels-last `QLinearConv` `[1, samples, channels]` → the same shape."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = rng.integers(-127, 128, (channels, channels, kernel))
    weights = w.astype(np.int8) if signed else (w + 128).astype(np.uint8)
    w_zero = np.zeros(channels, np.int8) if signed else np.full(channels, 128, np.uint8)
    pad = (kernel - 1) * dilation // 2
    inits = [
        numpy_helper.from_array(np.array(X_SCALE, np.float32), "s"),
        numpy_helper.from_array(np.array(X_ZERO, np.uint8), "z"),
        numpy_helper.from_array(weights, "w"),
        numpy_helper.from_array(np.full(channels, 1e-3, np.float32), "ws"),
        numpy_helper.from_array(w_zero, "wz"),
        numpy_helper.from_array(np.array(0.5, np.float32), "ys"),
        numpy_helper.from_array(np.array(X_ZERO, np.uint8), "yz"),
    ]
    node = helper.make_node(
        "QLinearConv",
        ["x", "s", "z", "w", "ws", "wz", "ys", "yz"],
        ["y"],
        domain="com.microsoft",
        channels_last=1,
        kernel_shape=[kernel],
        dilations=[dilation],
        pads=[pad, pad],
    )
    shape = (1, samples, channels)
    return helper.make_graph(
        [node],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, shape)],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, shape)],
        inits,
    )


def _timed(
    session: ort.InferenceSession, feeds: dict[str, np.ndarray]
) -> tuple[Callable[[], object], int]:
    """One timing: the session run back to back for at least `SPAN_S` (a span much longer
    than one run, so a scheduler's time slice does not decide it), and how many runs that is."""

    def runs(n: int) -> None:
        for _ in range(n):
            session.run(None, feeds)

    runs(3)  # warm: arena, packed weights
    t0 = time.perf_counter()
    runs(1)
    repeats = max(1, math.ceil(SPAN_S / (time.perf_counter() - t0)))
    return (lambda: runs(repeats)), repeats


def _differing(kind: str) -> int:
    """How many of the 256 uint8 inputs `kind` maps otherwise than the table lookup does."""
    x = np.arange(256, dtype=np.uint8).reshape(1, 256, 1)
    ref = _session(_elementwise("table", x.shape), 1).run(None, {"x": x})[0]
    got = _session(_elementwise(kind, x.shape), 1).run(None, {"x": x})[0]
    return int(np.count_nonzero(ref != got))


def _conv_key(channels: int, kernel: int, signed: bool) -> str:
    return f"conv {channels} k{kernel} {'int8' if signed else 'uint8'}"


def _cases(frames: int) -> dict[str, Case]:
    """Every case, its session built and warmed: the elementwise ones as `FORM/THREADS`, the
    convolutions as `_conv_key` names them."""
    rng = np.random.default_rng(1)
    channels, per_frame = STAGES[-1]  # the last stage: the largest tensors
    shape = (1, frames * per_frame, channels)
    x = rng.integers(0, 256, shape, dtype=np.uint8)
    cases = {}
    for kind in ELEMENTWISE:
        feeds = {"x": x, "x2": x[:, ::-1].copy()} if kind == "add" else {"x": x}
        for threads in (1, 2):
            run, repeats = _timed(_session(_elementwise(kind, shape), threads), feeds)
            cases[f"{kind}/{threads}"] = Case(run, repeats, x.size)
    for channels, per_frame in STAGES:
        samples = frames * per_frame
        x = rng.integers(0, 256, (1, samples, channels), dtype=np.uint8)
        for kernel, dilation in KERNELS:
            for signed in (True, False):
                graph = _conv(channels, samples, kernel, dilation, signed)
                run, repeats = _timed(_session(graph, 2), {"x": x})
                macs = channels * channels * kernel * samples
                cases[_conv_key(channels, kernel, signed)] = Case(run, repeats, x.size, macs)
    return cases


ELEMENTWISE = {
    "table": "`QLinearLeakyRelu` (table lookup)",
    "add": "`QLinearAdd` (residual addition)",
    "max_add": "LeakyRelu as `Max` + `QLinearAdd`",
}
"""The elementwise forms timed, by `_elementwise`'s name for them."""


def run(args: argparse.Namespace) -> Report:
    frames = 4 if args.quick else args.frames
    reps = 2 if args.quick else args.reps
    report = Report("int8 kernels the decoder is bound by (ONNX Runtime, each alone)")
    log(f"building the sessions ({frames} frames' shapes)")
    cases = _cases(frames)
    loads = ["idle"] if args.no_busy or args.quick else ["idle", "one core busy"]
    times: dict[str, dict[str, float]] = {}
    for label in loads:
        log(f"{reps} alternating rounds, {label}")
        with busy_core(label != "idle"):
            spans = walls({k: c.run for k, c in cases.items()}, reps)
        times[label] = {k: t / cases[k].repeats for k, t in spans.items()}  # s per run

    def ns(label: str, key: str) -> float:
        return times[label][key] / cases[key].elements * 1e9

    def gmacs(label: str, key: str) -> float:
        return cases[key].macs / times[label][key] / 1e9

    differing = {"max_add": _differing("max_add")}  # the table is the reference
    rows = []
    for kind, title in ELEMENTWISE.items():
        cells: list[object] = [title, f"{ns('idle', f'{kind}/1'):.3f}"]
        cells += [f"{ns(label, f'{kind}/2'):.3f}" for label in loads]
        cells.append(f"{times['idle'][f'{kind}/2'] / times['idle']['table/2']:.2f}")
        cells.append(differing.get(kind, "–"))
        rows.append(cells)
    channels, per_frame = STAGES[-1]
    report.note(
        f"Elementwise on uint8 `[1, {frames * per_frame}, {channels}]` (the last stage's "
        "tensor), ns per element, medians:"
    )
    head = ["operator", "1 thread, idle"] + [f"2 threads, {label}" for label in loads]
    head += ["time / table lookup, 2 threads idle", "outputs ≠ the table's, of 256 inputs"]
    report.table(head, rows, "l" + "r" * (len(head) - 1))

    rows = []
    for channels, per_frame in STAGES:
        for kernel, dilation in KERNELS:
            key = _conv_key(channels, kernel, True)
            widest = _conv_key(STAGES[0][0], kernel, True)
            cells = [f"{channels} x {frames * per_frame}, k{kernel} d{dilation}"]
            cells += [f"{gmacs(label, key):.0f}" for label in loads]
            cells.append(f"{gmacs('idle', key) / gmacs('idle', widest):.2f}")
            uint8 = _conv_key(channels, kernel, False)
            cells.append(f"{times['idle'][key] / times['idle'][uint8]:.2f}")
            rows.append(cells)
    report.note(
        "`QLinearConv`, channels-last, 2 threads: G multiply-accumulates/s with int8 weights "
        "(zero point 0, as the quantizer writes them); against the widest stage's convolution "
        "with the same kernel; its time against the same convolution with uint8 weights:"
    )
    head = ["channels x samples, kernel, dilation"] + [f"GMAC/s, {label}" for label in loads]
    head += ["/ widest stage's, idle", "time, int8 / uint8 weights, idle"]
    report.table(head, rows, "l" + "r" * (len(head) - 1))
    report.data["frames"] = frames
    report.data["times_s"] = times
    report.data["differing_of_256"] = differing
    return report


if __name__ == "__main__":  # python -m benchmarks.engine.int8_kernels [--quick] [options]
    import sys

    from benchmarks.lib import cli

    sys.exit(cli.main(__spec__.name, __doc__ or "", {"run": __spec__.name}, ["run", *sys.argv[1:]]))
