"""Benchmark BERT features at the full ku-nlp DeBERTa-v2-large shape, with random weights.

Builds (once, cached under benchmarks/.cache/) a random-weight DeBERTa-v2-large-japanese-char
(24 layers, hidden 1024, 16 heads, intermediate 4096, vocab 22012, relative attention as the
real config), exports it with `engine.runtime.bert_export` to ONNX fp32 and int8, then runs
each backend in its own process (so peak RSS is that backend's alone) and prints:

- load time, resident memory after the timed runs and peak RSS (VmHWM);
- time per sentence, one sentence per call, and per sentence in one batched call;
- frontend (`engine.text.analyze`) time per sentence, if that module is present;
- int8-vs-fp32 and ONNX-vs-PyTorch similarity of the features (cosine, max abs) — on random
  weights, so a rough proxy only for the real model.

Times are also given as ratios against the PyTorch (fp32, CPU) baseline of the same run.

    python benchmarks/bench_bert.py [--threads N] [--repeats 3] [--rebuild]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

# BENCH_BERT_SMOKE=1: a tiny shape, to check the script itself in seconds.
SMOKE = os.environ.get("BENCH_BERT_SMOKE") == "1"
CACHE = HERE / ".cache" / ("bert_smoke_random" if SMOKE else "bert_large_random")
MODEL_DIR = CACHE / "pytorch"
ONNX_ROOT = CACHE / "export"
TOKENIZER_DIR = REPO / "tests" / "data" / "bert_small"

FULL_SIZE = {
    "hidden_size": 1024,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "attention_head_size": 64,
    "intermediate_size": 4096,
    "pooler_hidden_size": 1024,
    "vocab_size": 22012,
}
if SMOKE:
    FULL_SIZE.update(hidden_size=64, num_hidden_layers=4, num_attention_heads=2, attention_head_size=32,
                     intermediate_size=256, pooler_hidden_size=64)

SENTENCES = [
    "こんにちは。",
    "リビングの照明をつけました。",
    "現在の気温は二十三点五度、湿度は六十パーセントです。",
    "明日の天気は晴れのち曇り、降水確率は二十パーセントの予報です。",
    "玄関の鍵が開いたままになっています。外出する前に確認してください。",
    "昨日の夕方、駅前に新しくできたカフェで久しぶりに友人と待ち合わせをして、季節限定のラテを飲みました。",
]


def rss_mb() -> float:
    """Current resident set size in MB (Linux /proc)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def peak_rss_mb() -> float:
    """This process's peak RSS in MB: VmHWM (ru_maxrss would carry the parent's over exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1e3
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


# -- build -----------------------------------------------------------------------------------


def build(rebuild: bool) -> None:
    """Random full-size model (seeded) + ONNX fp32 + int8, cached."""
    import shutil

    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    if rebuild and CACHE.exists():
        shutil.rmtree(CACHE)
    if not (MODEL_DIR / "config.json").is_file():
        from transformers import DebertaV2Config, DebertaV2ForMaskedLM

        config = json.loads((TOKENIZER_DIR / "config.json").read_text())
        config.update(FULL_SIZE)
        config.pop("transformers_version", None)
        t0 = time.perf_counter()
        torch.manual_seed(1234)
        model = DebertaV2ForMaskedLM(DebertaV2Config(**config)).eval()
        # HF init leaves biases 0 and LayerNorm 1/0; give them noise so nothing is degenerate.
        gen = torch.Generator().manual_seed(1235)
        with torch.no_grad():
            for _, p in model.named_parameters():
                if p.numel() and bool((p == p.flatten()[0]).all()):
                    p.add_(torch.randn(p.shape, generator=gen) * (0.05 if float(p.flatten()[0]) == 0 else 0.1))
        MODEL_DIR.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(MODEL_DIR), safe_serialization=True)
        n_params = sum(p.numel() for p in model.parameters())
        print(f"built random DeBERTa-v2-large: {n_params / 1e6:.0f} M params in {time.perf_counter() - t0:.0f} s")
        del model
    q8 = ONNX_ROOT / "onnx/bert/q8/bert_q8.onnx"
    fp32 = ONNX_ROOT / "onnx/bert/fp32/bert.onnx"
    if not (q8.is_file() and fp32.is_file()):
        from engine.runtime.bert_export import export_bert

        t0 = time.perf_counter()
        result = export_bert(MODEL_DIR, ONNX_ROOT, tokenizer_dir=TOKENIZER_DIR, quantize=True, keep_fp32=True)
        print(
            f"exported ONNX fp32 + int8 in {time.perf_counter() - t0:.0f} s "
            f"(peak RSS of the build process {peak_rss_mb():.0f} MB); "
            f"ONNX fp32 vs PyTorch max abs diff {result.fp32_max_abs_diff:.2e}"
        )
    print(
        f"sizes: fp32 ONNX {fp32.stat().st_size / 1e6:.0f} MB, int8 ONNX {q8.stat().st_size / 1e6:.0f} MB, "
        f"PyTorch safetensors {sum(p.stat().st_size for p in MODEL_DIR.glob('*.safetensors')) / 1e6:.0f} MB"
    )


# -- worker (one backend per process) --------------------------------------------------------


def frontend_inputs() -> tuple[list[str], list[list[int]], float | None]:
    """(bert_texts, word2ph_blank lists, frontend s/sentence) from `engine.text.analyze`, or the
    raw sentences with one phone per character if the frontend is not available."""
    try:
        from engine.text import analyze

        analyze("ウォームアップ。")
        t0 = time.perf_counter()
        results = [analyze(s) for s in SENTENCES]
        per_sentence = (time.perf_counter() - t0) / len(SENTENCES)
        return [r.bert_text for r in results], [list(r.with_blanks().word2ph) for r in results], per_sentence
    except Exception as exc:  # noqa: BLE001 - the benchmark still measures BERT
        print(f"(frontend not used: {exc!r})", file=sys.stderr)
        return list(SENTENCES), [[1] * (len(s) + 2) for s in SENTENCES], None


def worker(kind: str, threads: int, repeats: int, inputs: Path, out_npz: Path) -> dict:
    data = json.loads(inputs.read_text(encoding="utf-8"))
    texts, w2ps = data["texts"], data["word2phs"]
    rss0 = rss_mb()
    t0 = time.perf_counter()
    if kind == "torch":
        import torch

        torch.set_num_threads(threads)
        from engine.runtime.bert_torch import TorchBert

        bert = TorchBert(MODEL_DIR, TOKENIZER_DIR, device="cpu")
    else:
        from engine.runtime.bert_onnx import OnnxBert

        path = ONNX_ROOT / ("onnx/bert/fp32/bert.onnx" if kind == "onnx-fp32" else "onnx/bert/q8/bert_q8.onnx")
        bert = OnnxBert(path, TOKENIZER_DIR, threads=threads)
    load_s = time.perf_counter() - t0
    rss_loaded = rss_mb()
    bert.features(texts, w2ps)  # warm-up: every shape once
    for t, w in zip(texts, w2ps):
        bert.features([t], [w])
    single, batched = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for t, w in zip(texts, w2ps):
            bert.features([t], [w])
        single.append((time.perf_counter() - t0) / len(texts))
        t0 = time.perf_counter()
        feats = bert.features(texts, w2ps)
        batched.append((time.perf_counter() - t0) / len(texts))
    np.savez(out_npz, *feats)
    return {
        "kind": kind,
        "load_s": load_s,
        "rss_before_mb": rss0,
        "rss_loaded_mb": rss_loaded,
        "rss_after_mb": rss_mb(),
        "peak_rss_mb": peak_rss_mb(),
        "single_s": statistics.median(single),
        "batched_s": statistics.median(batched),
        "chars": [len(t) for t in texts],
    }


def _similarity(a: list[np.ndarray], b: list[np.ndarray]) -> tuple[float, float, float]:
    """(mean per-phone cosine, min per-phone cosine, max abs diff) over all sentences."""
    cos, diff = [], 0.0
    for x, y in zip(a, b):
        num = (x * y).sum(axis=0)
        den = np.linalg.norm(x, axis=0) * np.linalg.norm(y, axis=0)
        cos.extend((num / den).tolist())
        diff = max(diff, float(np.abs(x - y).max()))
    return float(np.mean(cos)), float(np.min(cos)), diff


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=None, help="threads per backend (default: physical cores)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--worker", choices=["torch", "onnx-fp32", "onnx-q8"], help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--inputs", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.threads is None:
        from engine.runtime.bert_onnx import physical_cores

        args.threads = physical_cores()
    if args.worker:
        print(json.dumps(worker(args.worker, args.threads, args.repeats, args.inputs, args.out)))
        return 0

    build(args.rebuild)
    texts, w2ps, frontend_s = frontend_inputs()
    inputs = CACHE / "inputs.json"
    inputs.write_text(json.dumps({"texts": texts, "word2phs": w2ps}, ensure_ascii=False), encoding="utf-8")
    rows = {}
    feats = {}
    for kind in ("torch", "onnx-fp32", "onnx-q8"):
        npz = CACHE / f"feats-{kind}.npz"
        cmd = [sys.executable, __file__, "--worker", kind, "--threads", str(args.threads),
               "--repeats", str(args.repeats), "--inputs", str(inputs), "--out", str(npz)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        rows[kind] = json.loads(proc.stdout.strip().splitlines()[-1])
        with np.load(npz) as data:
            feats[kind] = [data[f"arr_{i}"] for i in range(len(data.files))]

    base = rows["torch"]
    chars = base["chars"]
    print(f"\nBERT at {'SMOKE-TEST' if SMOKE else 'full DeBERTa-v2-large'} shape (random weights), {args.threads} thread(s), "
          f"{len(chars)} sentences of {min(chars)}-{max(chars)} chars (mean {np.mean(chars):.0f}), "
          f"median of {args.repeats}")
    if frontend_s is not None:
        print(f"frontend (engine.text.analyze): {frontend_s * 1e3:.1f} ms/sentence")
    head = f"{'backend':<12}{'load s':>8}{'RSS MB':>9}{'peak MB':>9}{'ms/sent':>10}{'x torch':>9}{'batched':>10}{'x torch':>9}"
    print(head)
    print("-" * len(head))
    for kind, r in rows.items():
        print(
            f"{kind:<12}{r['load_s']:>8.1f}{r['rss_after_mb']:>9.0f}{r['peak_rss_mb']:>9.0f}"
            f"{r['single_s'] * 1e3:>10.0f}{base['single_s'] / r['single_s']:>8.2f}x"
            f"{r['batched_s'] * 1e3:>10.0f}{base['batched_s'] / r['batched_s']:>8.2f}x"
        )
    print("(ms/sent: one sentence per call; batched: all sentences in one padded call, per sentence;"
          " 'x torch' = speed-up over PyTorch;\n RSS = resident after the timed runs (steady state), peak = VmHWM of the worker process,"
          " both including Python, numpy and the backend's library)")
    for a, b in (("onnx-q8", "onnx-fp32"), ("onnx-fp32", "torch"), ("onnx-q8", "torch")):
        mean_cos, min_cos, diff = _similarity(feats[a], feats[b])
        print(f"{a} vs {b}: cosine mean {mean_cos:.5f}, min {min_cos:.5f}; max abs diff {diff:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
