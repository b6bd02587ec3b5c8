"""The Python half of `scripts/arm64-check.sh`: what runs on the x86 host and what runs
inside the aarch64 root (under qemu user-mode emulation).

    python scripts/arm64_check.py prepare WORK        # x86 host, needs torch: voice + reference
    python scripts/arm64_check.py neural WORK         # aarch64 root: same audio? int8 gate?
    python scripts/arm64_check.py client PORT         # x86 host: Wyoming client to the server

`prepare` exports the reference small voice `tests/data/model_small` into hayakoe's ONNX
layout under WORK/root (the project's exporter) and synthesizes fixed sentences with fixed
seeds through the real loading code (`load_neural_voice`, ONNX Runtime, fp32; whole
sentences and streamed windows), saving the audio to WORK/reference-x86_64.npz. When the
engine can make int8 graphs (`engine.int8`) it also quantizes the voice here.

`neural` does the same synthesis on the machine it runs on and compares with the reference:
same number of samples and durations, max |difference| ≤ `MAX_ABS_DIFF` and SNR ≥
`MIN_SNR_DB` (see there why); runs the int8 graphs made on the host; and quantizes the voice
again on this machine, which must pass the fidelity gate (engine/synth/fidelity.py) here.

BERT features are a deterministic stand-in (seeded from the text), the same on both machines,
so the comparison isolates the synthesizer; the embedded voice, checked by the server test,
does not use BERT.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

VOICE = "small"
SENTENCES = (
    "こんにちは、今日はいい天気ですね。",
    "リビングの照明を消して、エアコンを二十五度の冷房に設定しました。",
    "明日の朝は冷え込むため、暖房のタイマーを六時に合わせておきます。",
)
SEEDS = (1, 2, 3)

MAX_ABS_DIFF = 1e-3
"""Largest sample difference (audio in [-1, 1]) allowed between aarch64 and x86_64. The
same float32 graph runs on other kernels (NEON instead of AVX2/AVX-512, other summation
orders and fused multiply-adds): differences of ~1e-6 per operation, grown through ~100
layers; 1e-3 is −60 dBFS, far below audibility, and far above what the kernels differ by,
while any real difference (a wrong weight, a flipped duration) is orders larger."""
MIN_SNR_DB = 60.0
"""Reference power over difference power, per sentence (60 dB: the difference is a
millionth of the signal's power)."""


class StandInBert:
    """Deterministic BERT features of the width a voice reads (seeded from the text)."""

    def __init__(self, hidden: int = 1024) -> None:
        self.hidden = hidden

    def features(self, bert_texts, word2phs, **_: object) -> list[np.ndarray]:
        out = []
        for text, w2p in zip(bert_texts, word2phs, strict=True):
            rng = np.random.default_rng(sum(ord(c) for c in text) + len(text))
            out.append(0.5 * rng.standard_normal((self.hidden, int(sum(w2p)))).astype(np.float32))
        return out


def _voice(root: Path, precision: str = "fp32"):
    from engine import EngineOptions
    from engine.neural.loader import load_neural_voice

    options = EngineOptions(threads=1, precision=precision)
    return load_neural_voice(VOICE, root, bert=StandInBert(), options=options)


def synthesize(root: Path, precision: str = "fp32") -> dict[str, np.ndarray]:
    """Whole-sentence and streamed audio of every sentence, fixed seeds, sdp_ratio 0."""
    from engine import SynthesisOptions

    voice = _voice(root, precision)
    style = voice.styles[0]
    out: dict[str, np.ndarray] = {}
    for i, (text, seed) in enumerate(zip(SENTENCES, SEEDS, strict=True)):
        for mode in ("whole", "stream"):
            extra = {"whole_sentences": True} if mode == "whole" else {}
            opts = SynthesisOptions(style=style, seed=seed, sdp_ratio=0.0, extra=extra)
            pieces = list(voice.render([text], opts))
            out[f"{mode}{i}"] = np.concatenate([p.samples for p in pieces])
    return out


def _snr_db(ref: np.ndarray, other: np.ndarray) -> float:
    noise = float(np.sum((ref.astype(np.float64) - other) ** 2))
    signal = float(np.sum(ref.astype(np.float64) ** 2))
    return float("inf") if noise == 0 else 10 * np.log10(signal / noise)


def _int8_available() -> bool:
    try:
        import engine.int8.make  # noqa: F401
    except ImportError:
        return False
    return True


def prepare(work: Path) -> int:
    from engine.synth.export import export_voice

    root = work / "root"
    src = REPO / "tests" / "data" / "model_small"
    t0 = time.perf_counter()
    export_voice(src, root, VOICE)
    print(
        f"exported {src.relative_to(REPO)} → {root}/onnx/speakers/{VOICE} "
        f"({time.perf_counter() - t0:.1f} s)"
    )
    ref = synthesize(root)
    path = work / f"reference-{platform.machine()}.npz"
    np.savez(path, **ref)
    print(
        f"reference audio ({platform.machine()}): {len(ref)} clips, "
        f"{sum(len(v) for v in ref.values()) / 44100:.1f} s → {path.name}"
    )
    if _int8_available():
        print("int8: engine.int8 present; quantizing on the host (see the shell script)")
    else:
        print("int8: engine.int8 not in this checkout: int8 checks will be skipped")
    return 0


def neural(work: Path) -> int:
    import onnxruntime as ort

    machine = platform.machine()
    print(
        f"machine {machine}, Python {platform.python_version()}, onnxruntime {ort.__version__}, "
        f"numpy {np.__version__}"
    )
    refs = sorted(work.glob("reference-*.npz"))
    if not refs:
        print("FAIL: no reference-*.npz (run prepare on the x86 host first)")
        return 1
    ref = np.load(refs[0])
    t0 = time.perf_counter()
    got = synthesize(work / "root")
    note = "" if machine == "x86_64" else " (under emulation timings mean nothing)"
    print(f"synthesized {len(got)} clips in {time.perf_counter() - t0:.1f} s{note}")
    failures = 0
    for key in sorted(ref.files):
        a, b = ref[key], got[key]
        if a.shape != b.shape:
            print(f"FAIL {key}: {len(b)} samples here, {len(a)} on {refs[0].stem[10:]}")
            failures += 1
            continue
        diff = float(np.abs(a - b).max())
        snr = _snr_db(a, b)
        ok = diff <= MAX_ABS_DIFF and snr >= MIN_SNR_DB
        failures += not ok
        print(
            f"{'ok  ' if ok else 'FAIL'} fp32 {key:8s} {len(a):6d} samples  max|diff| "
            f"{diff:.2e} (≤ {MAX_ABS_DIFF:.0e})  SNR {snr:6.1f} dB (≥ {MIN_SNR_DB:.0f})"
        )
    # Streamed windows joined equal the whole sentence here too.
    for i in range(len(SENTENCES)):
        w, s = got[f"whole{i}"], got[f"stream{i}"]
        n = min(len(w), len(s))
        print(
            f"{'ok  ' if n else 'FAIL'} stream{i} vs whole{i} here: max|diff| over the common "
            f"{n} samples {float(np.abs(w[-n:] - s[-n:]).max()) if n else float('nan'):.2e}"
        )
    failures += _int8_check(work)
    print("neural check:", "PASS" if failures == 0 else f"FAIL ({failures})")
    return 1 if failures else 0


def _int8_check(work: Path) -> int:
    """int8 on this machine: the graphs the host made (`wyoming-hayakoe quantize`) load and
    run here; then the voice is quantized here and must pass the fidelity gate here."""
    int8_root = work / "int8-root"
    if not _int8_available():
        print("SKIP int8: engine.int8 is not in this checkout yet")
        return 0
    if not int8_root.is_dir():
        print(f"SKIP int8 (host graphs): no {int8_root.name}/ (the host's quantize did not run)")
    else:
        try:
            got = synthesize(int8_root, precision="int8")
        except Exception as exc:  # noqa: BLE001 - reported as the check's result
            print(f"FAIL int8 (host graphs): cannot load or run with precision='int8': {exc}")
            return 1
        ref = synthesize(int8_root, precision="fp32")
        worst = min(_snr_db(ref[k], got[k]) for k in ref if ref[k].shape == got[k].shape)
        print(f"ok   int8 (host graphs) ran: {len(got)} clips; lowest SNR vs fp32 {worst:.1f} dB")
    return _gate_here(work)


def _gate_here(work: Path) -> int:
    """Calibrate and quantize the voice on this machine (the shipped sentence sets, every
    style) and run the fidelity gate here: int8 made and judged on aarch64's own kernels."""
    from engine.neural.quantize import quantize_voice

    machine = platform.machine()
    t0 = time.perf_counter()
    try:
        made = quantize_voice(
            VOICE,
            str(work / "root"),
            work / f"int8-{machine}",
            bert=StandInBert(),
            cache_dir=work / f"cache-{machine}",
            threads=1,
            progress=lambda line: print(f"  quantize: {line}", flush=True),
        )
    except Exception as exc:  # noqa: BLE001 - reported as the check's result
        print(f"FAIL int8 gate here: quantize failed: {exc}")
        return 1
    report = made.report
    note = "" if machine == "x86_64" else " (under emulation timings mean nothing)"
    print(f"quantized here in {time.perf_counter() - t0:.0f} s{note}")
    print(f"{'ok  ' if report.passed else 'FAIL'} int8 gate here ({machine}): {report.summary()}")
    return 0 if report.passed else 1


def client(port: int) -> int:
    sys.path.insert(0, str(REPO))
    from benchmarks.lib.wyoming import listen, wait_ready

    async def run() -> int:
        t0 = time.perf_counter()
        info = await wait_ready("127.0.0.1", port, timeout=900)
        voices = [v.name for p in info.tts for v in p.voices]
        print(f"describe after {time.perf_counter() - t0:.0f} s: voices {voices}")
        voice = "openjtalk-mei"
        if voice not in voices:
            print(f"FAIL: {voice} not offered")
            return 1
        text = "こんにちは。今日はいい天気ですね。"
        once = await listen("127.0.0.1", port, text, voice, streamed=False)
        text = "はい、電気をつけました。"
        streamed = await listen("127.0.0.1", port, text, voice, streamed=True)
        failures = 0
        for name, heard in (("synthesize", once), ("streaming", streamed)):
            r = heard.summary()
            ok = r["audio_s"] > 0.3 and r["chunks"] > 0
            failures += not ok
            print(
                f"{'ok  ' if ok else 'FAIL'} {name}: {r['audio_s']:.2f} s of audio in "
                f"{r['chunks']} chunks"
            )
        print("server check:", "PASS" if failures == 0 else f"FAIL ({failures})")
        return 1 if failures else 0

    return asyncio.run(run())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("prepare", "neural"):
        sub.add_parser(name).add_argument("work", type=Path)
    sub.add_parser("client").add_argument("port", type=int)
    args = ap.parse_args()
    if args.cmd == "prepare":
        return prepare(args.work)
    if args.cmd == "neural":
        return neural(args.work)
    return client(args.port)


if __name__ == "__main__":
    sys.exit(main())
