"""BERT features at the full ku-nlp DeBERTa-v2-large shape, random weights (`--quick`: a
tiny shape of the same network).

Builds once (`benchmarks.lib.fullsize.build_bert_models`: 24 layers, hidden 1024, 16 heads,
vocab 22012, relative attention as the real config; ONNX fp32 and int8 by
`engine.bert.export`), then runs each backend in its own process (so its peak RSS is its
own) and rounds through them in turn: PyTorch with and without `TorchBert`'s
relative-position cache, ONNX fp32, ONNX int8. Figures: load time, RSS after the rounds and
peak (VmHWM), wall and process CPU time per sentence (one per call, and all in one batched
call), each as a speed-up over PyTorch (fp32, CPU) in the same run; the frontend's time per
sentence; int8-vs-fp32 and ONNX-vs-PyTorch similarity of the features (random weights: a
rough proxy only).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.lib import CACHE, REPO
from benchmarks.lib.report import Report
from benchmarks.lib.stats import median

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


def _memory_mb() -> tuple[float, float]:
    """(RSS, peak RSS) of this process in MB (VmRSS, VmHWM)."""
    found = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                found[line[:5]] = int(line.split()[1]) / 1e3
    return found["VmRSS"], found["VmHWM"]


def worker(kind: str, threads: int, smoke: bool, inputs: Path, out: Path) -> None:
    """One backend: ``run`` on stdin → one JSON line of timings; ``done`` → memory (the
    features saved to `out`)."""
    from benchmarks.lib.fullsize import BERT_TOKENIZER, FP32_PATH, Q8_PATH, build_bert_models

    model_dir, onnx_root = build_bert_models(smoke)
    data = json.loads(inputs.read_text(encoding="utf-8"))
    texts, w2ps = data["texts"], data["word2phs"]
    t0 = time.perf_counter()
    bert: Any
    if kind.startswith("torch"):
        import torch

        from engine.bert.torch_backend import TorchBert

        torch.set_num_threads(threads)
        bert = TorchBert(
            model_dir, BERT_TOKENIZER, device="cpu", cache_rel_projections=kind == "torch"
        )
    else:
        from engine.bert.onnx_backend import OnnxBert

        path = onnx_root / (FP32_PATH if kind == "onnx-fp32" else Q8_PATH)
        bert = OnnxBert(path, BERT_TOKENIZER, threads=threads)
    print(json.dumps({"load_s": time.perf_counter() - t0}), flush=True)
    bert.features(texts, w2ps)  # warm-up: every shape once
    for t, w in zip(texts, w2ps):
        bert.features([t], [w])
    feats = None
    for line in sys.stdin:
        if line.strip() != "run":
            break
        w0, c0 = time.perf_counter(), time.process_time()
        for t, w in zip(texts, w2ps):
            bert.features([t], [w])
        w1, c1 = time.perf_counter(), time.process_time()
        feats = bert.features(texts, w2ps)
        w2, c2 = time.perf_counter(), time.process_time()
        n = len(texts)
        times = [(w1 - w0) / n, (c1 - c0) / n, (w2 - w1) / n, (c2 - c1) / n]
        print(json.dumps(dict(zip(("single", "single_cpu", "batched", "batched_cpu"), times))))
        sys.stdout.flush()
    np.savez(out, *(feats or bert.features(texts, w2ps)))
    rss, peak = _memory_mb()
    print(json.dumps({"rss_mb": rss, "peak_mb": peak}), flush=True)


def _similarity(a: list[np.ndarray], b: list[np.ndarray]) -> tuple[float, float, float]:
    """(mean per-phone cosine, min per-phone cosine, max abs diff) over all sentences."""
    cos, diff = [], 0.0
    for x, y in zip(a, b):
        num = (x * y).sum(axis=0)
        cos.extend((num / (np.linalg.norm(x, axis=0) * np.linalg.norm(y, axis=0))).tolist())
        diff = max(diff, float(np.abs(x - y).max()))
    return float(np.mean(cos)), float(np.min(cos)), diff


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
    work = CACHE / "bert-bench"
    work.mkdir(parents=True, exist_ok=True)
    inputs = work / "inputs.json"
    data = {
        "texts": [a.bert_text for a in analyses],
        "word2phs": [list(a.with_blanks().word2ph) for a in analyses],
    }
    inputs.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    procs, rows = {}, {}
    try:
        for kind in KINDS:  # loaded one at a time, then rounds in turn
            cmd = [sys.executable, "-m", "benchmarks.engine.bert", kind, str(threads)]
            cmd += ["smoke" if args.quick else "large", str(inputs), str(work / f"{kind}.npz")]
            procs[kind] = p = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO
            )
            assert p.stdout is not None
            rows[kind] = {**json.loads(p.stdout.readline()), "rounds": []}
        for _ in range(repeats):
            for kind, p in procs.items():
                assert p.stdin is not None and p.stdout is not None
                p.stdin.write("run\n")
                p.stdin.flush()
                rows[kind]["rounds"].append(json.loads(p.stdout.readline()))
        for kind, p in procs.items():
            assert p.stdin is not None and p.stdout is not None
            p.stdin.write("done\n")
            p.stdin.flush()
            rows[kind].update(json.loads(p.stdout.readline()))
            p.wait(timeout=120)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
    for row in rows.values():
        for key in ("single", "single_cpu", "batched", "batched_cpu"):
            row[key] = median(r[key] for r in row["rounds"])
    base = rows["torch"]
    report = Report(
        f"BERT at the {'tiny' if args.quick else 'DeBERTa-v2-large'} shape (random weights)"
    )
    report.note(
        f"{threads} thread(s), {len(SENTENCES)} sentences, median of {repeats} rounds taken in "
        f"turn; frontend (`engine.text.analyze`) {frontend_s * 1e3:.1f} ms per sentence. "
        "Per sentence: one per call, and batched (all in one padded call); CPU: process CPU "
        "time, all threads; × torch: PyTorch's wall time over this backend's."
    )
    report.table(
        ["backend", "load s", "RSS MB", "peak MB", "ms / sentence", "CPU ms", "× torch"]
        + ["batched ms", "CPU ms", "× torch"],
        [
            [kind, f"{r['load_s']:.1f}", f"{r['rss_mb']:.0f}", f"{r['peak_mb']:.0f}"]
            + [f"{r['single'] * 1e3:.0f}", f"{r['single_cpu'] * 1e3:.0f}"]
            + [f"{base['single'] / r['single']:.2f}", f"{r['batched'] * 1e3:.0f}"]
            + [f"{r['batched_cpu'] * 1e3:.0f}", f"{base['batched'] / r['batched']:.2f}"]
            for kind, r in rows.items()
        ],
    )
    feats = {}
    for kind in KINDS:
        with np.load(work / f"{kind}.npz") as npz:
            feats[kind] = [npz[f"arr_{i}"] for i in range(len(npz.files))]
    pairs = [("onnx-q8", "onnx-fp32"), ("onnx-fp32", "torch"), ("onnx-q8", "torch")]
    pairs.append(("torch-nocache", "torch"))
    sims = [(f"{a} vs {b}", *_similarity(feats[a], feats[b])) for a, b in pairs]
    report.table(
        ["features", "cosine mean", "cosine min", "max abs diff"],
        [(n, f"{m:.5f}", f"{lo:.5f}", f"{d:.3g}") for n, m, lo, d in sims],
    )
    report.data = {
        "frontend_s": frontend_s,
        "backends": {k: {x: v for x, v in r.items() if x != "rounds"} for k, r in rows.items()},
    }
    return report


if __name__ == "__main__":  # one backend's worker process (see `worker`)
    kind, threads, shape, inputs, out = sys.argv[1:6]
    worker(kind, int(threads), shape == "smoke", Path(inputs), Path(out))
