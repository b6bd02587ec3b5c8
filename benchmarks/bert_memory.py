"""The int8 BERT's remaining fp32 tables stored in int8: memory, and their own gate (issue 19, 6).

    python benchmarks/bert_memory.py

hayakoe's `bert_q8.onnx` quantizes the MatMul weights only; a folded copy still holds, in
fp32, the word embeddings (22012 × 1024, 86 MiB) and the 44 relative-position tables the
query/key weights were folded into (2 MiB each, 88 MiB). `engine.bert.compact.compact_constants`
stores them in int8 with one scale per row. Variants, each in a fresh process (the
full-size random-weight DeBERTa-v2-large of `benchmarks/fullsize.py`, through `OnnxBert`,
the engine's loading code, with its own cache folder):

- ``q8 (today)``: the file as shipped;
- ``+ int8 embeddings``;
- ``+ int8 embeddings and position tables``;
- ``fp32``: the unquantized export (the reference of how far int8 already is).

Figures: RSS after loading, features on held-out sentences (`engine/synth/data/
heldout_ja.txt` and the benchmark texts) against today's q8 (cosine per token, relative
error per sentence), and the audio of the benchmark voice (fp32 synthesizer, same seed) from
each variant's features against the audio from today's features (`engine.synth.fidelity`,
the int8 gate's figures and thresholds). Weights are random (not trained).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

CACHE = HERE / ".cache" / "bert-memory"

FEATURE_MIN_COSINE = 0.999
"""The features gate: every token's feature vector from the compacted graph has cosine ≥ this
with today's q8 graph's (today's q8 itself is at cosine ~0.9987–0.999 from fp32 on the
random-weight model, docs/bert.md: the compacted tables may add at most about as much
again, and the audio gate below decides the rest)."""


def _rss() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def worker(onnx_path: str, tok: str, cache: str, out: str, sentences: list[str]) -> None:
    """Load one BERT, report RSS, compute features (run in a fresh process)."""
    from engine.bert.onnx_backend import OnnxBert
    from engine.text import analyze

    analyses = [analyze(s).with_blanks() for s in sentences]
    base = _rss()
    t0 = time.perf_counter()
    bert = OnnxBert(onnx_path, tok, threads=2, cache_dir=cache)
    load_s = time.perf_counter() - t0
    rss = _rss()
    feats = [bert.features([a.bert_text], [a.word2ph])[0] for a in analyses]
    np.savez(out, *feats)
    Path(out + ".json").write_text(
        json.dumps({"rss": rss, "rss_before": base, "load_s": load_s, "rss_after_run": _rss()})
    )


def _variants(q8: Path, fp32: Path | None) -> dict[str, Path]:
    import onnx

    from engine.bert.compact import compact_constants

    out = {"q8 (today)": q8}
    for tag, consts in (("emb", False), ("emb+pos", True)):
        path = CACHE / tag / "bert_q8.onnx"
        if not path.is_file() or path.stat().st_mtime < q8.stat().st_mtime:
            t0 = time.perf_counter()
            m = onnx.load(str(q8))
            rep = compact_constants(m, embeddings=True, constants=consts)
            path.parent.mkdir(parents=True, exist_ok=True)
            onnx.save(m, str(path))
            print(
                f"{tag}: {len(rep.embeddings)} embedding table(s), {len(rep.constants)} other "
                f"constant(s): {rep.bytes_before / 2**20:.0f} → {rep.bytes_after / 2**20:.0f} MiB "
                f"({time.perf_counter() - t0:.0f} s)",
                flush=True,
            )
            del m
        out[
            {"emb": "+ int8 embeddings", "emb+pos": "+ int8 embeddings and position tables"}[tag]
        ] = path
    if fp32 is not None and fp32.is_file():
        out["fp32"] = fp32
    return out


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    num = np.sum(a * b, axis=0)
    den = np.linalg.norm(a, axis=0) * np.linalg.norm(b, axis=0)
    return num / np.maximum(den, 1e-30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-audio", action="store_true")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.worker:
        worker(*args.worker, json.loads(Path(rest[0]).read_text(encoding="utf-8")))
        return 0

    import fullsize
    from common import TEXTS

    from engine import layout
    from engine.synth.quantize import HELDOUT_FILE, read_sentences
    from engine.text import split_sentences

    root = fullsize.build()
    q8 = root / layout.BERT_ONNX_Q8_PREFIX / layout.BERT_ONNX_Q8_FILE
    tok = root / layout.BERT_TOKENIZER_PREFIX
    import bench_bert

    fp32 = bench_bert.ONNX_ROOT / layout.BERT_ONNX_FP32_PREFIX / layout.BERT_ONNX_FP32_FILE
    sentences = read_sentences(HELDOUT_FILE)
    for text in TEXTS.values():
        sentences.extend(split_sentences(text))
    CACHE.mkdir(parents=True, exist_ok=True)
    sent_file = CACHE / "sentences.json"
    sent_file.write_text(json.dumps(sentences, ensure_ascii=False), encoding="utf-8")
    variants = _variants(q8, fp32)
    results: dict[str, Any] = {"sentences": len(sentences), "variants": {}}
    feats: dict[str, list[np.ndarray]] = {}
    for name, path in variants.items():
        out = CACHE / f"feats-{len(feats)}"
        cache = CACHE / "ours-cache"
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--worker",
                str(path),
                str(tok),
                str(cache),
                str(out),
                str(sent_file),
            ],
            check=True,
            env={**os.environ, "PYTHONPATH": str(HERE.parent)},
        )
        info = json.loads(Path(str(out) + ".json").read_text())
        with np.load(str(out) + ".npz") as z:
            feats[name] = [z[k] for k in sorted(z.files, key=lambda k: int(k.split("_")[1]))]
        results["variants"][name] = {
            "file_mib": round(path.stat().st_size / 2**20, 1),
            "rss_mib": round(info["rss"] / 2**20, 1),
            "rss_over_python_mib": round((info["rss"] - info["rss_before"]) / 2**20, 1),
            "load_s": round(info["load_s"], 2),
        }
        print(name, results["variants"][name], flush=True)
    ref = feats["q8 (today)"]
    for name, fs in feats.items():
        cos = np.concatenate([_cosines(a, b) for a, b in zip(ref, fs, strict=True)])
        rel = [
            float(np.linalg.norm(a - b) / np.linalg.norm(a)) for a, b in zip(ref, fs, strict=True)
        ]
        r = results["variants"][name]
        r["cosine_vs_q8_min"] = float(cos.min())
        r["cosine_vs_q8_mean"] = float(cos.mean())
        r["rel_err_vs_q8_max"] = max(rel)
        r["features_gate"] = bool(cos.min() >= FEATURE_MIN_COSINE)
        print(name, {k: r[k] for k in r if "vs_q8" in k or "gate" in k}, flush=True)
    if not args.no_audio:
        results["audio"] = _audio(root, sentences, feats)
    shutil.rmtree(CACHE / "ours-cache", ignore_errors=True)
    out = HERE / "results" / "bert-memory.json"
    out.write_text(json.dumps(results, indent=2, ensure_ascii=False), encoding="utf-8")
    print(f"wrote {out}")
    return 0


def _audio(root: Path, sentences: list[str], feats: dict[str, list[np.ndarray]]) -> dict:
    """The benchmark voice's fp32 audio from each variant's features vs today's."""
    import fullsize

    from engine import EngineOptions
    from engine.layout import onnx_folder_files, speaker_prefix
    from engine.neural.loader import _split_backend, voice_spec
    from engine.synth.common import NoiseSource, SynthInputs, SynthParams
    from engine.synth.fidelity import SentenceFidelity, compare, judge
    from engine.text import analyze

    files = onnx_folder_files(root / speaker_prefix(fullsize.VOICE_NAME, "onnx"))
    synth = _split_backend(files, EngineOptions(precision="fp32", threads=2))
    spec = voice_spec(fullsize.VOICE_NAME, files)
    vec = spec.style_vectors[0].astype(np.float32)
    analyses = [analyze(s).with_blanks() for s in sentences]

    def audio(fs: list[np.ndarray], i: int) -> np.ndarray:
        a = analyses[i]
        inputs = SynthInputs(
            np.asarray(a.phone_ids, np.int64),
            np.asarray(a.tone_ids, np.int64),
            np.asarray(a.lang_ids, np.int64),
            fs[i],
            vec,
            0,
        )
        lat = synth.latent(inputs, SynthParams(), NoiseSource(20260102, i))
        return np.asarray(synth.decode(lat, lat.z)).reshape(-1), lat.z.shape[-1]

    n = min(8, len(sentences))
    refs = [audio(feats["q8 (today)"], i) for i in range(n)]
    out = {}
    for name, fs in feats.items():
        if name == "q8 (today)":
            continue
        rows = []
        same_len = 0
        for i in range(n):
            y, frames = audio(fs, i)
            ref, ref_frames = refs[i]
            if frames != ref_frames:
                continue
            same_len += 1
            snr, lm, mcd = compare(np.clip(ref, -1, 1), np.clip(y, -1, 1), synth.sample_rate)
            secs = len(ref) / synth.sample_rate
            rows.append(SentenceFidelity(sentences[i], "", secs, snr, lm, mcd))
        rep = judge(name, rows) if rows else None
        out[name] = {
            "same_durations": f"{same_len}/{n}",
            "snr_min": rep.snr_db_min if rep else None,
            "logmel": rep.logmel_db_mean if rep else None,
            "mcd": rep.mcd_db_mean if rep else None,
            "passed": bool(rep and rep.passed and same_len == n),
        }
        print("audio", name, out[name], flush=True)
    return out


if __name__ == "__main__":
    sys.exit(main())
