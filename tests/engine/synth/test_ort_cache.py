"""`engine.synth.ort_cache`: pre-optimised ONNX graphs are made once, cached under the
cache root (beside the source when the cache is not writable), and give the same outputs."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from engine.synth.ort_cache import SUFFIX, optimized_model


def _model(path: Path) -> Path:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Add", ["h", "b"], ["a"]),
        helper.make_node("Relu", ["a"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 8])],
        initializer=[w, b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return path


def _run(path: Path, x: np.ndarray) -> np.ndarray:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[
        0
    ]


def test_optimised_copy_is_made_once_and_equal(tmp_path: Path) -> None:
    src = _model(tmp_path / "m.onnx")
    out = optimized_model(src, cache_dir=tmp_path / "cache")
    assert (tmp_path / "cache") in out.parents and out.name == "m" + SUFFIX and out.is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cache",
        "m.onnx",
    ]  # source folder untouched
    x = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    np.testing.assert_allclose(_run(out, x), _run(src, x), rtol=0, atol=1e-6)
    mtime = out.stat().st_mtime_ns
    assert optimized_model(src, cache_dir=tmp_path / "cache") == out
    assert out.stat().st_mtime_ns == mtime  # reused
    # A changed source is optimised again.
    os.utime(src, ns=(src.stat().st_atime_ns, src.stat().st_mtime_ns + 10**9))
    optimized_model(src, cache_dir=tmp_path / "cache")
    assert out.stat().st_mtime_ns != mtime


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can write anywhere")
def test_read_only_cache_falls_back_beside_the_source(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    src = _model(tmp_path / "m.onnx")
    ro.chmod(0o555)
    try:
        out = optimized_model(src, cache_dir=ro / "cache")
    finally:
        ro.chmod(0o755)
    assert out == tmp_path / ("m" + SUFFIX) and out.is_file()


def test_missing_source_is_returned_unchanged(tmp_path: Path) -> None:
    assert optimized_model(tmp_path / "nope.onnx") == tmp_path / "nope.onnx"


def test_bert_graph_is_optimised_into_the_given_cache(layout_root: Path, tmp_path: Path) -> None:
    """`load_bert(..., cache_dir=)` (what `TTS(cache_dir=)` passes) keeps the BERT's optimised
    graph in that cache, not in the default one, and leaves the voice root untouched."""
    from engine import layout
    from engine.bert import load_bert

    before = sorted(p.name for p in (layout_root / layout.BERT_ONNX_Q8_PREFIX).iterdir())
    bert = load_bert(layout_root, "cpu", threads=1, cache_dir=tmp_path / "mine")
    made = sorted((tmp_path / "mine" / "derived").glob(f"*/*{SUFFIX}"))
    assert [p.name for p in made] == [layout.BERT_ONNX_Q8_FILE.removesuffix(".onnx") + SUFFIX]
    assert sorted(p.name for p in (layout_root / layout.BERT_ONNX_Q8_PREFIX).iterdir()) == before
    feats = bert.features(["こんにちは"], [[1] * 7])
    assert feats[0].shape == (bert.hidden_size, 7)
