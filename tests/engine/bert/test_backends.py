"""BERT features: PyTorch and ONNX Runtime paths against the reference's tiny-model features,
ONNX export in hayakoe's names/layout, int8 quantisation, batching and `load_bert`."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from engine.bert import load_bert

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
pytest.importorskip("transformers")

from engine.bert.export import export_bert
from engine.bert.onnx_backend import OnnxBert
from engine.bert.torch_backend import TorchBert
from tests.helpers.paths import BERT_SMALL, REPO_ROOT

RECORDS = [
    json.loads(line)
    for line in (BERT_SMALL / "bert_golden.jsonl").read_text(encoding="utf-8").splitlines()
]
GOLDEN = dict(np.load(BERT_SMALL / "bert_golden.npz"))
PLAIN = [r for r in RECORDS if not r["assist_text"]]
ASSIST = [r for r in RECORDS if r["assist_text"]]


def _golden(rec: dict, key: str) -> np.ndarray:
    return GOLDEN[rec["keys"][key]]


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float((a * b).sum() / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def torch_bert() -> TorchBert:
    return TorchBert(BERT_SMALL, BERT_SMALL, device="cpu")


@pytest.fixture(scope="module")
def bert_root(tmp_path_factory) -> Path:
    """bert_small exported once into hayakoe's layout (fp32 kept, q8 written)."""
    out = tmp_path_factory.mktemp("bert_root")
    result = export_bert(BERT_SMALL, out, quantize=True, keep_fp32=True)
    assert result.fp32_max_abs_diff <= 1e-3
    return out


@pytest.fixture(scope="module")
def onnx_fp32(bert_root: Path) -> OnnxBert:
    return OnnxBert(bert_root / "onnx/bert/fp32/bert.onnx", bert_root / "bert/tokenizer", threads=1)


@pytest.fixture(scope="module")
def onnx_q8(bert_root: Path) -> OnnxBert:
    return OnnxBert(
        bert_root / "onnx/bert/q8/bert_q8.onnx", bert_root / "bert/tokenizer", threads=1
    )


# -- PyTorch ---------------------------------------------------------------------------------


def test_torch_features_match_golden_batched(torch_bert: TorchBert) -> None:
    feats = torch_bert.features(
        [r["bert_text"] for r in PLAIN], [r["word2ph_blank"] for r in PLAIN]
    )
    assert torch_bert.hidden_size == 64
    for rec, feat in zip(PLAIN, feats):
        want = _golden(rec, "feat_blank")
        assert feat.dtype == np.float32 and feat.shape == want.shape == tuple(
            rec["feat_blank_shape"]
        )
        assert np.abs(feat - want).max() <= 1e-4, rec["idx"]


@pytest.mark.parametrize("rec", PLAIN, ids=lambda r: f"s{r['idx']}")
def test_torch_features_raw_word2ph_and_token_states(torch_bert: TorchBert, rec: dict) -> None:
    (feat,) = torch_bert.features([rec["bert_text"]], [rec["word2ph"]])
    assert np.abs(feat - _golden(rec, "feat")).max() <= 1e-4
    (hidden,) = torch_bert.hidden_states([rec["input_ids"]])
    assert np.abs(hidden - _golden(rec, "hidden_states_m3")).max() <= 1e-4


def test_torch_relative_position_projections_are_cached(torch_bert: TorchBert) -> None:
    from engine.bert.torch_backend import _CachedRelProjection, load_third_from_last

    rec = PLAIN[0]
    (hidden,) = torch_bert.hidden_states([rec["input_ids"]])
    cached = [m for m in torch_bert.model.modules() if isinstance(m, _CachedRelProjection)]
    assert len(cached) == 2 * 2  # query and key of the 2 kept layers
    assert all(m._out is not None for m in cached)  # the cache was really used
    plain = load_third_from_last(BERT_SMALL)
    ids = torch.tensor([rec["input_ids"]])
    with torch.no_grad():
        want = plain(ids, torch.ones_like(ids))[0].numpy()
    assert np.abs(hidden - want).max() <= 1e-6


def test_torch_assist_text(torch_bert: TorchBert) -> None:
    for rec in ASSIST:
        (feat,) = torch_bert.features(
            [rec["bert_text"]],
            [rec["word2ph_blank"]],
            assist_text=rec["assist_text"],
            assist_text_weight=rec["assist_text_weight"],
        )
        want = _golden(rec, "feat_blank")
        assert np.abs(feat - want).max() <= 1e-4
        (plain,) = torch_bert.features([rec["bert_text"]], [rec["word2ph_blank"]])
        assert np.abs(plain - want).max() > 1e-2  # the option really changes the feature


# -- ONNX export and ONNX Runtime ------------------------------------------------------------


