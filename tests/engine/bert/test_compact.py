"""The int8 BERT's word embeddings held in int8 (`engine.bert.compact`): the graph rewrite,
its features against the original's (real ONNX Runtime sessions on the small test BERT),
the gated derived file in the cache, and the fallback when the gate fails."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engine.bert import compact
from engine.bert.compact import compact_constants
from engine.bert.export import export_bert
from engine.bert.onnx_backend import OnnxBert
from tests.helpers.paths import BERT_SMALL

SENTENCES = ["今日はいい天気ですね", "照明を消しました", "あと十五分です"]


@pytest.fixture(scope="module")
def q8(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bert")
    result = export_bert(BERT_SMALL, out, quantize=True, check=False)
    assert result.q8_path is not None
    return result.q8_path


def _features(bert: OnnxBert) -> list[np.ndarray]:
    ids = [bert.token_ids(s) for s in SENTENCES]
    return bert.hidden_states(ids)


def test_compact_constants_stores_the_embeddings_in_int8(q8: Path, tmp_path: Path) -> None:
    import onnx

    model = onnx.load(str(q8))
    fp32_rows = [
        t
        for t in model.graph.initializer
        if t.data_type == onnx.TensorProto.FLOAT and len(t.dims) == 2 and t.dims[0] == 22012
    ]
    assert len(fp32_rows) == 1  # the word embeddings, fp32 in hayakoe's kind of q8 file
    report = compact_constants(model, embeddings=True)
    assert report.embeddings == [fp32_rows[0].name]
    assert report.bytes_after < 0.3 * report.bytes_before
    tables = {t.name: t for t in model.graph.initializer}
    assert fp32_rows[0].name not in tables
    assert tables[f"{fp32_rows[0].name}.int8"].data_type == onnx.TensorProto.INT8
    onnx.checker.check_model(model)
    path = tmp_path / "compact.onnx"
    onnx.save(model, str(path))
    plain = _features(OnnxBert(q8, BERT_SMALL, threads=1, cache_dir=tmp_path))
    small = _features(OnnxBert(path, BERT_SMALL, threads=1, cache_dir=tmp_path))
    for a, b in zip(plain, small, strict=True):
        assert a.shape == b.shape
        assert compact.token_cosines(a, b).min() >= compact.MIN_COSINE
        assert 0 < np.abs(a - b).max() < 0.05 * np.abs(a).max()  # changed, a little


def test_compact_model_is_made_once_gated_and_used(
    q8: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tok = BERT_SMALL
    target = compact.compact_model(q8, tok, tmp_path)
    assert target is not None and target.is_file()
    assert tmp_path in target.parents  # a derived file: the cache, never beside the model
    report = json.loads(target.with_name(target.name + ".json").read_text())
    assert report["passed"] and report["cosine_min"] >= compact.MIN_COSINE
    assert report["sentences"] == len(compact.GATE_SENTENCES)
    mtime = target.stat().st_mtime_ns
    assert compact.compact_model(q8, tok, tmp_path) == target
    assert target.stat().st_mtime_ns == mtime  # not made again

    monkeypatch.setattr("engine.bert.onnx_backend.COMPACT_MIN_BYTES", 0)
    bert = OnnxBert(q8, tok, threads=1, cache_dir=tmp_path, int8_tables=True)
    assert bert.int8_tables
    plain = OnnxBert(q8, tok, threads=1, cache_dir=tmp_path)
    assert not plain.int8_tables
    for a, b in zip(_features(plain), _features(bert), strict=True):
        assert compact.token_cosines(a, b).min() >= compact.MIN_COSINE


def test_a_failed_gate_keeps_the_original(
    q8: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(compact, "MIN_COSINE", 1.01)  # no graph can pass
    target = compact.target_for(q8, tmp_path)
    target.parent.mkdir(parents=True)
    report = compact._make(q8, target, BERT_SMALL)
    assert not report["passed"] and report["cosine_min"] < 1.01
    assert not target.exists()
    with caplog.at_level("WARNING", logger="engine.bert.compact"):
        assert compact.compact_model(q8, BERT_SMALL, tmp_path) is None
    assert "int8 tables failed their gate" in caplog.text
    monkeypatch.setattr("engine.bert.onnx_backend.COMPACT_MIN_BYTES", 0)
    bert = OnnxBert(q8, BERT_SMALL, threads=1, cache_dir=tmp_path, int8_tables=True)
    assert not bert.int8_tables
