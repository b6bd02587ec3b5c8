"""The int8 BERT's remaining fp32 tables stored in int8, made once per BERT file and gated.

hayakoe's `bert_q8.onnx` quantizes the MatMul weights only: its word embeddings (DeBERTa-v2's
22012 × 1024 table, 86 MiB) stay fp32, and so do the 44 relative-position tables the
query/key weights are folded into (2 MiB each, 88 MiB) — a third of the session's ~0.5 GB.
`compact_constants` stores both in int8 with one scale per row (22 and
22 MiB; a sentence's embedding rows are dequantized when gathered, the position tables on
each call). `compact_model(source)` returns
such a graph, made once in a child process (so its peak never lands in the server) into
`<cache>/derived/`, ONNX Runtime's portable optimisations applied (as `ort_cache`), and
**gated**: the child computes the features of `GATE_SENTENCES` with the original graph and
with the new one, and the new one is used only when every token's vector has cosine ≥
`MIN_COSINE` with the original's. A stamp (source size and mtime, ORT version, format,
threshold) makes a changed file or recipe redo it. On any failure, or when the gate fails,
it returns None and the caller loads the original graph (today's behaviour).

Measured on the full-size random-weight DeBERTa-v2-large (`benchmarks/bert_memory.py`,
docs/bert.md): RSS of the loaded BERT 583 → 454 MiB (−129 MiB; embeddings alone −65 MiB),
features vs today's q8 cosine min 0.99939 per token (today's q8 vs fp32: 0.99860).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..sources.cache import CacheDir

_LOGGER = logging.getLogger(__name__)

FORMAT = 1
SUFFIX = ".int8-tables.onnx"

MIN_COSINE = 0.999
"""Lowest cosine between a token's feature vector from the compacted graph and from the
original one. hayakoe's int8 BERT itself sits at 0.9986 from fp32 (random-weight full-size
model, lowest token); the compacted tables measured 0.99939 from it: the gate lets them add
at most about two thirds of the deviation hayakoe's own quantization has, and catches a
broken table (a wrong scale or row gives cosines far below)."""

GATE_SENTENCES = (
    "明日の朝七時に起こしてください。",
    "リビングの照明を少し暗くしました。",
    "今日の東京は晴れのち曇り、最高気温は二十三度の予想です。",
    "玄関の鍵が開いたままになっています。",
    "洗濯機の運転が終わりました。干すのを忘れないでくださいね。",
    "次の会議まであと十五分です。",
    "エアコンを二十六度の冷房に設定しました。",
    "おやすみなさい。良い夢を。",
)
"""Held-out text for the gate (smart-home replies; not the int8 calibration set)."""


EMBEDDING_MIN_ROWS = 1000
"""A Gather on an fp32 table with at least this many rows is a vocabulary embedding."""


@dataclass
class CompactReport:
    """What `compact_constants` changed in a graph."""

    embeddings: list[str]
    """Tables read by Gather now stored int8 with one scale per row."""
    constants: list[str]
    """Other large fp32 constants now stored int8 (DequantizeLinear at run time)."""
    bytes_before: int
    bytes_after: int


def _rowwise_int8(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per row of a 2-D table: (int8 table, float32 scales [rows, 1])."""
    amax = np.abs(table).max(axis=1, keepdims=True).astype(np.float32)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(table / scale), -127, 127).astype(np.int8)
    return q, scale


