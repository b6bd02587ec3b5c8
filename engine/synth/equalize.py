"""Training-free preparation of a decoder stage for int8: function-preserving per-channel
rescaling (cross-layer equalization) and bias correction, applied to a copy of the fp32
graph's initializers before ONNX Runtime quantizes it.

Why it is possible. LeakyReLU is positively homogeneous (``lrelu(s·x) = s·lrelu(x)`` for
``s > 0``), and so are Add and division by a constant. So a channel of the tensor between
two convolutions can be divided by ``s`` at the producer (its weight rows and bias) and
multiplied back at the consumer (its weight's input columns): the function is unchanged,
but the ranges int8 sees are not. ONNX Runtime quantizes activations per tensor (one scale
for all channels: `QLinearConv`'s input scale is a scalar in the ONNX spec), so channels
whose range is much below the tensor's get few levels; rescaling moves that difficulty
into the weights, which are quantized per output channel.

Two kinds of channel groups are handled, found by structure in the graph:

- **pairs** (`find_pairs`): Conv A → LeakyRelu → Conv B, where A's output feeds only that
  LeakyRelu and it feeds only B (inside HiFi-GAN's residual blocks: ``convs1`` → ``convs2``);
- **the residual stream** (`find_stream`): from an upsampling ConvTranspose through Add,
  LeakyRelu and Div-by-constant nodes; producers are the ConvTranspose and the convolutions
  whose output is added to the stream (``convs2``), consumers every convolution that reads
  it (``convs1``, ``conv_post``). One scale per channel for the whole stream.

Scales (`balance_scales`): ``s = a^α / w^(1−α)`` per channel, normalised to geometric mean 1,
where ``a`` is the channel's activation range (calibration statistics) and ``w`` the
consumers' weight range of that input channel (α = 0.5 balances both, as in SmoothQuant;
`cle_scales` is Nagel et al.'s weight-only rule ``s = sqrt(r1 / r2)``).

Bias correction (Nagel et al. 2019, §4.2, the empirical variant): the mean per channel of
(int8 output − fp32 output) of each quantized convolution, over calibration inputs, is
subtracted from that convolution's bias (`correct_biases`), so int8 rounding no longer
shifts the channel's mean.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_LOGGER = logging.getLogger(__name__)

_HOMOGENEOUS = ("LeakyRelu", "Relu", "Add", "Div", "Identity")
"""Element-wise nodes through which a positive per-channel scale passes unchanged (Div only
by a constant; Add only when every input carries the same scale)."""


@dataclass(frozen=True)
class Pair:
    """Conv `producer` → LeakyRelu → Conv `consumer`; `tensor` is the producer's output."""

    producer: str
    consumer: str
    tensor: str


@dataclass
class Stream:
    """Tensors that carry one per-channel scale, with the nodes that set and undo it."""

    tensors: list[str] = field(default_factory=list)
    producers: list[str] = field(default_factory=list)
    """Conv/ConvTranspose nodes whose output joins the stream (rows and bias ÷ s)."""
    consumers: list[str] = field(default_factory=list)
    """Conv nodes that read the stream (input columns × s)."""
    probe: str = ""
    """The stream tensor whose range is used for the scales (the producer's output)."""


class _Graph:
    def __init__(self, model: Any, nodes: Iterable[str] | None = None) -> None:
        self.model = model
        self.graph = model.graph
        self.inits = {t.name: t for t in self.graph.initializer}
        self.by_name = {n.name: n for n in self.graph.node}
        self.producer = {o: n for n in self.graph.node for o in n.output}
        self.consumers: dict[str, list[Any]] = {}
        for n in self.graph.node:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)
        self.outputs = {o.name for o in self.graph.output}
        self.scope = set(nodes) if nodes is not None else set(self.by_name)

    def weight(self, node: Any) -> np.ndarray | None:
        from onnx import numpy_helper

        if len(node.input) < 2 or node.input[1] not in self.inits:
            return None
        return numpy_helper.to_array(self.inits[node.input[1]])

    def const(self, name: str) -> np.ndarray | None:
        from onnx import numpy_helper

        if name in self.inits:
            return numpy_helper.to_array(self.inits[name])
        node = self.producer.get(name)
        if node is not None and node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    return numpy_helper.to_array(a.t)
        return None

    def is_conv(self, node: Any) -> bool:
        return (
            node.op_type in ("Conv", "ConvTranspose")
            and node.name in self.scope
            and self.weight(node) is not None
            and _group(node) == 1
        )


def _group(node: Any) -> int:
    return next((int(a.i) for a in node.attribute if a.name == "group"), 1)


