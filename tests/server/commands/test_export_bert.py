"""`wyoming-hayakoe export-bert`: writes hayakoe's layout that `load_bert` then reads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("onnx")

from engine.bert import load_bert
from tests.helpers.paths import BERT_SMALL
from wyoming_hayakoe.commands.export_bert import main

REC = json.loads((BERT_SMALL / "bert_golden.jsonl").read_text(encoding="utf-8").splitlines()[1])
GOLDEN = np.load(BERT_SMALL / "bert_golden.npz")


def test_export_from_model_folder(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert main([str(BERT_SMALL), "--out", str(out), "--keep-fp32"]) == 0
    printed = capsys.readouterr().out
    assert "bert_q8.onnx" in printed and "max abs diff" in printed
    assert (out / "onnx/bert/q8/bert_q8.onnx").is_file()
    assert (out / "onnx/bert/fp32/bert.onnx").is_file()
    assert (out / "bert/tokenizer/vocab.txt").is_file()
    assert not [p for p in out.iterdir() if p.name.startswith("bert-export-")]  # temp dir removed
    bert = load_bert(out, "cpu", precision="fp32", threads=1)
    (feat,) = bert.features([REC["bert_text"]], [REC["word2ph_blank"]])
    assert np.abs(feat - GOLDEN[REC["keys"]["feat_blank"]]).max() <= 1e-3


def test_export_from_hayakoe_root_without_fp32(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(BERT_SMALL, root / "pytorch/bert/fp32")
    out = tmp_path / "out"
    assert main([str(root), "--out", str(out), "--no-check"]) == 0
    assert (out / "onnx/bert/q8/bert_q8.onnx").is_file()
    assert not (out / "onnx/bert/fp32").exists()
    bert = load_bert(out, "cpu", threads=1)
    assert bert.hidden_size == 64


def test_missing_model_is_a_clear_error(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "config.json" in capsys.readouterr().err
