"""A decoder's upsampling layers (1-D ConvTranspose) as ordinary convolutions (polyphase).

ONNX Runtime has no int8 kernel for ConvTranspose, so in a quantized decoder the upsampling
layers ran in fp32 between a Dequantize and a Quantize. A transposed convolution of stride
`s` is `s` ordinary convolutions, one per output phase, whose outputs are interleaved (the
"sub-pixel" form): with `j = m·s + r` and `k = j + p − i·s` (kernel tap `k`, padding `p`),

    y[c, m·s + r] = Σ_i Σ_t x[i, m + a_r − t] · w[i, c, t·s + b_r],   a_r = (r+p) div s,
                                                                     b_r = (r+p) mod s.

All phases become one `Conv` with `s·C_out` output channels (channel `r·C_out + c`; taps a
phase does not use are zero), then `Transpose [0, 2, 1]` → `Reshape [1, M·s, C_out]` →
`Transpose [0, 2, 1]` interleaves them: channels-last, the phases of one frame are already
side by side, so the Reshape moves no data, and the Transposes cancel against those ONNX
Runtime puts around its channels-last int8 convolutions (its layout optimizer).
The arithmetic is the same products summed in
another order (float32: ~1e-7 of the audio), and the convolution quantizes like every other
one. The rewritten layer keeps the original's node name with `POLYPHASE_SUFFIX`, and
`upsampling_layers` finds both forms (by structure: a Conv whose output is interleaved), so
the decoder's stages (`engine.synth.decoder_split`) are cut at the same places.

A leaf: imports only numpy, onnx and the Q/DQ operator names (`engine.synth.qdq_simplify`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from .qdq_simplify import DEQUANTIZE, QUANTIZE

if TYPE_CHECKING:
    import onnx

_LOGGER = logging.getLogger(__name__)

POLYPHASE_SUFFIX = "/polyphase"
_PASS = (QUANTIZE, DEQUANTIZE)


def _ints(node: Any, name: str, default: list[int]) -> list[int]:
    for a in node.attribute:
        if a.name == name:
            return list(a.ints) if a.ints else ([a.i] if a.type == 2 else default)
    return default


def _int(node: Any, name: str, default: int) -> int:
    for a in node.attribute:
        if a.name == name:
            return int(a.i)
    return default


def polyphase_weights(
    weight: np.ndarray, stride: int, pad_begin: int
) -> tuple[np.ndarray, tuple[int, int]]:
    """The ordinary convolution equal to a 1-D transposed one: from ConvTranspose's weight
    `[C_in, C_out, K]` (stride, padding at the start), a Conv weight `[C_out·s, C_in, T]`
    (output channel `c·s + r` is phase `r` of channel `c`) and its pads (begin, end)."""
    c_in, c_out, k = weight.shape
    s, p = stride, pad_begin
    # phase r reads x[m + a − t] for taps t·s + b < K: input offsets a − t, t = 0, 1, ...
    phases = []
    for r in range(s):
        a, b = divmod(r + p, s)
        taps = [(a - t, t * s + b) for t in range((k - b + s - 1) // s)]
        phases.append(taps)
    offsets = [o for taps in phases for o, _ in taps]
    lo, hi = min(offsets), max(offsets)
    out = np.zeros((s, c_out, c_in, hi - lo + 1), dtype=weight.dtype)
    for r, taps in enumerate(phases):
        for offset, tap in taps:
            out[r, :, :, offset - lo] = weight[:, :, tap].T
    return out.reshape(s * c_out, c_in, hi - lo + 1), (-lo, hi)


def _rewritable(node: Any, inits: dict[str, Any]) -> str | None:
    """Why `node` (a ConvTranspose) cannot be rewritten, or None when it can."""
    if len(node.input) < 2 or node.input[1] not in inits:
        return "weight is not a constant"
    if len(inits[node.input[1]].dims) != 3:
        return "not 1-D"
    if _int(node, "group", 1) != 1:
        return "grouped"
    if any(d != 1 for d in _ints(node, "dilations", [1])):
        return "dilated"
    if any(a.name in ("output_padding", "output_shape") for a in node.attribute):
        return "output_padding/output_shape"
    if any(a.name == "auto_pad" and a.s not in (b"", b"NOTSET") for a in node.attribute):
        return "auto_pad"
    k = int(inits[node.input[1]].dims[2])
    s = _ints(node, "strides", [1])[0]
    pads = _ints(node, "pads", [0, 0])
    if pads[0] != pads[1] or k != 2 * pads[0] + s:
        return f"output length is not stride × input (kernel {k}, stride {s}, pads {pads})"
    return None


def convtranspose_as_conv(model: onnx.ModelProto) -> int:
    """Rewrite every 1-D ConvTranspose of `model` (constant weight, no groups or dilation,
    output length = stride × input length: HiFi-GAN's upsampling layers) in place as a Conv
    and an interleave (see the module doc). Returns how many were rewritten; a layer of
    another shape is left as it is (logged)."""
    from onnx import helper, numpy_helper

    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    nodes = []
    count = 0
    for node in graph.node:
        if node.op_type != "ConvTranspose":
            nodes.append(node)
            continue
        why = _rewritable(node, inits)
        if why is not None:
            _LOGGER.info("ConvTranspose %r kept (%s)", node.name, why)
            nodes.append(node)
            continue
        w = numpy_helper.to_array(inits[node.input[1]])
        s = _ints(node, "strides", [1])[0]
        p = _ints(node, "pads", [0, 0])[0]
        c_out = w.shape[1]
        weight, pads = polyphase_weights(w, s, p)
        tag = f"{node.name or node.output[0]}{POLYPHASE_SUFFIX}"
        w_name, b_name = f"{tag}.weight", f"{tag}.bias"
        graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(weight), w_name))
        inputs = [node.input[0], w_name]
        if len(node.input) > 2 and node.input[2]:
            if node.input[2] not in inits:
                _LOGGER.info("ConvTranspose %r kept (bias is not a constant)", node.name)
                graph.initializer.pop()
                nodes.append(node)
                continue
            bias = numpy_helper.to_array(inits[node.input[2]])
            graph.initializer.append(numpy_helper.from_array(np.tile(bias, s), b_name))
            inputs.append(b_name)
        shape = f"{tag}.interleaved"
        graph.initializer.append(numpy_helper.from_array(np.array([0, -1, c_out], np.int64), shape))
        y = node.output[0]
        conv_out, turned, joined = f"{tag}/conv", f"{tag}/turned", f"{tag}/joined"
        nodes.append(
            helper.make_node(
                "Conv",
                inputs,
                [conv_out],
                name=tag,
                kernel_shape=[weight.shape[2]],
                pads=list(pads),
                strides=[1],
                dilations=[1],
                group=1,
            )
        )
        nodes.append(
            helper.make_node("Transpose", [conv_out], [turned], name=f"{tag}/t1", perm=[0, 2, 1])
        )
        nodes.append(helper.make_node("Reshape", [turned, shape], [joined], name=f"{tag}/r"))
        nodes.append(helper.make_node("Transpose", [joined], [y], name=f"{tag}/t2", perm=[0, 2, 1]))
        count += 1
    if count:
        used = {x for n in nodes for x in n.input}
        kept = [t for t in graph.initializer if t.name in used]
        del graph.initializer[:]
        graph.initializer.extend(kept)
        del graph.node[:]
        graph.node.extend(nodes)
        del graph.value_info[:]  # ORT infers the shapes again
    return count


def upsampling_layers(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """The decoder's upsampling layers in graph order: ConvTranspose nodes, and the Convs of
    rewritten ones (`convtranspose_as_conv`; through Q/DQ nodes in a quantized graph: a Conv
    whose output goes through a Transpose swapping the last two axes, a Reshape and a
    Transpose)."""
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for x in node.input:
            consumers.setdefault(x, []).append(node)

    def after(node: Any) -> Any:
        """The one consumer of `node`'s output, past Q/DQ nodes (None: not exactly one)."""
        while True:
            users = consumers.get(node.output[0], [])
            if len(users) != 1:
                return None
            node = users[0]
            if node.op_type not in _PASS:
                return node

    found = []
    for node in graph.node:
        if node.op_type == "ConvTranspose":
            found.append(node)
        elif node.op_type == "Conv":
            turn = after(node)
            if turn is None or turn.op_type != "Transpose" or _ints(turn, "perm", []) != [0, 2, 1]:
                continue
            reshape = after(turn)
            back = after(reshape) if reshape is not None and reshape.op_type == "Reshape" else None
            if back is not None and back.op_type == "Transpose":
                found.append(node)
    return found