def find_pairs(model: Any, nodes: Iterable[str] | None = None) -> list[Pair]:
    """Conv → LeakyRelu → Conv chains inside `nodes` (default: the whole graph)."""
    g = _Graph(model, nodes)
    pairs = []
    for a in g.graph.node:
        if a.op_type != "Conv" or not g.is_conv(a) or a.output[0] in g.outputs:
            continue
        users = g.consumers.get(a.output[0], [])
        if len(users) != 1 or users[0].op_type != "LeakyRelu":
            continue
        act = users[0]
        nxt = g.consumers.get(act.output[0], [])
        if act.output[0] in g.outputs or len(nxt) != 1:
            continue
        b = nxt[0]
        if b.op_type == "Conv" and g.is_conv(b) and b.input[0] == act.output[0]:
            pairs.append(Pair(a.name, b.name, a.output[0]))
    return pairs


def find_stream(model: Any, start: str, nodes: Iterable[str] | None = None) -> Stream | None:
    """The residual stream that begins at the output of the ConvTranspose `start` (a node
    name), or None when a scale could not be undone exactly (the stream reaches a graph
    output or a node that is not positively homogeneous)."""
    g = _Graph(model, nodes)
    first = g.by_name.get(start)
    if first is None or not g.is_conv(first):
        return None
    stream = Stream(producers=[start], probe=first.output[0])
    seen: set[str] = set()
    todo = [first.output[0]]
    while todo:
        t = todo.pop()
        if t in seen:
            continue
        if t in g.outputs:
            return None
        seen.add(t)
        stream.tensors.append(t)
        for user in g.consumers.get(t, []):
            if user.op_type in ("Conv", "ConvTranspose"):
                if not g.is_conv(user) or user.input[0] != t or user.op_type != "Conv":
                    return None
                if user.name not in stream.consumers:
                    stream.consumers.append(user.name)
            elif user.op_type in _HOMOGENEOUS:
                if user.op_type == "Div":
                    d = g.const(user.input[1])
                    if user.input[0] != t or d is None or d.size != 1 or float(d) <= 0:
                        return None
                if user.op_type == "Add":
                    for other in user.input:
                        if other in seen or other == t:
                            continue
                        src = g.producer.get(other)
                        if src is None:
                            return None
                        if src.op_type in ("Conv", "ConvTranspose") and g.is_conv(src):
                            if len(g.consumers.get(other, [])) != 1:
                                return None
                            if src.name not in stream.producers:
                                stream.producers.append(src.name)
                            seen.add(other)
                        elif src.op_type not in _HOMOGENEOUS:
                            return None
                        else:
                            todo.append(other)
                todo.extend(user.output)
            else:
                return None
    return stream


# ----------------------------------------------------------------------------- scales ---


def _out_axis(node: Any) -> int:
    return 1 if node.op_type == "ConvTranspose" else 0


def _in_axis(node: Any) -> int:
    return 0 if node.op_type == "ConvTranspose" else 1


def _channel_absmax(w: np.ndarray, axis: int) -> np.ndarray:
    other = tuple(i for i in range(w.ndim) if i != axis)
    return np.abs(w).max(axis=other)


def _normalise(s: np.ndarray, limit: float) -> np.ndarray:
    s = np.where(np.isfinite(s) & (s > 0), s, 1.0)
    s = s / np.exp(np.mean(np.log(s)))
    return np.clip(s, 1.0 / limit, limit)


def balance_scales(
    act_range: np.ndarray, consumer_weights: Sequence[np.ndarray], alpha: float, limit: float = 64.0
) -> np.ndarray:
    """Per-channel ``s = a^α / w^(1−α)`` (geometric mean 1, clipped to [1/limit, limit]):
    `act_range` the channel's activation range, `consumer_weights` the weight tensors of the
    convolutions that read the channel (`[out, in, k]`; their max over out and k per in)."""
    w = np.max([_channel_absmax(cw, 1) for cw in consumer_weights], axis=0)
    a = np.maximum(np.asarray(act_range, np.float64), 1e-12)
    return _normalise(a**alpha / np.maximum(w, 1e-12) ** (1.0 - alpha), limit)


def cle_scales(producer: np.ndarray, producer_axis: int, consumer: np.ndarray) -> np.ndarray:
    """Nagel et al.'s cross-layer equalization: ``s = sqrt(r1 / r2)`` with r1 the producer's
    output-channel weight range and r2 the consumer's input-channel weight range, so both
    become ``sqrt(r1·r2)``."""
    r1 = np.maximum(_channel_absmax(producer, producer_axis), 1e-12)
    r2 = np.maximum(_channel_absmax(consumer, 1), 1e-12)
    return np.sqrt(r1 / r2)


# ------------------------------------------------------------------------------ apply ---


