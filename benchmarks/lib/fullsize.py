"""Build (once, cached) a full-size random-weight voice in hayakoe's ONNX layout.

    python -m benchmarks.lib.fullsize            # build if missing, print where it is
    python -m benchmarks.lib.fullsize --force    # rebuild

Weight values do not change the cost of a forward pass; shapes and output length do. So:

- the synthesizer has the real JP-Extra shapes (the project's own `JPExtraSynthesizer` with
  the default config = `full_size_manifest.tsv`), random weights, exported by the project's
  exporter (`engine.synth.export`) to hayakoe's `synthesizer.onnx` + `duration_predictor.onnx`;
- the duration predictor's output projection is rescaled and its bias solved so that the
  benchmark texts get a real voice's speaking rate, about 2.75 frames per phone id including
  blanks (「こんにちは。」 ≈ 0.8 s); the stochastic predictor's output affine is set to the same
  mean, so sdp_ratio > 0 (the servers' default) keeps that rate too;
- the BERT is DeBERTa-v2-large (24 layers, hidden 1024, vocab 22012) with random weights
  (`build_bert_models`: exported and int8-quantised by `engine.bert.export`), with the real
  character tokenizer files.

Layout under benchmarks/.cache/fullsize/ (what both hayakoe 1.3.1 and our engine read):

    bert/tokenizer/...            onnx/bert/q8/bert_q8.onnx
    onnx/speakers/bench/{config.json, style_vectors.npy, synthesizer.onnx, duration_predictor.onnx}
    onnx/speakers/bench2/, bench3/   byte copies (to measure the memory of each added speaker)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import time
from pathlib import Path

import numpy as np

from benchmarks.lib import CACHE, REPO
from benchmarks.lib.texts import TEXTS, VOICE_NAME
from engine import layout

ROOT = CACHE / "fullsize"
EXTRA_SPEAKERS = ("bench2", "bench3")
FRAMES_PER_PHONE = 2.75
BUILD_VERSION = 2  # bump when the recipe changes: the cache is rebuilt
_MARKER = ".complete.json"
_TOKENIZER_FILES = (
    "vocab.txt",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "tokenizer.json",
)
_LOG = logging.getLogger("fullsize")

BERT_LARGE = {
    "hidden_size": 1024,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "attention_head_size": 64,
    "intermediate_size": 4096,
    "pooler_hidden_size": 1024,
    "vocab_size": 22012,
}
BERT_SMOKE = {
    **BERT_LARGE,
    "hidden_size": 64,
    "num_hidden_layers": 4,
    "num_attention_heads": 2,
    "attention_head_size": 32,
    "intermediate_size": 256,
    "pooler_hidden_size": 64,
}
"""A tiny shape of the same network, for `--quick` runs."""
BERT_TOKENIZER = REPO / "tests" / "data" / "bert_small"
Q8_PATH = f"{layout.BERT_ONNX_Q8_PREFIX}/{layout.BERT_ONNX_Q8_FILE}"
FP32_PATH = f"{layout.BERT_ONNX_FP32_PREFIX}/{layout.BERT_ONNX_FP32_FILE}"


def build_bert_models(smoke: bool = False, rebuild: bool = False) -> tuple[Path, Path]:
    """A random DeBERTa-v2-large (seeded; `smoke`: a tiny shape) as PyTorch files, and its
    ONNX fp32 and int8 exports (`engine.bert.export`), cached: (model dir, export root)."""
    import torch

    cache = CACHE / ("bert_smoke_random" if smoke else "bert_large_random")
    model_dir, onnx_root = cache / "torch_model", cache / "export"
    if rebuild:
        shutil.rmtree(cache, ignore_errors=True)
    torch.set_num_threads(os.cpu_count() or 1)
    if not (model_dir / "config.json").is_file():
        from transformers import DebertaV2Config, DebertaV2ForMaskedLM

        config = json.loads((BERT_TOKENIZER / "config.json").read_text())
        config.update(BERT_SMOKE if smoke else BERT_LARGE)
        config.pop("transformers_version", None)
        torch.manual_seed(1234)
        model = DebertaV2ForMaskedLM(DebertaV2Config(**config)).eval()
        # HF init leaves biases 0 and LayerNorm 1/0; give them noise so nothing is degenerate.
        gen = torch.Generator().manual_seed(1235)
        with torch.no_grad():
            for _, p in model.named_parameters():
                if p.numel() and bool((p == p.flatten()[0]).all()):
                    scale = 0.05 if float(p.flatten()[0]) == 0 else 0.1
                    p.add_(torch.randn(p.shape, generator=gen) * scale)
        model_dir.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(model_dir), safe_serialization=True)
        del model
    if not ((onnx_root / Q8_PATH).is_file() and (onnx_root / FP32_PATH).is_file()):
        from engine.bert.export import export_bert

        t0 = time.perf_counter()
        export_bert(
            model_dir, onnx_root, tokenizer_dir=BERT_TOKENIZER, quantize=True, keep_fp32=True
        )
        _LOG.info("BERT exported (fp32 + int8) in %.0f s", time.perf_counter() - t0)
    return model_dir, onnx_root


def build_bert(root: Path) -> Path:
    """The random full-size int8 BERT and its tokenizer under `root`; returns the q8 path."""
    q8 = root / layout.BERT_ONNX_Q8_PREFIX / layout.BERT_ONNX_Q8_FILE
    if q8.is_file():
        return q8
    t0 = time.perf_counter()
    q8.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(build_bert_models()[1] / Q8_PATH, q8.with_suffix(".partial"))
    q8.with_suffix(".partial").replace(q8)
    tok = root / layout.BERT_TOKENIZER_PREFIX
    tok.mkdir(parents=True, exist_ok=True)
    for name in _TOKENIZER_FILES:  # the real char tokenizer's files (the tests keep a copy)
        shutil.copyfile(BERT_TOKENIZER / name, tok / name)
    shutil.copyfile(
        REPO / "benchmarks" / "data" / "deberta_v2_large_config.json", tok / "config.json"
    )
    _LOG.info("BERT ready in %.0f s → %s", time.perf_counter() - t0, q8)
    return q8


def voice_config() -> dict:
    from engine.voice_config import VoiceConfig

    cfg = VoiceConfig().to_dict()
    cfg["version"] = "2.5.0-JP-Extra"
    cfg["model_name"] = VOICE_NAME
    data, model = cfg["data"], cfg["model"]
    assert isinstance(data, dict) and isinstance(model, dict)
    data.update(
        n_speakers=1,
        spk2id={VOICE_NAME: 0},
        num_styles=1,
        style2id={"Neutral": 0},
        use_jp_extra=True,
    )
    model.pop("bert_channels", None)  # not an upstream key
    return cfg


def _calibration_inputs(root: Path):
    """Model inputs (as torch tensors) for every sentence of the benchmark texts."""
    import torch

    from engine.bert import load_bert
    from engine.text import analyze, split_sentences

    bert = load_bert(root, "cpu")
    out = []
    for text in TEXTS.values():
        for sentence in split_sentences(text):
            a = analyze(sentence).with_blanks()
            feats = bert.features([a.bert_text], [a.word2ph])[0]
            n = len(a.phone_ids)
            out.append(
                (
                    torch.tensor([a.phone_ids]),
                    torch.tensor([n]),
                    torch.tensor([0]),
                    torch.tensor([a.tone_ids]),
                    torch.tensor([a.lang_ids]),
                    torch.from_numpy(feats)[None],
                )
            )
    del bert
    return out


def _calibrate_durations(model, inputs, style_vec) -> float:
    """Rescale `dp.proj` and solve its bias so the mean frames per phone id is
    FRAMES_PER_PHONE; point the stochastic predictor's output at the same log-duration.
    Returns the mean frames per phone id reached."""
    import torch

    captured: list[torch.Tensor] = []
    hook = model.dp.proj.register_forward_hook(lambda m, i, o: captured.append(i[0].detach()))
    sv = torch.from_numpy(style_vec)[None]
    with torch.no_grad():
        for x, xl, sid, tone, lang, bert in inputs:
            enc = model.encode(x, xl, sid, tone, lang, bert, sv)
            model.dp(enc.hidden, enc.x_mask, g=enc.g)
    hook.remove()
    w = model.dp.proj.weight.detach()[0, :, 0]  # [filter]
    h = torch.cat([c[0] for c in captured], dim=1)  # [filter, all phone ids]
    proj = w @ h
    spread = 0.25 / max(float(proj.std()), 1e-6)  # log-duration spread of ±0.25
    proj = proj * spread

    def mean_frames(bias: float) -> float:
        return float(torch.ceil(torch.exp(proj + bias)).mean())

    lo, hi = -3.0, 3.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if mean_frames(mid) < FRAMES_PER_PHONE:
            lo = mid
        else:
            hi = mid
    bias = hi
    with torch.no_grad():
        model.dp.proj.weight.mul_(spread)
        model.dp.proj.bias.fill_(bias)
        # Stochastic predictor, inverse of flows[0]: logw = (x - m) * exp(-logs): shrink its
        # spread and centre it on the same mean log-duration.
        affine = model.sdp.flows[0]
        affine.logs[0].fill_(3.0)
        affine.m[0].fill_(-(bias + float(proj.mean())) * float(np.exp(3.0)))
    return mean_frames(bias)


def build_synthesizer(root: Path) -> Path:
    """Random full-size JP-Extra synthesizer exported into `root/onnx/speakers/bench`."""
    out = root / layout.speaker_prefix(VOICE_NAME, "onnx")
    if (out / "synthesizer.onnx").is_file() and (out / "duration_predictor.onnx").is_file():
        return out
    import torch

    from engine.model import JPExtraSynthesizer
    from engine.synth.export import (
        export_duration_predictor_onnx,
        export_synthesizer_onnx,
    )
    from engine.voice_config import parse_config

    torch.manual_seed(1234)
    raw = voice_config()
    model = JPExtraSynthesizer(parse_config(raw)).eval()
    n_params = sum(p.numel() for p in model.parameters())
    style_vectors = np.random.default_rng(1234).standard_normal((1, 256)).astype(np.float32)
    mean = _calibrate_durations(model, _calibration_inputs(root), style_vectors[0])
    _LOG.info("synthesizer: %.1f M parameters, %.2f frames per phone id", n_params / 1e6, mean)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    t0 = time.perf_counter()
    export_synthesizer_onnx(model, tmp / "synthesizer.onnx")
    export_duration_predictor_onnx(model, tmp / "duration_predictor.onnx")
    (tmp / "config.json").write_text(
        json.dumps(raw, ensure_ascii=False, indent=2), encoding="utf-8"
    )
    np.save(tmp / "style_vectors.npy", style_vectors)
    (tmp / "calibration.json").write_text(
        json.dumps({"frames_per_phone_id": mean, "parameters": n_params})
    )
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    _LOG.info("synthesizer exported in %.0f s → %s", time.perf_counter() - t0, out)
    return out


def _copy_speakers(root: Path) -> None:
    src = root / layout.speaker_prefix(VOICE_NAME, "onnx")
    for name in EXTRA_SPEAKERS:
        dst = root / layout.speaker_prefix(name, "onnx")
        if dst.is_dir():
            continue
        tmp = dst.with_name(name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src, tmp)  # real copies: no page sharing between speakers
        cfg = json.loads((tmp / "config.json").read_text(encoding="utf-8"))
        cfg["model_name"] = name
        cfg["data"]["spk2id"] = {name: 0}
        (tmp / "config.json").write_text(
            json.dumps(cfg, ensure_ascii=False, indent=2), encoding="utf-8"
        )
        tmp.rename(dst)


def build(root: Path = ROOT, force: bool = False) -> Path:
    """Build what is missing under `root` and return it."""
    marker = root / _MARKER
    if not force and marker.is_file():
        try:
            if json.loads(marker.read_text())["version"] == BUILD_VERSION:
                return root
        except (ValueError, KeyError):
            pass
    if force or marker.is_file():
        shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    build_bert(root)
    build_synthesizer(root)
    _copy_speakers(root)
    marker.write_text(json.dumps({"version": BUILD_VERSION}))
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description="Build the full-size random benchmark voice.")
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    root = build(args.root, args.force)
    print(root)


if __name__ == "__main__":
    main()