def test_exported_layout_and_graph_contract(bert_root: Path) -> None:
    assert (bert_root / "bert/tokenizer/vocab.txt").read_bytes() == (
        BERT_SMALL / "vocab.txt"
    ).read_bytes()
    assert (bert_root / "bert/tokenizer/tokenizer_config.json").is_file()
    model = onnx.load(str(bert_root / "onnx/bert/fp32/bert.onnx"))
    assert max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")) == 17
    inputs = {i.name: i for i in model.graph.input}
    assert list(inputs) == ["input_ids", "attention_mask"]
    for inp in inputs.values():
        assert inp.type.tensor_type.elem_type == onnx.TensorProto.INT64
        assert [d.dim_param for d in inp.type.tensor_type.shape.dim] == ["batch", "seq_len"]
    (out,) = model.graph.output
    assert out.name == "hidden_states" and out.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    dims = out.type.tensor_type.shape.dim
    assert [d.dim_param for d in dims[:2]] == ["batch", "seq_len"] and dims[2].dim_value == 64
    # Only layers 0..N-3 are in the graph (4 layers → layer.0 and layer.1).
    names = " ".join(n.name for n in model.graph.node)
    assert "layer.1/" in names and "layer.2/" not in names and "layer.3/" not in names


def test_onnx_fp32_matches_golden_batched(onnx_fp32: OnnxBert) -> None:
    feats = onnx_fp32.features([r["bert_text"] for r in PLAIN], [r["word2ph_blank"] for r in PLAIN])
    assert onnx_fp32.hidden_size == 64
    for rec, feat in zip(PLAIN, feats):
        want = _golden(rec, "feat_blank")
        assert feat.dtype == np.float32 and feat.shape == want.shape
        assert np.abs(feat - want).max() <= 1e-3, rec["idx"]
    for rec in ASSIST:
        (feat,) = onnx_fp32.features(
            [rec["bert_text"]],
            [rec["word2ph_blank"]],
            assist_text=rec["assist_text"],
            assist_text_weight=rec["assist_text_weight"],
        )
        assert np.abs(feat - _golden(rec, "feat_blank")).max() <= 1e-3


def test_batch_equals_one_by_one(onnx_fp32: OnnxBert, torch_bert: TorchBert) -> None:
    texts = [r["bert_text"] for r in PLAIN]
    w2ps = [r["word2ph_blank"] for r in PLAIN]
    for bert in (onnx_fp32, torch_bert):
        batched = bert.features(texts, w2ps)
        single = [bert.features([t], [w])[0] for t, w in zip(texts, w2ps)]
        for a, b in zip(batched, single):
            assert a.shape == b.shape
            assert np.abs(a - b).max() <= 1e-5


@pytest.mark.parametrize(
    "budget, fits",
    [
        ({"max_batch_tokens": 40}, lambda b, s: b * s <= 40),
        ({"max_batch_attention": 2000}, lambda b, s: b * s * s <= 2000),
    ],
    ids=["tokens", "attention"],
)
def test_batches_split_by_budget(bert_root: Path, onnx_fp32: OnnxBert, budget: dict, fits) -> None:
    small = OnnxBert(
        bert_root / "onnx/bert/fp32/bert.onnx", bert_root / "bert/tokenizer", threads=1, **budget
    )
    calls: list[tuple[int, int]] = []
    inner = small._hidden

    def spy(ids, mask):
        calls.append(ids.shape)
        return inner(ids, mask)

    small._hidden = spy  # type: ignore[method-assign]
    texts = [r["bert_text"] for r in PLAIN]
    w2ps = [r["word2ph_blank"] for r in PLAIN]
    got = small.features(texts, w2ps)
    assert 1 < len(calls) < len(texts)
    assert all(fits(b, s) or b == 1 for b, s in calls)
    assert sum(b for b, _ in calls) == len(texts)
    for a, b in zip(got, onnx_fp32.features(texts, w2ps)):
        assert np.abs(a - b).max() <= 1e-5


