"""Our engine as a benchmark worker (project venv). Same JSON commands as
`hayakoe_runner.py worker`: `prepare`, `add_speakers`, `generate`, `stream`, `mem`.

Started by `run.py` with the environment of the variant being measured (thread count,
window plan, ...), so every variant runs in a fresh process.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import (
    OPTIONS,
    claim_stdout,
    memory,
    reset_peak,
    serve_commands,
    time_stream,
)


class _Worker:
    def __init__(self) -> None:
        self.tts = None
        self.root = ""

    def prepare(self, msg: dict) -> dict:
        from engine import TTS

        self.root = msg["root"]
        t0 = time.perf_counter()
        tts = TTS(device="cpu", cache_dir=msg.get("cache_dir"), bert_source=self.root)
        for name in msg["speakers"]:
            tts.load(name, source=self.root)
        tts.prepare()
        self.tts = tts
        return {"prepare_s": time.perf_counter() - t0, **memory()}

    def add_speakers(self, msg: dict) -> dict:
        t0 = time.perf_counter()
        for name in msg["speakers"]:
            self.tts.load(name, source=self.root)
        self.tts.prepare()
        return {"prepare_s": time.perf_counter() - t0, **memory()}

    def generate(self, msg: dict) -> dict:
        speaker = self.tts.speakers[msg["speaker"]]
        t0 = time.perf_counter()
        audio = speaker.generate(msg["text"], **msg.get("options", OPTIONS))
        wall = time.perf_counter() - t0
        return {"wall_s": wall, "audio_s": len(audio.data) / audio.sr, **memory()}

    def stream(self, msg: dict) -> dict:
        speaker = self.tts.speakers[msg["speaker"]]
        chunks = speaker.stream(msg["text"], **msg.get("options", OPTIONS))
        return {**time_stream(chunks, speaker.sample_rate, first_only=msg.get("first_only", False)),
                **memory()}

    def exactness(self, msg: dict) -> dict:
        """Windowed vs whole-sentence decoding, and our cut graphs vs hayakoe's
        synthesizer.onnx, on the full-size voice: max |difference| of the audio."""
        import json as _json

        import numpy as np

        from engine.runtime.decoder_split import SplitOnnxSynthesizer
        from engine.runtime.synth_common import NoiseSource, SynthInputs, SynthParams
        from engine.runtime.synth_onnx import OnnxSynthesizer
        from engine.runtime.windowed import (
            DecoderGeometry,
            WindowedSentence,
            WindowPlan,
        )

        folder = Path(msg["root"]) / "onnx" / "speakers" / msg["speaker"]
        cfg = _json.loads((folder / "config.json").read_text(encoding="utf-8"))
        kw = {"inter_channels": cfg["model"]["inter_channels"], "hop_length": cfg["data"]["hop_length"],
                  "sample_rate": cfg["data"]["sampling_rate"]}
        split = SplitOnnxSynthesizer(folder / "synthesizer.onnx", None,
                                     geometry=DecoderGeometry.from_config(cfg), **kw)
        original = OnnxSynthesizer(folder / "synthesizer.onnx", None, **kw)
        rng = np.random.default_rng(0)
        t = int(msg.get("phone_ids", 121))
        inputs = SynthInputs(rng.integers(1, 100, t), rng.integers(6, 8, t), np.ones(t, np.int64),
                             (rng.standard_normal((1024, t)) * 0.5).astype(np.float32),
                             rng.standard_normal(256).astype(np.float32))
        params = SynthParams(sdp_ratio=0.0)
        ref = original.synthesize(inputs, params, NoiseSource(7)).audio
        whole = split.synthesize(inputs, params, NoiseSource(7)).audio
        out = {"frames": len(whole) // kw["hop_length"], "peak": float(np.abs(ref).max()),
               "cut_vs_hayakoe_graph": float(np.abs(whole - ref).max()) if whole.shape == ref.shape else None,
               "windowed_vs_whole": {}}
        for plan in (WindowPlan(1, 1.0, 1, 0), WindowPlan(8, 1.5, 64, 4), WindowPlan(24, 2.0, 512, 16)):
            ws = WindowedSentence(split, inputs, params, NoiseSource(7), plan, sample_rate=kw["sample_rate"],
                                  trim_lead=False, trim_trail=False, margin=0)
            joined = np.concatenate([p for p, _ in ws.pieces()])
            out["windowed_vs_whole"][f"first{plan.first}-x{plan.growth}-max{plan.largest}"] = (
                float(np.abs(joined - np.clip(whole, -1, 1)).max()))
        return out

    def mem(self, msg: dict) -> dict:
        if msg.get("reset"):
            reset_peak()
        return memory()


def main() -> None:
    out = claim_stdout()
    w = _Worker()
    serve_commands(
        {"prepare": w.prepare, "add_speakers": w.add_speakers, "generate": w.generate,
         "stream": w.stream, "mem": w.mem, "exactness": w.exactness},
        out,
    )


if __name__ == "__main__":
    main()
