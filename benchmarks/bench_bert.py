"""Benchmark BERT features at the full ku-nlp DeBERTa-v2-large shape, with random weights.

Builds (once, cached under benchmarks/.cache/) a random-weight DeBERTa-v2-large-japanese-char
(24 layers, hidden 1024, 16 heads, intermediate 4096, vocab 22012, relative attention as the
real config), exports it with `engine.bert.export` to ONNX fp32 and int8, then runs
each backend in its own process (so peak RSS is that backend's alone) and prints, for PyTorch
(with and without `TorchBert`'s relative-position cache), ONNX fp32 and ONNX int8:

- load time, resident memory after the timed runs and peak RSS (VmHWM);
- time per sentence (wall and process CPU), one sentence per call, and per sentence in one
  batched call, with the backends' rounds interleaved;
- frontend (`engine.text.analyze`) time per sentence, if that module is present;
- int8-vs-fp32 and ONNX-vs-PyTorch similarity of the features (cosine, max abs) — on random
  weights, so a rough proxy only for the real model.

Times are also given as ratios against the PyTorch (fp32, CPU) baseline of the same run.

    python benchmarks/bench_bert.py [--threads N] [--repeats 5] [--rebuild]
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

from engine import layout

# BENCH_BERT_SMOKE=1: a tiny shape, to check the script itself in seconds.
SMOKE = os.environ.get("BENCH_BERT_SMOKE") == "1"
CACHE = HERE / ".cache" / ("bert_smoke_random" if SMOKE else "bert_large_random")
MODEL_DIR = CACHE / "torch_model"
ONNX_ROOT = CACHE / "export"
Q8_PATH = f"{layout.BERT_ONNX_Q8_PREFIX}/{layout.BERT_ONNX_Q8_FILE}"
FP32_PATH = f"{layout.BERT_ONNX_FP32_PREFIX}/{layout.BERT_ONNX_FP32_FILE}"
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
    FULL_SIZE.update(
        hidden_size=64,
        num_hidden_layers=4,
        num_attention_heads=2,
        attention_head_size=32,
        intermediate_size=256,
        pooler_hidden_size=64,
    )

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
                    p.add_(
                        torch.randn(p.shape, generator=gen)
                        * (0.05 if float(p.flatten()[0]) == 0 else 0.1)
                    )
        MODEL_DIR.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(MODEL_DIR), safe_serialization=True)
        n_params = sum(p.numel() for p in model.parameters())
        print(
            f"built random DeBERTa-v2-large: {n_params / 1e6:.0f} M params in "
            f"{time.perf_counter() - t0:.0f} s"
        )
        del model
    q8 = ONNX_ROOT / Q8_PATH
    fp32 = ONNX_ROOT / FP32_PATH
    if not (q8.is_file() and fp32.is_file()):
        from engine.bert.export import export_bert

        t0 = time.perf_counter()
        result = export_bert(
            MODEL_DIR, ONNX_ROOT, tokenizer_dir=TOKENIZER_DIR, quantize=True, keep_fp32=True
        )
        print(
            f"exported ONNX fp32 + int8 in {time.perf_counter() - t0:.0f} s "
            f"(peak RSS of the build process {peak_rss_mb():.0f} MB); "
            f"ONNX fp32 vs PyTorch max abs diff {result.fp32_max_abs_diff:.2e}"
        )
    print(
        f"sizes: fp32 ONNX {fp32.stat().st_size / 1e6:.0f} MB, int8 ONNX "
        f"{q8.stat().st_size / 1e6:.0f} MB, "
        "PyTorch safetensors "
        f"{sum(p.stat().st_size for p in MODEL_DIR.glob('*.safetensors')) / 1e6:.0f} MB"
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
        return (
            [r.bert_text for r in results],
            [list(r.with_blanks().word2ph) for r in results],
            per_sentence,
        )
    except Exception as exc:  # noqa: BLE001 - the benchmark still measures BERT
        print(f"(frontend not used: {exc!r})", file=sys.stderr)
        return list(SENTENCES), [[1] * (len(s) + 2) for s in SENTENCES], None


def worker(kind: str, threads: int, inputs: Path, out_npz: Path) -> None:
    """Load one backend, then serve timing rounds: one line ``run`` on stdin → one JSON line on
    stdout; ``done`` → final JSON line (memory, features saved to `out_npz`). The parent
    interleaves the backends' rounds so that a change in machine load hits all of them."""
    data = json.loads(inputs.read_text(encoding="utf-8"))
    texts, w2ps = data["texts"], data["word2phs"]
    t0 = time.perf_counter()
    if kind.startswith("torch"):
        import torch

        torch.set_num_threads(threads)
        from engine.bert.torch_backend import TorchBert

        bert = TorchBert(
            MODEL_DIR, TOKENIZER_DIR, device="cpu", cache_rel_projections=kind == "torch"
        )
    else:
        from engine.bert.onnx_backend import OnnxBert

        path = ONNX_ROOT / (FP32_PATH if kind == "onnx-fp32" else Q8_PATH)
        bert = OnnxBert(path, TOKENIZER_DIR, threads=threads)
    load_s = time.perf_counter() - t0
    bert.features(texts, w2ps)  # warm-up: every shape once
    for t, w in zip(texts, w2ps):
        bert.features([t], [w])
    print(json.dumps({"ready": True, "load_s": load_s}), flush=True)
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
        print(
            json.dumps(
                {
                    "single_s": (w1 - w0) / n,
                    "single_cpu_s": (c1 - c0) / n,
                    "batched_s": (w2 - w1) / n,
                    "batched_cpu_s": (c2 - c1) / n,
                }
            ),
            flush=True,
        )
    np.savez(out_npz, *(feats or bert.features(texts, w2ps)))
    print(
        json.dumps(
            {
                "rss_after_mb": rss_mb(),
                "peak_rss_mb": peak_rss_mb(),
                "chars": [len(t) for t in texts],
            }
        ),
        flush=True,
    )


