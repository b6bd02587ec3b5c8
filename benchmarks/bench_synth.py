"""Real-time factor of the full-size JP-Extra synthesizer: ONNX Runtime CPU vs PyTorch CPU.

    python benchmarks/bench_synth.py [--threads N] [--repeats 3] [--rebuild]

Builds (once, cached in benchmarks/.cache/synth/) a synthesizer with the default
JP-Extra config (the shapes of full_size_manifest.tsv, ~63 M parameters) and random
weights; the duration predictor's output bias is solved so that the texts get about 2.75
frames per phone id including blanks, a real voice's speaking rate. It is exported with
the project's exporter to hayakoe's synthesizer.onnx.

For short / medium / long text (the frontend's real phone ids; random BERT features, since
only the synthesizer is measured) it times one sentence-sized call per text on:

- onnx   — ONNX Runtime, CPU, the engine's session options (the CPU default),
- torch  — PyTorch fp32 on CPU,

RTF = synthesis seconds / audio seconds (lower is better); `vs onnx` is each backend's time
over ONNX Runtime's in the same run. Weights do not change the cost, shapes and lengths do.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

CACHE = HERE / ".cache" / "synth"
FRAMES_PER_ID = 2.75
VERSION = 1

TEXTS = {
    "short": "こんにちは、今日はいい天気ですね。",
    "medium": (
        "リビングの照明を消して、エアコンを二十五度の冷房に設定しました。今夜は雨が降る予報です。"
    ),
    "long": (
        "本日の予定をお知らせします。午前九時から、駅前の会議室で月例の打ち合わせがあります。"
        "資料は昨日のうちに共有フォルダへ入れておきましたので、出発前に一度目を通しておいてください。"
        "お昼は取引先の方と一緒に、近くのそば屋で食事をする予定です。"
    ),
}


def phone_inputs(text: str, bert_channels: int = 1024):
    from engine.synth.common import SynthInputs

    try:
        from engine.text import analyze

        a = analyze(text).with_blanks()
        ids, tones, langs = a.phone_ids, a.tone_ids, a.lang_ids
    except (ImportError, RuntimeError, ValueError) as exc:  # no frontend: synthetic ids
        print(f"(frontend unavailable: {exc}; synthetic ids)", file=sys.stderr)
        n = 2 * int(len(text) * 2.2) + 1
        ids = [0 if i % 2 == 0 else 8 + (i % 60) for i in range(n)]
        tones = [0 if i % 2 == 0 else 6 + (i // 2) % 2 for i in range(n)]
        langs = [0 if i % 2 == 0 else 1 for i in range(n)]
    t = len(ids)
    rng = np.random.default_rng(len(text))
    return SynthInputs(
        np.asarray(ids, np.int64),
        np.asarray(tones, np.int64),
        np.asarray(langs, np.int64),
        rng.standard_normal((bert_channels, t)).astype(np.float32),
        rng.standard_normal(256).astype(np.float32) * 0.1,
        0,
    )


def build(rebuild: bool = False) -> Path:
    """The cached full-size random voice (plain folder + onnx/ export)."""
    import torch
    from safetensors.torch import save_file

    from engine.model import JPExtraSynthesizer
    from engine.neural.config import parse_config
    from engine.synth.export import export_model_dir

    stamp = CACHE / "built.json"
    if not rebuild and stamp.is_file() and json.loads(stamp.read_text()).get("version") == VERSION:
        return CACHE
    shutil.rmtree(CACHE, ignore_errors=True)
    plain = CACHE / "plain"
    plain.mkdir(parents=True)
    raw = {
        "version": "2.5.0-JP-Extra",
        "model_name": "bench",
        "data": {"n_speakers": 1, "spk2id": {"bench": 0}, "style2id": {"Neutral": 0}},
    }
    torch.manual_seed(0)
    model = JPExtraSynthesizer(parse_config(raw)).eval()
    # Solve the dp bias so the texts average FRAMES_PER_ID frames per id.
    with torch.no_grad():
        model.dp.proj.weight.mul_(0.05)
        model.dp.proj.bias.zero_()
        raws = []
        for text in TEXTS.values():
            inp = phone_inputs(text)
            t = inp.length
            enc = model.encode(
                torch.from_numpy(inp.phone_ids)[None],
                torch.tensor([t]),
                torch.tensor([0]),
                torch.from_numpy(inp.tone_ids)[None],
                torch.from_numpy(inp.lang_ids)[None],
                torch.from_numpy(inp.bert)[None],
                torch.from_numpy(inp.style_vec)[None],
            )
            raws.append(model.dp(enc.hidden, enc.x_mask, g=enc.g).flatten())
        logw = torch.cat(raws)
        lo, hi = -3.0, 3.0
        for _ in range(60):
            mid = (lo + hi) / 2
            mean = torch.ceil(torch.exp(logw + mid)).mean().item()
            lo, hi = (mid, hi) if mean < FRAMES_PER_ID else (lo, mid)
        model.dp.proj.bias.fill_((lo + hi) / 2)
        # Keep the stochastic predictor near the same rate (sdp_ratio > 0).
        model.sdp.flows[0].m.zero_()
        model.sdp.flows[0].m[0].fill_(-(lo + hi) / 2)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    state["iteration"] = torch.tensor([0])
    save_file(state, str(plain / "model.safetensors"))
    (plain / "config.json").write_text(json.dumps(raw))
    np.save(plain / "style_vectors.npy", np.zeros((1, 256), np.float32))
    export_model_dir(
        plain / "config.json",
        plain / "model.safetensors",
        plain / "style_vectors.npy",
        CACHE / "onnx_export",
    )
    stamp.write_text(json.dumps({"version": VERSION}))
    return CACHE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--threads", type=int, default=None, help="threads for both backends (default: all usable)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--backends", default="onnx,torch")
    args = parser.parse_args()

    import torch

    from engine.neural.config import load_config
    from engine.synth.common import NoiseSource, SynthParams
    from engine.synth.onnx_backend import OnnxSynthesizer, default_threads
    from engine.synth.torch_backend import TorchSynthesizer

    threads = args.threads or default_threads()
    torch.set_num_threads(threads)
    root = build(args.rebuild)
    cfg = load_config(root / "plain" / "config.json")
    backends = {}
    t0 = time.perf_counter()
    for name in args.backends.split(","):
        t = time.perf_counter()
        if name == "onnx":
            backends[name] = OnnxSynthesizer(
                root / "onnx_export" / "synthesizer.onnx",
                None,
                inter_channels=cfg.model.inter_channels,
                hop_length=cfg.hop_length,
                sample_rate=cfg.sample_rate,
                threads=threads,
            )
        elif name == "torch":
            backends[name] = TorchSynthesizer(cfg, root / "plain" / "model.safetensors")
        print(f"load {name}: {time.perf_counter() - t:.1f} s", file=sys.stderr)
    # sdp_ratio 0: durations from the deterministic predictor (calibrated to FRAMES_PER_ID).
    params = SynthParams(noise_scale=0.6, length_scale=1.0, noise_scale_w=0.8, sdp_ratio=0.0)
    print(f"threads: {threads}; torch {torch.__version__}; repeats {args.repeats} (median)")
    header = f"{'text':7} {'ids':>5} {'frames':>6} {'audio s':>8} " + " ".join(
        f"{b + ' s':>9} {b + ' RTF':>9} {'vs onnx':>7}" for b in backends
    )
    print(header)
    warm = phone_inputs(TEXTS["short"], cfg.model.bert_channels)
    for synth in backends.values():
        synth.synthesize(warm, params, NoiseSource(0))  # first-call costs, once per backend
    for label, text in TEXTS.items():
        inp = phone_inputs(text, cfg.model.bert_channels)
        row, base = [], None
        audio_s = None
        for name, synth in backends.items():
            times = []
            for r in range(args.repeats):
                t = time.perf_counter()
                out = synth.synthesize(inp, params, NoiseSource(r))
                times.append(time.perf_counter() - t)
            sec = statistics.median(times)
            audio_s = len(out.audio) / cfg.sample_rate
            base = sec if name == "onnx" else base
            ratio = f"{sec / base:7.2f}" if base else f"{'-':>7}"
            row.append(f"{sec:9.3f} {sec / audio_s:9.3f} {ratio}")
        frames = round(audio_s * cfg.sample_rate / cfg.hop_length)
        print(f"{label:7} {inp.length:5d} {frames:6d} {audio_s:8.2f} " + " ".join(row))
    print(f"(total {time.perf_counter() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
