"""Upsampling layers (ConvTranspose) rewritten as convolutions equal the original.

Real ONNX Runtime sessions: a single transposed convolution of several shapes, and a small
HiFi-GAN decoder of the real JP-Extra geometry (the project's `Generator`, 32 channels,
random weights), each run before and after `convtranspose_as_conv` on the same input; the
rewritten decoder is also cut into the same stages (`split_decoder_stages`) and run staged.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from engine.synth.decoder_split import find_stage_cuts, split_decoder_stages
from engine.synth.polyphase import POLYPHASE_SUFFIX, convtranspose_as_conv, upsampling_layers
from engine.synth.windowed import DecoderGeometry

ort = pytest.importorskip("onnxruntime")

TOLERANCE = 1e-5


def _session(model: onnx.ModelProto):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _convtranspose(c_in: int, c_out: int, k: int, s: int, p: int, **attrs) -> onnx.ModelProto:
    rng = np.random.default_rng(k * 100 + s)
    w = rng.standard_normal((c_in, c_out, k)).astype(np.float32)
    b = rng.standard_normal(c_out).astype(np.float32)
    node = helper.make_node(
        "ConvTranspose",
        ["x", "w", "b"],
        ["y"],
        name="up",
        kernel_shape=[k],
        strides=[s],
        pads=[p, p],
        **attrs,
    )
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c_in, "n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c_out, "m"])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(
    "k,s,p", [(16, 8, 4), (8, 2, 3), (2, 2, 0), (4, 2, 1), (7, 3, 2), (3, 1, 1), (12, 4, 4)]
)
def test_one_transposed_convolution_equals_its_polyphase_form(k, s, p):
    model = _convtranspose(5, 3, k, s, p)
    x = np.random.default_rng(1).standard_normal((1, 5, 23)).astype(np.float32)
    want = _session(model).run(None, {"x": x})[0]
    assert convtranspose_as_conv(model) == 1
    assert [n.op_type for n in model.graph.node] == ["Conv", "Transpose", "Reshape", "Transpose"]
    assert model.graph.node[0].name == "up" + POLYPHASE_SUFFIX
    assert upsampling_layers(model.graph) == [model.graph.node[0]]
    got = _session(model).run(None, {"x": x})[0]
    assert got.shape == want.shape == (1, 3, 23 * s)
    assert np.abs(got - want).max() <= TOLERANCE * np.abs(want).max()


def test_other_shapes_are_left_as_they_are():
    padded = _convtranspose(4, 2, 5, 2, 1, output_padding=[1])  # output length 2n + 2
    uneven = _convtranspose(4, 2, 5, 2, 1)  # kernel ≠ 2·pad + stride: output 2n + 1
    for model in (padded, uneven):
        before = model.SerializeToString()
        assert convtranspose_as_conv(model) == 0
        assert model.SerializeToString() == before
        assert [n.op_type for n in upsampling_layers(model.graph)] == ["ConvTranspose"]


@pytest.fixture(scope="module")
def small_decoder() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A 32-channel HiFi-GAN decoder of the JP-Extra geometry as ONNX (z, g → audio)."""
    import io

    from engine.model.generator import Generator

    geom = DecoderGeometry()
    torch.manual_seed(0)
    gen = Generator(
        8,
        geom.resblock,
        list(geom.resblock_kernel_sizes),
        [list(d) for d in geom.resblock_dilation_sizes],
        list(geom.upsample_rates),
        32,
        list(geom.upsample_kernel_sizes),
        gin_channels=8,
    )
    with torch.no_grad():  # weights that make every layer matter (a fresh init barely does)
        for module in gen.modules():
            if isinstance(module, torch.nn.Conv1d):
                fan_in = module.weight.shape[1] * module.weight.shape[2]
            elif isinstance(module, torch.nn.ConvTranspose1d):
                fan_in = module.weight.shape[0] * module.weight.shape[2] / module.stride[0]
            else:
                continue
            module.weight.normal_(0.0, 1.4 / math.sqrt(fan_in))
    gen.eval()
    rng = np.random.default_rng(3)
    feeds = {
        "z": rng.standard_normal((1, 8, 37)).astype(np.float32),
        "g": rng.standard_normal((1, 8, 1)).astype(np.float32),
    }
    buf = io.BytesIO()
    torch.onnx.export(
        gen,
        (torch.from_numpy(feeds["z"][:, :, :10]), torch.from_numpy(feeds["g"])),
        buf,
        input_names=["z", "g"],
        output_names=["audio"],
        dynamic_axes={"z": {2: "frames"}, "audio": {2: "samples"}},
        opset_version=17,
        dynamo=False,
    )
    return onnx.load_from_string(buf.getvalue()), feeds


def _staged(stages: list[onnx.ModelProto], feeds: dict[str, np.ndarray]) -> np.ndarray:
    x = _session(stages[0]).run(None, feeds)[0]
    for stage in stages[1:]:
        x = _session(stage).run(None, {"x": x})[0]
    return x


def test_rewritten_decoder_equals_the_original(small_decoder):
    original, feeds = small_decoder
    model = onnx.ModelProto()
    model.CopyFrom(original)
    want = _session(original).run(None, feeds)[0]
    assert convtranspose_as_conv(model) == 5
    assert not any(n.op_type == "ConvTranspose" for n in model.graph.node)
    got = _session(model).run(None, feeds)[0]
    assert got.shape == want.shape == (1, 1, 37 * 512)
    assert np.abs(want).max() > 0.05  # audio that depends on the latent, not silence
    assert np.abs(got - want).max() <= TOLERANCE
    # cut at the same tensors into the same stages, which run to the same audio
    assert find_stage_cuts(model) == find_stage_cuts(original)
    stages = split_decoder_stages(model)
    assert len(stages) == 6
    assert np.abs(_staged(stages, feeds) - want).max() <= TOLERANCE
