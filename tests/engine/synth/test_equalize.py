"""Cross-layer rescaling and bias correction (`engine.synth.equalize`) on a HiFi-GAN-shaped
stage built here (ConvTranspose → residual block → LeakyReLU → conv_post → tanh), run by
ONNX Runtime: the rescaled graph computes the same function, the channel groups are found by
structure, a group whose scale cannot be undone is refused, bias correction shifts the mean."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from engine.synth import equalize as eq

C = 4


def _stage(rng: np.random.Generator, tanh_on_stream: bool = False):
    def w(name: str, *shape: int, spread: float = 1.0) -> object:
        scale = np.exp(rng.normal(0, spread, size=(shape[0],) + (1,) * (len(shape) - 1)))
        value = (rng.standard_normal(shape) * scale * 0.3).astype(np.float32)
        return numpy_helper.from_array(value, name)

    inits = [
        w("up.w", C, C, 4, spread=1.5),
        numpy_helper.from_array(rng.standard_normal(C).astype(np.float32), "up.b"),
        w("c1.w", C, C, 3, spread=1.5),
        numpy_helper.from_array(rng.standard_normal(C).astype(np.float32), "c1.b"),
        w("c2.w", C, C, 3),
        numpy_helper.from_array(rng.standard_normal(C).astype(np.float32), "c2.b"),
        w("post.w", 1, C, 7),
        numpy_helper.from_array(np.array(2.0, np.float32), "two"),
    ]
    nodes = [
        helper.make_node("LeakyRelu", ["x"], ["a0"], alpha=0.1, name="act0"),
        helper.make_node(
            "ConvTranspose", ["a0", "up.w", "up.b"], ["s0"], strides=[2], pads=[1, 1], name="up"
        ),
        helper.make_node("LeakyRelu", ["s0"], ["a1"], alpha=0.1, name="act1"),
        helper.make_node("Conv", ["a1", "c1.w", "c1.b"], ["h1"], pads=[1, 1], name="c1"),
        helper.make_node("LeakyRelu", ["h1"], ["a2"], alpha=0.1, name="act2"),
        helper.make_node("Conv", ["a2", "c2.w", "c2.b"], ["h2"], pads=[1, 1], name="c2"),
        helper.make_node("Add", ["s0", "h2"], ["s1"], name="add"),
        helper.make_node("Div", ["s1", "two"], ["s2"], name="div"),
        helper.make_node("Tanh", ["s2"], ["a3"], name="act3")
        if tanh_on_stream
        else helper.make_node("LeakyRelu", ["s2"], ["a3"], alpha=0.01, name="act3"),
        helper.make_node("Conv", ["a3", "post.w"], ["p"], pads=[3, 3], name="post"),
        helper.make_node("Tanh", ["p"], ["y"], name="tanh"),
    ]
    graph = helper.make_graph(
        nodes,
        "stage",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, "n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, "m"])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


def test_groups_are_found_by_structure(rng: np.random.Generator) -> None:
    model = _stage(rng)
    assert eq.find_pairs(model) == [eq.Pair("c1", "c2", "h1")]
    stream = eq.find_stream(model, "up")
    assert stream is not None
    assert stream.producers == ["up", "c2"] and sorted(stream.consumers) == ["c1", "post"]
    assert eq.find_stream(_stage(rng, tanh_on_stream=True), "up") is None  # tanh: not undone


def test_rescaling_keeps_the_function(rng: np.random.Generator) -> None:
    model = _stage(rng)
    x = rng.standard_normal((1, C, 50)).astype(np.float32)
    want = _run(model, x)
    before = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == "c2.w"))
    pair = eq.find_pairs(model)[0]
    eq.scale_pair(model, pair, np.exp(rng.normal(0, 1, C)))
    stream = eq.find_stream(model, "up")
    assert stream is not None
    stats = eq.tensor_stats(model, [stream.probe], [{"x": x}])
    ws = [
        numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == n))
        for n in ("c1.w", "post.w")
    ]
    s = eq.balance_scales(stats[stream.probe][0], ws, alpha=0.5)
    assert np.all(s > 0) and not np.allclose(s, 1.0)
    eq.scale_stream(model, stream, s)
    after = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == "c2.w"))
    assert np.abs(after - before).max() > 1e-3  # weights really changed
    got = _run(model, x)
    assert np.abs(got - want).max() <= 1e-5 * max(1.0, float(np.abs(want).max()))


def test_cle_scales_equalise_weight_ranges(rng: np.random.Generator) -> None:
    model = _stage(rng)
    w = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    s = eq.cle_scales(w["c1.w"], 0, w["c2.w"])
    r1 = np.abs(w["c1.w"]).max(axis=(1, 2)) / s
    r2 = np.abs(w["c2.w"]).max(axis=(0, 2)) * s
    assert np.allclose(r1, r2, rtol=1e-5)


def test_bias_correction_moves_the_mean(rng: np.random.Generator) -> None:
    x = rng.standard_normal((1, C, 40)).astype(np.float32)
    shifts = {"post": np.array([0.25], np.float32), "c1": np.arange(C, dtype=np.float32)}
    for name, out in (("post", "p"), ("c1", "h1")):
        model = _stage(np.random.default_rng(3))
        before = eq.tensor_stats(model, [out], [{"x": x}])[out][1]
        eq.correct_biases(model, {name: shifts[name]})  # post has no bias: one is added
        after = eq.tensor_stats(model, [out], [{"x": x}])[out][1]
        assert np.allclose(after, before - shifts[name], atol=1e-5)
