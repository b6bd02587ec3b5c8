"""`engine.synth.qdq_simplify`: each rewrite changes no output value (real ONNX Runtime
sessions, every 8-bit input value), and what it must not touch stays as it was."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from engine.synth.qdq_simplify import Simplified, simplify_qdq

ALL_VALUES = np.arange(256, dtype=np.uint8).reshape(1, 1, 256)
"""Every uint8 value once, as a [1, C, T] activation."""


def _const(name: str, value: float | int, dtype: type) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


def _model(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], out_type: int):
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("q", TensorProto.UINT8, [1, 1, 256])],
        [helper.make_tensor_value_info("out", out_type, [1, 1, 256])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def _run(model: onnx.ModelProto) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"q": ALL_VALUES})[0])


def _stream_sum(s2: float, z2: int) -> onnx.ModelProto:
    """What ONNX Runtime's quantizer writes at a decoder stage's end: the blocks' sum
    dequantized, divided by 3 (a Constant), quantized with the quotient's own range (s2, z2)
    and dequantized for a LeakyRelu, whose output is quantized again."""
    nodes = [
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["sum"], name="dq_sum"),
        helper.make_node("Constant", [], ["three"], value=_const("three_v", 3.0, np.float32)),
        helper.make_node("Div", ["sum", "three"], ["mean"], name="div"),
        helper.make_node("QuantizeLinear", ["mean", "s2", "z2"], ["mean_q"], name="q_mean"),
        helper.make_node("DequantizeLinear", ["mean_q", "s2", "z2"], ["mean_f"], name="dq_mean"),
        helper.make_node("LeakyRelu", ["mean_f"], ["act"], alpha=0.1, name="lrelu"),
        helper.make_node("QuantizeLinear", ["act", "s3", "z3"], ["out"], name="q_act"),
    ]
    inits = [
        _const("s", 0.02, np.float32),
        _const("z", 131, np.uint8),
        _const("s2", s2, np.float32),
        _const("z2", z2, np.uint8),
        _const("s3", 0.005, np.float32),
        _const("z3", 40, np.uint8),
    ]
    return _model(nodes, inits, TensorProto.UINT8)


def test_division_folds_into_the_scale_and_the_identity_requantization_goes() -> None:
    model = _stream_sum(np.float32(0.02) / np.float32(3.0), 131)
    want = _run(model)
    done = simplify_qdq(model)
    assert done == Simplified(divisions=1, requantizations=1, merged=0)
    ops = [n.op_type for n in model.graph.node]
    assert ops == ["DequantizeLinear", "LeakyRelu", "QuantizeLinear"]  # Constant: unused now
    assert {t.name for t in model.graph.initializer} >= {"s3", "z3"}
    assert "s2" not in {t.name for t in model.graph.initializer}
    np.testing.assert_array_equal(_run(model), want)


@pytest.mark.parametrize(
    ("s2", "z2"),
    [(0.02 / 3 * 1.01, 131), (0.02 / 3, 130)],
    ids=["scale one percent off", "other zero point"],
)
def test_a_real_requantization_is_kept(s2: float, z2: int) -> None:
    """Where Q → DQ would round some value to another one, it stays (the division still
    folds: that is exact whatever follows)."""
    model = _stream_sum(s2, z2)
    want = _run(model)
    done = simplify_qdq(model)
    assert done == Simplified(divisions=1, requantizations=0, merged=0)
    assert [n.op_type for n in model.graph.node].count("QuantizeLinear") == 2
    np.testing.assert_array_equal(_run(model), want)


def test_repeated_nodes_merge_with_constants_compared_by_value() -> None:
    """Three residual blocks begin with the same LeakyRelu of the same input, each quantized
    with its own (equal) scale initializer: one is left, and the sum reads it thrice."""
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["x"], name="dq")]
    inits = [_const("s", 0.02, np.float32), _const("z", 131, np.uint8)]
    for k in range(3):
        nodes += [
            helper.make_node("LeakyRelu", ["x"], [f"a{k}"], alpha=0.1, name=f"lrelu{k}"),
            helper.make_node("QuantizeLinear", [f"a{k}", f"s{k}", f"z{k}"], [f"aq{k}"]),
            helper.make_node("DequantizeLinear", [f"aq{k}", f"s{k}", f"z{k}"], [f"af{k}"]),
        ]
        inits += [_const(f"s{k}", 0.01, np.float32), _const(f"z{k}", 20, np.uint8)]
    nodes += [
        helper.make_node("Add", ["af0", "af1"], ["b"]),
        helper.make_node("Add", ["b", "af2"], ["out"]),
    ]
    model = _model(nodes, inits, TensorProto.FLOAT)
    want = _run(model)
    done = simplify_qdq(model)
    assert done == Simplified(divisions=0, requantizations=0, merged=6)
    assert [n.op_type for n in model.graph.node].count("LeakyRelu") == 1
    np.testing.assert_array_equal(_run(model), want)


@pytest.mark.parametrize(
    "pair",
    [
        (("LeakyRelu", {"alpha": 0.1}), ("LeakyRelu", {"alpha": 0.2})),
        (("RandomNormalLike", {"seed": 1.0}), ("RandomNormalLike", {"seed": 1.0})),
    ],
    ids=["other alpha", "random"],
)
def test_nodes_that_differ_or_draw_noise_are_not_merged(pair) -> None:
    (op_a, attrs_a), (op_b, attrs_b) = pair
    nodes = [
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["x"], name="dq"),
        helper.make_node(op_a, ["x"], ["a"], **attrs_a),
        helper.make_node(op_b, ["x"], ["b"], **attrs_b),
        helper.make_node("Add", ["a", "b"], ["out"]),
    ]
    inits = [_const("s", 0.02, np.float32), _const("z", 131, np.uint8)]
    model = _model(nodes, inits, TensorProto.FLOAT)
    assert simplify_qdq(model) == Simplified()
    assert [n.op_type for n in model.graph.node] == ["DequantizeLinear", op_a, op_b, "Add"]


def test_a_float_graph_is_left_as_it_is() -> None:
    """No DequantizeLinear, nothing to do: the fp32 decoder's bytes (golden hashes) stay."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4])
    nodes = [
        helper.make_node("Constant", [], ["three"], value=_const("v", 3.0, np.float32)),
        helper.make_node("Div", ["x", "three"], ["a"]),
        helper.make_node("Div", ["x", "three"], ["b"]),
        helper.make_node("Add", ["a", "b"], ["out"]),
    ]
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 1, 4])
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [out]))
    before = model.SerializeToString()
    assert simplify_qdq(model) == Simplified()
    assert model.SerializeToString() == before