def test_onnx_session_is_usable_from_threads(onnx_fp32: OnnxBert) -> None:
    texts = [r["bert_text"] for r in PLAIN[:4]]
    w2ps = [r["word2ph_blank"] for r in PLAIN[:4]]
    want = onnx_fp32.features(texts, w2ps)
    results: list[list[np.ndarray]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(3):
                results.append(onnx_fp32.features(texts, w2ps))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 12
    for res in results:
        for a, b in zip(res, want):
            assert np.abs(a - b).max() <= 1e-5


def test_int8_loads_and_is_close(onnx_q8: OnnxBert, bert_root: Path) -> None:
    model = onnx.load(str(bert_root / "onnx/bert/q8/bert_q8.onnx"))
    ops = {n.op_type for n in model.graph.node}
    assert "MatMulInteger" in ops or "DynamicQuantizeMatMul" in ops  # really quantised
    assert [i.name for i in model.graph.input] == ["input_ids", "attention_mask"]
    assert {(o.domain, o.version) for o in model.opset_import} == {("", 17)}
    # Constant-folded before quantising: every weight MatMul is int8, no float copy is left.
    inits = {t.name for t in model.graph.initializer}
    assert not [name for name in inits if name + "_quantized" in inits]
    assert (bert_root / "onnx/bert/q8").iterdir().__next__().name == "bert_q8.onnx"
    assert len(list((bert_root / "onnx/bert/q8").iterdir())) == 1  # no temp files left
    feats = onnx_q8.features([r["bert_text"] for r in PLAIN], [r["word2ph_blank"] for r in PLAIN])
    cosines, diffs = [], []
    for rec, feat in zip(PLAIN, feats):
        want = _golden(rec, "feat_blank")
        assert feat.shape == want.shape
        cosines.append(_cosine(feat, want))
        diffs.append(float(np.abs(feat - want).max()))
    print(
        f"int8 vs reference fp32 (tiny random model): min cosine {min(cosines):.6f}, max abs "
        f"{max(diffs):.4f}"
    )
    assert min(cosines) > 0.99  # loose: int8 is approximate, but must still be the same feature


def test_hayakoe_style_full_graph_loads(tmp_path: Path) -> None:
    """A graph bert_root the way hayakoe's dev-tools do (whole model, output hidden_states[-3],
    last layers left in as dead code) loads in OnnxBert and gives the same features."""
    from transformers import AutoModelForMaskedLM

    class FullModelMinus3(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = AutoModelForMaskedLM.from_pretrained(
                str(BERT_SMALL), dtype=torch.float32
            ).eval()

        def forward(self, input_ids, attention_mask):
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True
            ).hidden_states[-3]

    ids = torch.tensor([PLAIN[0]["input_ids"]])
    path = tmp_path / "bert.onnx"
    with torch.no_grad():
        torch.onnx.export(
            FullModelMinus3(),
            (ids, torch.ones_like(ids)),
            str(path),
            input_names=["input_ids", "attention_mask"],
            output_names=["hidden_states"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "seq_len"},
                "attention_mask": {0: "batch", 1: "seq_len"},
                "hidden_states": {0: "batch", 1: "seq_len"},
            },
            opset_version=17,
            do_constant_folding=True,
            dynamo=False,
        )
    bert = OnnxBert(path, BERT_SMALL, threads=1)
    feats = bert.features(
        [r["bert_text"] for r in PLAIN[:3]], [r["word2ph_blank"] for r in PLAIN[:3]]
    )
    for rec, feat in zip(PLAIN[:3], feats):
        assert np.abs(feat - _golden(rec, "feat_blank")).max() <= 1e-3


def test_our_graph_runs_as_hayakoe_feeds_it(bert_root: Path) -> None:
    """hayakoe feeds only input_ids/attention_mask (padded batch) and reads output 0."""
    import onnxruntime as ort

    sess = ort.InferenceSession(
        str(bert_root / "onnx/bert/q8/bert_q8.onnx"), providers=["CPUExecutionProvider"]
    )
    a, b = PLAIN[0]["input_ids"], PLAIN[1]["input_ids"]
    n = max(len(a), len(b))
    ids = np.zeros((2, n), dtype=np.int64)
    mask = np.zeros((2, n), dtype=np.int64)
    for row, seq in enumerate((a, b)):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    out = sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    assert out.shape == (2, n, 64) and out.dtype == np.float32
    assert _cosine(out[1, : len(b)], _golden(PLAIN[1], "hidden_states_m3")) > 0.99


# -- load_bert and errors --------------------------------------------------------------------


def _hayakoe_root(tmp_path: Path, bert_root: Path) -> Path:
    root = tmp_path / "root"
    (root / "onnx/bert/q8").mkdir(parents=True)
    (root / "onnx/bert/q8/bert_q8.onnx").write_bytes(
        (bert_root / "onnx/bert/q8/bert_q8.onnx").read_bytes()
    )
    (root / "bert/tokenizer").mkdir(parents=True)
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        (root / "bert/tokenizer" / name).write_bytes((BERT_SMALL / name).read_bytes())
    (root / "pytorch/bert/fp32").mkdir(parents=True)
    for name in ("config.json", "model.safetensors"):
        (root / "pytorch/bert/fp32" / name).write_bytes((BERT_SMALL / name).read_bytes())
    return root


