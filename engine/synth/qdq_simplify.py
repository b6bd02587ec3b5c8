"""Exact simplifications of a quantized (QDQ) decoder graph, made in memory before it runs.

ONNX Runtime's quantizer (`engine.int8.quantize`) writes every quantized tensor as a
QuantizeLinear → DequantizeLinear pair, and ONNX Runtime fuses most of them into its int8
kernels. What it does not fuse costs a pass over the tensor in float: at the end of every
decoder stage the residual blocks' sum is dequantized, divided by their number, quantized
again and dequantized again (four passes over a tensor of 1.6 M values at 200 frames).
Three rewrites remove that and change no output value:

- **a division by a constant after a DequantizeLinear** goes into its scale:
  `DQ(q; s, z) / c = DQ(q; s/c, z)` (float rounding aside);
- **an identity requantization** `DQ(s, z) → Q(s', z') → DQ(s', z')` with `z' = z` and `s'`
  within half a step of `s` over the whole 8-bit range gives back its input: the second
  pair is dropped (after the division above, the quantizer's calibrated range of the
  quotient is the sum's range ÷ c, so `s' = s/c`);
- **repeated nodes** (same operator, attributes and inputs; small constants compared by
  value; random operators never) are merged.

The stages are then cut where a stage's result is still 8-bit
(`engine.synth.decoder_split.split_decoder_stages`), so no float tensor crosses a stage
boundary in an int8 decoder. A graph with no DequantizeLinear (an fp32 decoder) is left as
it is.

A leaf: imports only numpy and onnx.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx

_LOGGER = logging.getLogger(__name__)

DEQUANTIZE = "DequantizeLinear"
QUANTIZE = "QuantizeLinear"

SMALL_CONSTANT = 64
"""Constants of at most this many values are compared by value when nodes are merged
(scales, zero points, divisors); larger ones (weights) by name."""

RANDOM_OPS = frozenset(
    {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial"}
)
"""Operators whose equal-looking nodes give different values: never merged."""

_LEVELS = 255
"""Steps of an 8-bit range: a scale ratio within 0.5/255 of 1 rounds every value back."""


@dataclass(frozen=True)
class Simplified:
    """What `simplify_qdq` changed."""

    divisions: int = 0
    """Divisions by a constant folded into the DequantizeLinear before them."""
    requantizations: int = 0
    """Identity requantizations dropped."""
    merged: int = 0
    """Repeated nodes merged."""

    @property
    def total(self) -> int:
        return self.divisions + self.requantizations + self.merged


def simplify_qdq(model: onnx.ModelProto) -> Simplified:
    """Apply the module's rewrites to `model` in place (nothing when it has no
    DequantizeLinear); unused constants are dropped."""
    graph = model.graph
    if not any(n.op_type == DEQUANTIZE for n in graph.node):
        return Simplified()
    done = Simplified(
        divisions=_fold_divisions(graph),
        requantizations=_drop_identity_requantizations(graph),
        merged=_merge_repeated(graph),
    )
    if done.total:
        _drop_unused_constants(graph)
        _LOGGER.debug("QDQ graph simplified: %s", done)
    return done


def _constants(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    """Initializers and Constant nodes' values, by tensor name."""
    from onnx import numpy_helper

    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value":
                    values[node.output[0]] = numpy_helper.to_array(attr.t)
    return values


def _consumers(graph: onnx.GraphProto) -> dict[str, list[onnx.NodeProto]]:
    users: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            users[name].append(node)
    return users


def _reroute(graph: onnx.GraphProto, old: str, new: str) -> None:
    """Every node reading `old` reads `new` instead."""
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new


def _keep(graph: onnx.GraphProto, nodes: list[onnx.NodeProto], dropped: set[int]) -> None:
    """`graph`'s nodes become `nodes` but for the indices in `dropped` (`nodes` is the list
    the caller indexed: protobuf gives no stable identity to a message between reads)."""
    kept = [n for i, n in enumerate(nodes) if i not in dropped]
    del graph.node[:]
    graph.node.extend(kept)


def _graph_outputs(graph: onnx.GraphProto) -> set[str]:
    return {o.name for o in graph.output}