def compact_constants(
    model: object, *, embeddings: bool = True, constants: bool = False, min_elements: int = 1 << 18
) -> CompactReport:
    """Store the fp32 tables an int8 BERT still keeps in int8, in place on `model`
    (onnx.ModelProto).

    - `embeddings`: every Gather on an fp32 initializer of at least `EMBEDDING_MIN_ROWS` rows
      (DeBERTa's word embeddings: 22012 × 1024, 86 MiB) becomes a Gather on an int8 table
      and on a per-row scale, then Cast and Mul: the rows a sentence uses are dequantized,
      the table stays int8 (22 MiB).
    - `constants`: every other fp32 initializer of at least `min_elements` values read
      only by data-movement nodes (Tile, Expand, Reshape, Transpose) — in a folded DeBERTa,
      the relative-position tables each layer's query/key weights were folded into (44 ×
      2 MiB) — becomes int8 rows (last axis) with one scale per row: DequantizeLinear
      (axis 0) then Reshape back, dequantized on each call.

    ONNX Runtime does not fold DequantizeLinear of a constant back into fp32 (checked), and
    a Gather's indices are inputs, so both stay int8 in the session's memory.
    """
    from onnx import helper, numpy_helper

    m: Any = model  # onnx.ModelProto (onnx is imported only here)
    graph = m.graph
    inits = {t.name: t for t in graph.initializer}
    users: dict[str, list[Any]] = {}
    for n in graph.node:
        for i in n.input:
            users.setdefault(i, []).append(n)
    outputs = {o.name for o in graph.output}
    before = after = 0
    done_emb: list[str] = []
    done_const: list[str] = []
    replace: dict[str, list[Any]] = {}
    new_nodes: dict[str, list[Any]] = {}
    for name, t in list(inits.items()):
        if t.data_type != 1 or name in outputs:
            continue
        us = users.get(name, [])
        if not us:
            continue
        size = int(np.prod(t.dims)) if len(t.dims) else 1
        if (
            embeddings
            and len(t.dims) == 2
            and t.dims[0] >= EMBEDDING_MIN_ROWS
            and all(u.op_type == "Gather" and u.input[0] == name for u in us)
            and all(not any(a.name == "axis" and a.i != 0 for a in u.attribute) for u in us)
        ):
            table = numpy_helper.to_array(t)
            q, scale = _rowwise_int8(table)
            replace[name] = [
                numpy_helper.from_array(q, f"{name}.int8"),
                numpy_helper.from_array(scale, f"{name}.scale"),
            ]
            for k, u in enumerate(us):
                out = u.output[0]
                tag = f"{u.name or name}.{k}"
                u.input[0] = f"{name}.int8"
                u.output[0] = f"{tag}.q"
                new_nodes[u.name] = [
                    helper.make_node(
                        "Gather", [f"{name}.scale", u.input[1]], [f"{tag}.s"], name=f"{tag}/scale"
                    ),
                    helper.make_node("Cast", [f"{tag}.q"], [f"{tag}.f"], to=1, name=f"{tag}/cast"),
                    helper.make_node("Mul", [f"{tag}.f", f"{tag}.s"], [out], name=f"{tag}/mul"),
                ]
            before += table.nbytes
            after += q.nbytes + scale.nbytes
            done_emb.append(name)
        elif (
            constants
            and size >= min_elements
            and len(t.dims) >= 2
            and all(u.op_type in ("Tile", "Expand", "Reshape", "Transpose") for u in us)
            and all(u.input[0] == name for u in us)
        ):
            value = numpy_helper.to_array(t)
            rows = value.reshape(-1, value.shape[-1])
            q, scale = _rowwise_int8(rows)
            shape = np.asarray(value.shape, np.int64)
            replace[name] = [
                numpy_helper.from_array(q, f"{name}.int8"),
                numpy_helper.from_array(scale.reshape(-1), f"{name}.scale"),
                numpy_helper.from_array(np.zeros(len(rows), np.int8), f"{name}.zero"),
                numpy_helper.from_array(shape, f"{name}.shape"),
            ]
            new_nodes[us[0].name] = [
                helper.make_node(
                    "DequantizeLinear",
                    [f"{name}.int8", f"{name}.scale", f"{name}.zero"],
                    [f"{name}.rows"],
                    axis=0,
                    name=f"{name}/dequantize",
                ),
                helper.make_node(
                    "Reshape", [f"{name}.rows", f"{name}.shape"], [name], name=f"{name}/reshape"
                ),
            ]
            before += value.nbytes
            after += q.nbytes + scale.nbytes + len(rows)
            done_const.append(name)
    if replace:
        keep = [t for t in graph.initializer if t.name not in replace]
        del graph.initializer[:]
        graph.initializer.extend(keep)
        for ts in replace.values():
            graph.initializer.extend(ts)
        nodes = list(graph.node)
        del graph.node[:]
        for n in nodes:
            if n.name in new_nodes and n.op_type == "Gather" and n.output[0].endswith(".q"):
                graph.node.append(n)
                graph.node.extend(new_nodes[n.name])
            elif n.name in new_nodes:
                graph.node.extend(new_nodes[n.name])
                graph.node.append(n)
            else:
                graph.node.append(n)
    return CompactReport(done_emb, done_const, before, after)


def _stamp(source: Path) -> dict[str, Any]:
    import onnxruntime as ort

    from ..sources.cache import file_stamp

    return file_stamp(source, format=FORMAT, ort=ort.__version__, min_cosine=MIN_COSINE)


def target_for(source: Path, cache_dir: CacheDir = None) -> Path:
    """Where the compacted graph of `source` is kept: `<cache>/derived/<stem>-<digest>/`."""
    from ..sources.cache import derived_dir

    return derived_dir(source, cache_dir) / (source.stem + SUFFIX)


def _report_path(target: Path) -> Path:
    return target.with_name(target.name + ".json")