def test_load_bert_from_hayakoe_layout(tmp_path: Path, bert_root: Path, onnx_q8: OnnxBert) -> None:
    root = _hayakoe_root(tmp_path, bert_root)
    rec = PLAIN[1]
    cpu = load_bert(root, "cpu", threads=1)
    assert isinstance(cpu, OnnxBert) and cpu.path == root / "onnx/bert/q8/bert_q8.onnx"
    (feat,) = cpu.features([rec["bert_text"]], [rec["word2ph_blank"]])
    (want,) = onnx_q8.features([rec["bert_text"]], [rec["word2ph_blank"]])
    assert np.array_equal(feat, want)
    pt = load_bert(root, "cpu", backend="torch")
    assert isinstance(pt, TorchBert)
    (feat,) = pt.features([rec["bert_text"]], [rec["word2ph_blank"]])
    assert np.abs(feat - _golden(rec, "feat_blank")).max() <= 1e-4


def test_load_bert_from_source_fetches_only_what_it_needs(tmp_path: Path, bert_root: Path) -> None:
    root = _hayakoe_root(tmp_path, bert_root)

    class RecordingSource:
        def __init__(self) -> None:
            self.fetched: list[str] = []

        def fetch(self, prefix: str) -> Path:
            self.fetched.append(prefix)
            return root / prefix

    src = RecordingSource()
    bert = load_bert(src, "cpu", threads=1)
    assert sorted(src.fetched) == ["bert/tokenizer", "onnx/bert/q8"]
    assert bert.hidden_size == 64
    src = RecordingSource()
    load_bert(src, "cpu", backend="torch")
    assert sorted(src.fetched) == ["bert/tokenizer", "pytorch/bert/fp32"]


def test_load_bert_missing_file_names_it(tmp_path: Path) -> None:
    (tmp_path / "onnx/bert/q8").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="bert_q8.onnx"):
        load_bert(tmp_path, "cpu")
    with pytest.raises(FileNotFoundError, match="pytorch/bert/fp32"):
        load_bert(tmp_path, "cuda")


def test_wrong_graph_inputs_are_refused(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.INT64, ["b", "s"])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, ["b", "s"])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x], [y])
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(ValueError, match="input_ids"):
        OnnxBert(path, BERT_SMALL)


def test_word2ph_length_is_checked(onnx_fp32: OnnxBert) -> None:
    with pytest.raises(ValueError, match=r"len\(word2ph\) = 3.*needs len\(text\) \+ 2 = 4"):
        onnx_fp32.features(["あい"], [[1, 2, 1]])
    with pytest.raises(ValueError, match="2 BERT texts but 1"):
        onnx_fp32.features(["あ", "い"], [[1, 1, 1]])
    assert onnx_fp32.features([], []) == []


def test_zero_entries_drop_tokens(onnx_fp32: OnnxBert) -> None:
    (full,) = onnx_fp32.features(["あいう"], [[1, 1, 1, 1, 1]])
    (part,) = onnx_fp32.features(["あいう"], [[1, 0, 2, 1, 1]])
    assert part.shape == (64, 5)
    assert np.array_equal(part[:, 0], full[:, 0])
    assert np.array_equal(part[:, 1], full[:, 2]) and np.array_equal(part[:, 2], full[:, 2])


def test_odd_text_keeps_alignment(onnx_fp32: OnnxBert) -> None:
    # "㍻" expands under NFKC and " " vanishes in the reference tokenizer; we stay aligned.
    (feat,) = onnx_fp32.features(["あ㍻ い"], [[1, 1, 1, 1, 1, 1]])
    assert feat.shape == (64, 6)


def test_cpu_path_imports_neither_torch_nor_transformers(bert_root: Path) -> None:
    code = (
        "import sys\n"
        "from engine.bert import load_bert\n"
        f"b = load_bert({str(bert_root)!r}, 'cpu', threads=1)\n"
        "f = b.features(['こんにちは.'], [[1] * 8])\n"
        "assert f[0].shape == (64, 8)\n"
        "bad = [m for m in ('torch', 'transformers') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def test_long_text_beyond_512_positions(onnx_fp32: OnnxBert, torch_bert: TorchBert) -> None:
    """No absolute positions (position_biased_input false): texts past 512 tokens still work,
    and ONNX (traced on 9 tokens) agrees with PyTorch there."""
    text = ("今日はとても良い天気ですね、" * 45)[:630]
    w2p = [1] * (len(text) + 2)
    (a,) = onnx_fp32.features([text], [w2p])
    (b,) = torch_bert.features([text], [w2p])
    assert a.shape == b.shape == (64, 632)
    assert np.abs(a - b).max() <= 1e-3


def test_session_threads_and_memory_helpers() -> None:
    import os
    import platform

    from engine.bert.onnx_backend import physical_cores, session_options
    from engine.heap import trim_heap

    cores = physical_cores()
    assert 1 <= cores <= (os.cpu_count() or 1)
    assert session_options().intra_op_num_threads == cores
    assert session_options(3).intra_op_num_threads == 3
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert trim_heap() is True