def run_interleaved(kinds: list[str], threads: int, repeats: int, inputs: Path) -> dict[str, dict]:
    """Start one worker per backend (loading one at a time), run `repeats` rounds round-robin,
    and return per backend: load time, medians of the rounds, memory."""
    procs: dict[str, subprocess.Popen] = {}
    rows: dict[str, dict] = {}
    try:
        for kind in kinds:
            npz = CACHE / f"feats-{kind}.npz"
            cmd = [
                sys.executable,
                __file__,
                "--worker",
                kind,
                "--threads",
                str(threads),
                "--inputs",
                str(inputs),
                "--out",
                str(npz),
            ]
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            procs[kind] = proc
            rows[kind] = {**json.loads(proc.stdout.readline()), "rounds": [], "npz": npz}
        for _ in range(repeats):
            for kind, proc in procs.items():
                proc.stdin.write("run\n")
                proc.stdin.flush()
                rows[kind]["rounds"].append(json.loads(proc.stdout.readline()))
        for kind, proc in procs.items():
            proc.stdin.write("done\n")
            proc.stdin.flush()
            rows[kind].update(json.loads(proc.stdout.readline()))
            proc.wait(timeout=120)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    for row in rows.values():
        for key in ("single_s", "single_cpu_s", "batched_s", "batched_cpu_s"):
            row[key] = statistics.median(r[key] for r in row["rounds"])
    return rows


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
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="threads per backend (default: physical cores)"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument(
        "--worker",
        choices=["torch", "torch-nocache", "onnx-fp32", "onnx-q8"],
        help=argparse.SUPPRESS,
    )
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--inputs", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.threads is None:
        from engine.bert.onnx_backend import physical_cores

        args.threads = physical_cores()
    if args.worker:
        worker(args.worker, args.threads, args.inputs, args.out)
        return 0

    build(args.rebuild)
    texts, w2ps, frontend_s = frontend_inputs()
    inputs = CACHE / "inputs.json"
    inputs.write_text(
        json.dumps({"texts": texts, "word2phs": w2ps}, ensure_ascii=False), encoding="utf-8"
    )
    kinds = ["torch", "onnx-fp32", "onnx-q8", "torch-nocache"]
    rows = run_interleaved(kinds, args.threads, args.repeats, inputs)
    feats = {}
    for kind in kinds:
        with np.load(rows[kind]["npz"]) as data:
            feats[kind] = [data[f"arr_{i}"] for i in range(len(data.files))]

    base = rows["torch"]
    chars = base["chars"]
    print(
        f"\nBERT at {'SMOKE-TEST' if SMOKE else 'full DeBERTa-v2-large'} shape (random weights), "
        f"{args.threads} thread(s), "
        f"{len(chars)} sentences of {min(chars)}-{max(chars)} chars (mean {np.mean(chars):.0f}), "
        f"median of {args.repeats} interleaved rounds; load average before: "
        f"{os.getloadavg()[0]:.1f}"
    )
    if frontend_s is not None:
        print(f"frontend (engine.text.analyze): {frontend_s * 1e3:.1f} ms/sentence")
    head = (
        f"{'backend':<11}{'load s':>7}{'RSS MB':>8}{'peak MB':>8}"
        f"{'ms/sent':>9}{'cpu ms':>8}{'x torch':>8}"
        f"{'batched':>9}{'cpu ms':>8}{'x torch':>8}"
    )
    print(head)
    print("-" * len(head))
    for kind, r in rows.items():
        print(
            f"{kind:<11}{r['load_s']:>7.1f}{r['rss_after_mb']:>8.0f}{r['peak_rss_mb']:>8.0f}"
            f"{r['single_s'] * 1e3:>9.0f}{r['single_cpu_s'] * 1e3:>8.0f}"
            f"{base['single_s'] / r['single_s']:>7.2f}x"
            f"{r['batched_s'] * 1e3:>9.0f}{r['batched_cpu_s'] * 1e3:>8.0f}"
            f"{base['batched_s'] / r['batched_s']:>7.2f}x"
        )
    print(
        "(ms/sent: wall time per sentence, one sentence per call; batched: all sentences in one "
        "padded\n"
        " call, per sentence; cpu ms: process CPU time (all threads) per sentence, less sensitive "
        "to\n"
        " other load; x torch: wall-time speed-up over PyTorch (fp32, CPU). Backends run "
        "round-robin,\n"
        " one round each in turn. RSS: resident after the rounds; peak: VmHWM of the backend's\n"
        " process; both include Python, numpy and the backend library)"
    )
    print(
        "(torch-nocache: PyTorch recomputing the relative-position projections on every call, as\n"
        " transformers does; torch: with TorchBert's cache of them)"
    )
    for a, b in (
        ("onnx-q8", "onnx-fp32"),
        ("onnx-fp32", "torch"),
        ("onnx-q8", "torch"),
        ("torch-nocache", "torch"),
    ):
        mean_cos, min_cos, diff = _similarity(feats[a], feats[b])
        print(f"{a} vs {b}: cosine mean {mean_cos:.5f}, min {min_cos:.5f}; max abs diff {diff:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
