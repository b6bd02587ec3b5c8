"""BERT features at the full ku-nlp DeBERTa-v2-large shape, random weights (`--quick`: a
tiny shape of the same network), built once by `benchmarks.lib.fullsize.build_bert_models`.

PyTorch with and without `TorchBert`'s relative-position cache, ONNX fp32 and ONNX int8,
each in its own process (its peak RSS its own), rounds through them in turn: load time, RSS
after the rounds and peak, wall and process CPU time per sentence (one per call; all in one
batched call), as a speed-up over PyTorch (fp32, CPU) in the same round; the frontend's time
per sentence; how alike the features are (random weights: a rough proxy only).
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from functools import partial
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from benchmarks.lib.memory import own_memory
from benchmarks.lib.report import Report
from benchmarks.lib.stats import alternate, medians, ratios, timed

RESULT = None
KINDS = ("torch", "onnx-fp32", "onnx-q8", "torch-nocache")
SENTENCES = [
    "こんにちは。",
    "リビングの照明をつけました。",
    "現在の気温は二十三点五度、湿度は六十パーセントです。",
    "明日の天気は晴れのち曇り、降水確率は二十パーセントの予報です。",
    "玄関の鍵が開いたままになっています。外出する前に確認してください。",
    "昨日の夕方、駅前に新しくできたカフェで久しぶりに友人と待ち合わせをして、季節限定のラテを飲みました。",
]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, help="threads per backend (default: physical cores)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--rebuild", action="store_true")


def _worker(
    kind: str, threads: int, smoke: bool, texts: list, w2ps: list, conn: Connection
) -> None:
    """One backend's process: its load time; per "run", its times per sentence; at "done",
    its features and memory."""
    from benchmarks.lib.fullsize import BERT_TOKENIZER, FP32_PATH, Q8_PATH, build_bert_models

    model_dir, onnx_root = build_bert_models(smoke)
    t0 = time.perf_counter()
    bert: Any
    if kind.startswith("torch"):
        import torch

        from engine.bert.torch_backend import TorchBert

        torch.set_num_threads(threads)
        cache = kind == "torch"
        bert = TorchBert(model_dir, BERT_TOKENIZER, device="cpu", cache_rel_projections=cache)
    else:
        from engine.bert.onnx_backend import OnnxBert

        path = onnx_root / (FP32_PATH if kind == "onnx-fp32" else Q8_PATH)
        bert = OnnxBert(path, BERT_TOKENIZER, threads=threads)
    conn.send({"load_s": time.perf_counter() - t0})
    singles = [([t], [w]) for t, w in zip(texts, w2ps)]
    for t, w in [(texts, w2ps), *singles]:  # warm-up: every shape once
        bert.features(t, w)
    calls = {
        "single": lambda: [bert.features(t, w) for t, w in singles],
        "batched": lambda: [bert.features(texts, w2ps)],
    }
    while conn.recv() == "run":
        out: dict[str, float] = {}
        for name, fn in calls.items():
            figures = timed(fn)
            out |= {f"{name}_ms": figures["wall"], f"{name}_cpu_ms": figures["cpu"]}
        conn.send({key: s * 1e3 / len(texts) for key, s in out.items()})
    features = bert.features(texts, w2ps)
    rss, peak = own_memory()
    rss_mb, peak_mb = rss / 1024e3, peak / 1024e3  # KiB / 1000: the MB figures as before
    conn.send({"features": features, "rss_mb": rss_mb, "peak_mb": peak_mb})


def _similarity(a: list[np.ndarray], b: list[np.ndarray]) -> tuple[float, float, float]:
    """(mean per-phone cosine, min per-phone cosine, max abs diff) over all sentences."""
    cos, diff = [], 0.0
    for x, y in zip(a, b):
        num = (x * y).sum(axis=0)
        cos.extend((num / (np.linalg.norm(x, axis=0) * np.linalg.norm(y, axis=0))).tolist())
        diff = max(diff, float(np.abs(x - y).max()))
    return float(np.mean(cos)), float(np.min(cos)), diff


def _ask(conn: Connection, what: str = "run") -> dict[str, Any]:
    conn.send(what)
    return conn.recv()


def run(args: argparse.Namespace) -> Report:
    from benchmarks.lib.fullsize import build_bert_models
    from engine.bert.onnx_backend import physical_cores
    from engine.text import analyze

    threads = args.threads or physical_cores()
    repeats = 1 if args.quick else args.repeats
    build_bert_models(args.quick, args.rebuild)
    t0 = time.perf_counter()
    analyses = [analyze(s) for s in SENTENCES]
    frontend_s = (time.perf_counter() - t0) / len(SENTENCES)
    texts = [a.bert_text for a in analyses]
    w2ps = [list(a.with_blanks().word2ph) for a in analyses]
    spawn = multiprocessing.get_context("spawn")  # fresh processes: each its own peak RSS
    conns, rows = {}, {}
    for kind in KINDS:  # loaded one at a time, then rounds in turn
        conns[kind], child = spawn.Pipe()
        work = (kind, threads, args.quick, texts, w2ps, child)
        spawn.Process(target=_worker, args=work, daemon=True).start()
        child.close()  # a worker that dies ends its pipe
        rows[kind] = conns[kind].recv()
    rounds = alternate({kind: partial(_ask, conn) for kind, conn in conns.items()}, repeats)
    for kind, conn in conns.items():
        speedup = ratios(rounds["torch"], rounds[kind])
        rows[kind] |= {f"{call}_x": speedup[f"{call}_ms"] for call in ("single", "batched")}
        rows[kind] |= _ask(conn, "done") | medians(rounds[kind])
    multiprocessing.active_children()  # joins the finished workers
    feats = {kind: row.pop("features") for kind, row in rows.items()}
    shape = "tiny" if args.quick else "DeBERTa-v2-large"
    report = Report(f"BERT at the {shape} shape (random weights)")
    report.note(
        f"{threads} thread(s), {len(SENTENCES)} sentences, medians of {repeats} rounds in turn; "
        f"frontend (`engine.text.analyze`) {frontend_s * 1e3:.1f} ms per sentence. Batched: "
        "all in one padded call; CPU: process CPU time, all threads; × torch: PyTorch's wall "
        "time over this one's, round by round."
    )
    cols = {"load_s": ".1f", "rss_mb": ".0f", "peak_mb": ".0f"}
    for call in ("single", "batched"):
        cols |= {f"{call}_ms": ".0f", f"{call}_cpu_ms": ".0f", f"{call}_x": ".2f"}
    report.table(
        ["backend", "load s", "RSS MB", "peak MB", "ms / sentence", "CPU ms", "× torch"]
        + ["batched ms", "CPU ms", "× torch"],
        [[kind, *(format(r[c], f) for c, f in cols.items())] for kind, r in rows.items()],
    )
    pairs = [("onnx-q8", "onnx-fp32"), ("onnx-fp32", "torch"), ("onnx-q8", "torch")]
    pairs.append(("torch-nocache", "torch"))
    sims = [(f"{a} vs {b}", *_similarity(feats[a], feats[b])) for a, b in pairs]
    report.table(
        ["features", "cosine mean", "cosine min", "max abs diff"],
        [(n, f"{m:.5f}", f"{lo:.5f}", f"{d:.3g}") for n, m, lo, d in sims],
    )
    report.data = {"frontend_s": frontend_s, "backends": rows}
    return report