def _set(g: _Graph, name: str, value: np.ndarray) -> None:
    from onnx import numpy_helper

    t = g.inits[name]
    t.CopyFrom(numpy_helper.from_array(value.astype(np.float32), name))


def _divide_outputs(g: _Graph, node: Any, s: np.ndarray) -> None:
    w = g.weight(node)
    assert w is not None
    shape = [1] * w.ndim
    shape[_out_axis(node)] = -1
    _set(g, node.input[1], w / s.reshape(shape))
    if len(node.input) > 2 and node.input[2]:
        b = g.const(node.input[2])
        assert b is not None
        _set(g, node.input[2], b / s)


def _multiply_inputs(g: _Graph, node: Any, s: np.ndarray) -> None:
    w = g.weight(node)
    assert w is not None
    shape = [1] * w.ndim
    shape[_in_axis(node)] = -1
    _set(g, node.input[1], w * s.reshape(shape))


def _own_initializers(g: _Graph, names: Iterable[str]) -> None:
    """Give each node in `names` its own weight and bias initializers (shared ones would be
    scaled twice)."""
    from onnx import numpy_helper

    uses: dict[str, int] = {}
    for n in g.graph.node:
        for i in n.input[1:]:
            uses[i] = uses.get(i, 0) + 1
    for name in names:
        node = g.by_name[name]
        for k in range(1, len(node.input)):
            i = node.input[k]
            if i in g.inits and uses.get(i, 0) > 1:
                copy = numpy_helper.from_array(numpy_helper.to_array(g.inits[i]), f"{i}.{name}")
                g.graph.initializer.append(copy)
                g.inits[copy.name] = g.graph.initializer[-1]
                node.input[k] = copy.name
                uses[i] -= 1


def scale_pair(model: Any, pair: Pair, s: np.ndarray) -> None:
    """Divide the producer's output channels by `s`, multiply the consumer's inputs by `s`."""
    g = _Graph(model)
    _own_initializers(g, [pair.producer, pair.consumer])
    _divide_outputs(g, g.by_name[pair.producer], s)
    _multiply_inputs(g, g.by_name[pair.consumer], s)


def scale_stream(model: Any, stream: Stream, s: np.ndarray) -> None:
    """Divide the stream's channels by `s` (at every producer), undo it at every consumer."""
    g = _Graph(model)
    _own_initializers(g, [*stream.producers, *stream.consumers])
    for name in stream.producers:
        _divide_outputs(g, g.by_name[name], s)
    for name in stream.consumers:
        _multiply_inputs(g, g.by_name[name], s)


def correct_biases(model: Any, shifts: dict[str, np.ndarray]) -> None:
    """Subtract `shifts[node]` (per output channel) from each named convolution's bias,
    adding a bias where the convolution has none."""
    from onnx import numpy_helper

    g = _Graph(model)
    _own_initializers(g, list(shifts))
    for name, shift in shifts.items():
        node = g.by_name[name]
        w = g.weight(node)
        assert w is not None
        out = w.shape[_out_axis(node)]
        if len(node.input) > 2 and node.input[2]:
            b = g.const(node.input[2])
            assert b is not None
            _set(g, node.input[2], b - shift)
        else:
            bias = numpy_helper.from_array((-shift).astype(np.float32).reshape(out), f"{name}.bias")
            g.graph.initializer.append(bias)
            node.input.append(bias.name)


# ------------------------------------------------------------------------- statistics ---


def tensor_stats(
    model: Any, tensors: Sequence[str], feeds: Iterable[dict[str, np.ndarray]], threads: int = 1
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per channel (axis 1) of each tensor in `tensors`, over all `feeds`: (max |x|, mean x)."""
    import onnx
    import onnxruntime as ort

    from .onnx_backend import session_options

    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for t in tensors:
        if t not in have:
            m.graph.output.append(onnx.helper.make_empty_tensor_value_info(t))
    opts = session_options(threads)
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(
        m.SerializeToString(), sess_options=opts, providers=["CPUExecutionProvider"]
    )
    amax: dict[str, np.ndarray] = {}
    total: dict[str, np.ndarray] = {}
    count: dict[str, int] = {}
    for feed in feeds:
        outs = sess.run(list(tensors), feed)
        for t, v in zip(tensors, outs, strict=True):
            x = np.moveaxis(np.asarray(v, np.float64), 1, 0).reshape(v.shape[1], -1)
            amax[t] = np.maximum(amax.get(t, 0.0), np.abs(x).max(axis=1))
            total[t] = total.get(t, 0.0) + x.sum(axis=1)
            count[t] = count.get(t, 0) + x.shape[1]
    return {t: (amax[t], total[t] / max(count[t], 1)) for t in tensors}