def compact_model(
    source: str | os.PathLike[str],
    tokenizer_dir: str | os.PathLike[str],
    cache_dir: CacheDir = None,
    *,
    make: bool = True,
) -> Path | None:
    """The gated compacted copy of the BERT graph `source` (see the module doc), or None.
    `make=False`: only a copy already in the cache (None when there is none yet)."""
    source = Path(source)
    try:
        want = _stamp(source)
        target = target_for(source, cache_dir)
    except (OSError, ImportError):
        return None
    try:
        report = json.loads(_report_path(target).read_text(encoding="utf-8"))
        if report.get("stamp") == want:
            if report.get("passed") and target.is_file():
                return target
            _failed(source, report)
            return None
    except (OSError, ValueError):
        pass
    if not make:
        _LOGGER.info(
            "BERT %s: the original graph runs (its fp32 tables in int8, about 130 MiB less "
            "resident, are made once by a server's start, precision='int8' or "
            "`wyoming-hayakoe quantize`: about 8 s)",
            source,
        )
        return None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "engine.bert.compact",
                str(source),
                str(target),
                str(tokenizer_dir),
            ],
            check=True,
            capture_output=True,
            timeout=3600,
            cwd=str(Path(__file__).resolve().parents[2]),
        )
        report = json.loads(_report_path(target).read_text(encoding="utf-8"))
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        detail: bytes = b""
        if isinstance(exc, (subprocess.CalledProcessError, subprocess.TimeoutExpired)):
            detail = exc.stderr or b""
        _LOGGER.warning(
            "BERT %s: could not store its fp32 tables in int8 (%s); using it as is %s",
            source,
            exc,
            detail.decode("utf-8", "replace")[-500:],
        )
        return None
    if report.get("passed"):
        _LOGGER.info(
            "BERT %s: its fp32 tables stored in int8 once → %s (%.0f → %.0f MiB; features vs "
            "the original: cosine min %.5f ≥ %g)",
            source,
            target,
            report["bytes_before"] / 2**20,
            report["bytes_after"] / 2**20,
            report["cosine_min"],
            MIN_COSINE,
        )
        return target
    _failed(source, report)
    return None


def _failed(source: Path, report: dict[str, Any]) -> None:
    _LOGGER.warning(
        "BERT %s: int8 tables failed their gate (cosine min %.5f < %g); using it as is",
        source,
        report.get("cosine_min", float("nan")),
        report.get("stamp", {}).get("min_cosine", MIN_COSINE),
    )


def token_cosines(reference: np.ndarray, test: np.ndarray) -> np.ndarray:
    """Cosine similarity of each token's vector (`[tokens, hidden]` arrays)."""
    num = np.sum(reference * test, axis=-1)
    den = np.linalg.norm(reference, axis=-1) * np.linalg.norm(test, axis=-1)
    return np.asarray(num / np.maximum(den, 1e-30))


def _features(path: Path, ids: list[list[int]]) -> list[np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    out = []
    for row in ids:
        x = np.asarray([row], np.int64)
        feeds = {"input_ids": x, "attention_mask": np.ones_like(x)}
        if "token_type_ids" in names:
            feeds["token_type_ids"] = np.zeros_like(x)
        out.append(np.asarray(sess.run(None, feeds)[0][0], np.float32))
    return out


def _make(source: Path, target: Path, tokenizer_dir: Path) -> dict[str, Any]:
    """Compact, optimise, gate (run in the child process); writes `target` and its report."""
    import onnx
    import onnxruntime as ort

    from .tokenizer import CharTokenizer

    tok = CharTokenizer.from_dir(tokenizer_dir)
    ids = [tok.encode_per_char(s) for s in GATE_SENTENCES]
    reference = _features(source, ids)
    model = onnx.load(str(source))
    rep = compact_constants(model, embeddings=True, constants=True)
    pid = os.getpid()  # names of this process's own: replicas may share a cache volume
    tmp = target.with_name(f".{target.name}.{pid}.src.partial")
    out = target.with_name(f".{target.name}.{pid}.partial")
    try:
        onnx.save(model, str(tmp))
        del model
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        opts.optimized_model_filepath = str(out)
        opts.intra_op_num_threads = 1
        ort.InferenceSession(str(tmp), sess_options=opts, providers=["CPUExecutionProvider"])
    finally:
        tmp.unlink(missing_ok=True)
    test = _features(out, ids)
    cos = np.concatenate([token_cosines(a, b) for a, b in zip(reference, test, strict=True)])
    passed = bool(rep.embeddings or rep.constants) and float(cos.min()) >= MIN_COSINE
    if passed:
        os.replace(out, target)
    else:
        out.unlink(missing_ok=True)
        target.unlink(missing_ok=True)
    report = {
        "stamp": _stamp(source),
        "passed": passed,
        "tables": rep.embeddings + rep.constants,
        "bytes_before": rep.bytes_before,
        "bytes_after": rep.bytes_after,
        "cosine_min": float(cos.min()),
        "cosine_mean": float(cos.mean()),
        "sentences": len(GATE_SENTENCES),
    }
    _report_path(target).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


if __name__ == "__main__":  # the child process of `compact_model`
    _make(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