def _fold_divisions(graph: onnx.GraphProto) -> int:
    from onnx import numpy_helper

    values = _constants(graph)
    producer = {out: n for n in graph.node for out in n.output}
    users = _consumers(graph)
    outputs = _graph_outputs(graph)
    inits = {t.name for t in graph.initializer}
    nodes = list(graph.node)
    dropped: set[int] = set()
    for i, div in enumerate(nodes):
        if div.op_type != "Div" or div.output[0] in outputs:
            continue
        divisor = values.get(div.input[1])
        dq = producer.get(div.input[0])
        if divisor is None or divisor.size != 1 or float(divisor.reshape(())) == 0.0:
            continue
        if dq is None or dq.op_type != DEQUANTIZE or len(users[div.input[0]]) != 1:
            continue
        scale = values.get(dq.input[1])
        if scale is None or dq.input[1] not in inits:
            continue
        folded = numpy_helper.from_array(
            (scale / divisor.reshape(())).astype(scale.dtype), f"{dq.input[1]}/{div.name}"
        )
        graph.initializer.append(folded)
        dq.input[1] = folded.name
        _reroute(graph, div.output[0], dq.output[0])
        dropped.add(i)
    _keep(graph, nodes, dropped)
    return len(dropped)


def _same_quantization(values: dict[str, np.ndarray], a: onnx.NodeProto, b: onnx.NodeProto) -> bool:
    """Whether DequantizeLinear `a` and QuantizeLinear `b` use one zero point (value and
    type) and scales whose ratio rounds every 8-bit value back to itself."""
    if len(a.input) < 3 or len(b.input) < 3:
        return False
    sa, sb = values.get(a.input[1]), values.get(b.input[1])
    za, zb = values.get(a.input[2]), values.get(b.input[2])
    if sa is None or sb is None or za is None or zb is None:
        return False
    if sa.size != 1 or sb.size != 1 or za.dtype != zb.dtype or not np.array_equal(za, zb):
        return False
    ratio = float(sa.reshape(())) / float(sb.reshape(()))
    return abs(ratio - 1.0) * _LEVELS < 0.5


def _drop_identity_requantizations(graph: onnx.GraphProto) -> int:
    values = _constants(graph)
    producer = {out: n for n in graph.node for out in n.output}
    users = _consumers(graph)
    outputs = _graph_outputs(graph)
    nodes = list(graph.node)
    index = {n.output[0]: i for i, n in enumerate(nodes) if n.output}
    dropped: set[int] = set()
    count = 0
    for i, q in enumerate(nodes):
        if q.op_type != QUANTIZE or q.output[0] in outputs:
            continue
        first = producer.get(q.input[0])
        readers = users.get(q.output[0], [])
        if first is None or first.op_type != DEQUANTIZE or not readers:
            continue
        if any(r.op_type != DEQUANTIZE or r.output[0] in outputs for r in readers):
            continue
        if not _same_quantization(values, first, q) or not all(
            _same_quantization(values, r, q) for r in readers
        ):
            continue
        for r in readers:
            _reroute(graph, r.output[0], first.output[0])
            dropped.add(index[r.output[0]])
        dropped.add(i)
        count += 1
    _keep(graph, nodes, dropped)
    return count


def _merge_repeated(graph: onnx.GraphProto) -> int:
    """Merge nodes equal in operator, attributes and inputs (graph order is topological, so
    one pass merges chains too)."""
    from onnx import numpy_helper

    keys: dict[str, str] = {}
    for t in graph.initializer:
        if np.prod(t.dims, dtype=np.int64) <= SMALL_CONSTANT:
            value = numpy_helper.to_array(t)
            body = repr((value.dtype.str, value.shape)).encode() + value.tobytes()
            keys[t.name] = "value:" + hashlib.sha256(body).hexdigest()
    outputs = _graph_outputs(graph)
    alias: dict[str, str] = {}
    first: dict[tuple[object, ...], onnx.NodeProto] = {}
    nodes = list(graph.node)
    dropped: set[int] = set()
    for i, node in enumerate(nodes):
        for k, name in enumerate(node.input):
            if name in alias:
                node.input[k] = alias[name]
        attrs = tuple(sorted((a.name, a.SerializeToString()) for a in node.attribute))
        inputs = tuple(keys.get(name, name) for name in node.input)
        key = (node.domain, node.op_type, attrs, inputs, len(node.output))
        seen = first.get(key)
        if seen is None or node.op_type in RANDOM_OPS or any(o in outputs for o in node.output):
            first.setdefault(key, node)
            continue
        for mine, theirs in zip(node.output, seen.output, strict=True):
            alias[mine] = theirs
        dropped.add(i)
    _keep(graph, nodes, dropped)
    return len(dropped)


def _drop_unused_constants(graph: onnx.GraphProto) -> None:
    """Initializers and Constant nodes that nothing reads any more."""
    used = {name for node in graph.node for name in node.input} | _graph_outputs(graph)
    nodes = list(graph.node)
    unused = {i for i, n in enumerate(nodes) if n.op_type == "Constant" and n.output[0] not in used}
    _keep(graph, nodes, unused)
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
