"""ONNX Runtime's static QDQ quantization of a voice's decoder and front graph.

The decoder's convolutions (all but the last `QuantSettings.fp32_tail_stages` upsampling
stages) and the flow's feed-forward convolutions in the front graph (`flow_ffn_nodes`),
calibrated on crops of the voice's own latents (`engine.int8.calibrate`). The calibration
reader calls `between` before every crop: the caller's chance to pause or cancel
(`engine.int8.control`), so a run is stopped within one crop.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EngineError
from .recipe import QuantSettings

_LOGGER = logging.getLogger(__name__)


class QuantizeError(EngineError, RuntimeError):
    """int8 graphs could not be made for a voice (names the voice and the cause)."""


def _calibration_method(settings: QuantSettings) -> Any:
    from onnxruntime.quantization import CalibrationMethod

    return {
        "minmax": CalibrationMethod.MinMax,
        "entropy": CalibrationMethod.Entropy,
        "percentile": CalibrationMethod.Percentile,
    }[settings.method]


class _FeedReader:
    """A `CalibrationDataReader` over a list of feeds, read in ranges (ORT's strided
    calibration: one range per `collect_data`, so only one range's activations are held)."""

    def __init__(
        self, feeds: Sequence[dict[str, np.ndarray]], between: Callable[[], None] | None = None
    ) -> None:
        self._feeds = list(feeds)
        self._it: Iterator[dict[str, np.ndarray]] = iter(self._feeds)
        self._between = between

    def __len__(self) -> int:
        return len(self._feeds)

    def set_range(self, start_index: int, end_index: int) -> None:
        self._it = iter(self._feeds[start_index:end_index])

    def get_next(self) -> dict[str, np.ndarray] | None:
        if self._between is not None:  # may pause, or raise to stop the calibration
            self._between()
        return next(self._it, None)


def quantize_decoder(
    fp32_decoder: Path,
    out: Path,
    feeds: Sequence[dict[str, np.ndarray]],
    settings: QuantSettings,
    between: Callable[[], None] | None = None,
) -> None:
    """Write the int8 (QDQ) version of `fp32_decoder` to `out`, calibrated on `feeds`
    (the last `settings.fp32_tail_stages` upsampling stages stay fp32; with
    `settings.upsample_as_conv` the upsampling layers are first rewritten as ordinary
    convolutions, `engine.synth.polyphase`, so that they get int8 kernels too)."""
    if not settings.upsample_as_conv:
        _quantize_static(
            fp32_decoder,
            out,
            feeds,
            settings,
            exclude=tail_nodes(fp32_decoder, settings.fp32_tail_stages, settings.tail_blocks),
            between=between,
            op_types=settings.decoder_op_types(),
        )
        return
    import onnx

    from ..synth.polyphase import convtranspose_as_conv

    model = onnx.load(str(fp32_decoder))
    rewritten = convtranspose_as_conv(model)
    _LOGGER.debug("%s: %d upsampling layers as convolutions", fp32_decoder, rewritten)
    out.parent.mkdir(parents=True, exist_ok=True)
    source = out.with_name(f".{out.stem}.{os.getpid()}.polyphase.onnx")
    try:
        onnx.save(model, str(source))
        del model
        _quantize_static(
            source,
            out,
            feeds,
            settings,
            exclude=tail_nodes(source, settings.fp32_tail_stages, settings.tail_blocks),
            between=between,
            op_types=settings.decoder_op_types(),
        )
    finally:
        source.unlink(missing_ok=True)


def quantize_front(
    fp32_front: Path,
    out: Path,
    feeds: Sequence[dict[str, np.ndarray]],
    settings: QuantSettings,
    nodes: Sequence[str],
    between: Callable[[], None] | None = None,
) -> None:
    """Write `fp32_front` with int8 `nodes` (`flow_ffn_nodes`) to `out`, calibrated on the
    front graph's inputs `feeds`."""
    if not nodes:
        raise QuantizeError(f"{fp32_front}: no nodes to quantize")
    _quantize_static(fp32_front, out, feeds, settings, include=nodes, between=between)


def flow_ffn_nodes(front: Path, prior_noise: str) -> list[str]:
    """The flow's feed-forward convolutions in the front graph: convolutions wider than one
    tap that depend on the prior's noise input `prior_noise` (the flow runs on the noisy
    prior; the text encoder and the duration predictors do not depend on it, and the
    flow's attention projections and couplings are one tap wide). Found by structure, not
    by names, which differ between exporters."""
    import onnx

    graph = onnx.load(str(front), load_external_data=False).graph
    widths = {init.name: int(init.dims[-1]) for init in graph.initializer if len(init.dims) >= 3}
    after = {prior_noise}
    names = []
    for node in graph.node:  # exported graphs list nodes in execution order
        if not any(i in after for i in node.input):
            continue
        after.update(node.output)
        if node.op_type == "Conv" and widths.get(node.input[1], 1) > 1:
            if not node.name:
                raise QuantizeError(f"{front}: unnamed convolutions in the flow")
            names.append(node.name)
    return names


def _quantize_static(
    source: Path,
    out: Path,
    feeds: Sequence[dict[str, np.ndarray]],
    settings: QuantSettings,
    *,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    between: Callable[[], None] | None = None,
    op_types: Sequence[str] | None = None,
) -> None:
    """ONNX Runtime's static QDQ quantization of `source` → `out` (`settings`; only the
    `include` nodes when given, never the `exclude` ones; `op_types`, default
    `settings.op_types`)."""
    import tempfile

    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(_FeedReader, CalibrationDataReader):  # ORT checks the base class
        pass

    if not feeds:
        raise QuantizeError(f"{source}: no calibration data")
    if settings.method == "minmax":  # running min/max, merged every few crops: bounded memory
        # (ORT refuses a count that divides the number of crops: "No data is collected")
        batch = next(n for n in range(4, 64) if len(feeds) % n)
        extra: dict[str, Any] = {"CalibMaxIntermediateOutputs": batch}
    else:  # histograms: one crop per collection step (crops may differ in length)
        extra = {"CalibStridedMinMax": 1}
    if settings.method == "percentile":
        extra["CalibPercentile"] = settings.percentile
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.partial")
    quiet = _QuietRootLogger()
    with (
        tempfile.TemporaryDirectory(prefix="int8-calib-", dir=out.parent) as scratch,
        quiet,
    ):
        # ORT writes its augmented model next to the working directory: keep it in scratch.
        cwd = os.getcwd()
        os.chdir(scratch)
        try:
            quantize_static(
                str(source),
                str(tmp),
                Reader(feeds, between),
                quant_format=QuantFormat.QDQ,
                op_types_to_quantize=list(op_types or settings.op_types),
                per_channel=settings.per_channel,
                reduce_range=settings.reduce_range,
                nodes_to_quantize=list(include) if include is not None else None,
                nodes_to_exclude=list(exclude),
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
                calibrate_method=_calibration_method(settings),
                extra_options=extra,
            )
        finally:
            os.chdir(cwd)
    os.replace(tmp, out)


def tail_nodes(decoder: Path, stages: int, blocks: bool = False) -> list[str]:
    """Names of the nodes from the `stages`-th last upsampling layer (ConvTranspose or its
    polyphase Conv) to the end of the decoder graph (graph order is execution order in
    exported graphs). With `blocks`, only those that are not a residual block's
    convolution: the blocks' convolutions are quantized, the upsampling layers, the
    additions (the residual stream) and the last convolution (conv_post: the audio) not."""
    if stages <= 0:
        return []
    import onnx

    from ..synth.polyphase import upsampling_layers

    model = onnx.load(str(decoder), load_external_data=False)
    nodes = list(model.graph.node)
    index = {n.output[0]: i for i, n in enumerate(nodes)}
    ups = [index[n.output[0]] for n in upsampling_layers(model.graph)]
    if len(ups) < stages:
        raise QuantizeError(
            f"{decoder}: {len(ups)} upsampling layers, cannot keep {stages} in fp32"
        )
    tail = nodes[ups[-stages] :]
    if blocks:
        convs = [i for i, n in enumerate(tail) if n.op_type == "Conv"]
        last_ups = {index[n.output[0]] for n in upsampling_layers(model.graph)}
        block_convs = {
            i for i in convs[:-1] if index[tail[i].output[0]] not in last_ups
        }  # the last Conv is conv_post
        tail = [n for i, n in enumerate(tail) if i not in block_convs]
    names = [n.name for n in tail]
    if not all(names):
        raise QuantizeError(f"{decoder}: unnamed nodes, cannot keep the last stages in fp32")
    return names


class _QuietRootLogger:
    """ONNX Runtime's quantizer logs every skipped tensor on the root logger: mute it."""

    def __enter__(self) -> None:
        self._root = logging.getLogger()
        self._level = self._root.level
        self._root.setLevel(max(self._level, logging.ERROR))

    def __exit__(self, *exc: object) -> None:
        self._root.setLevel(self._level)
