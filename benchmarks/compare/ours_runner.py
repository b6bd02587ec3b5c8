"""Our engine as a benchmark worker (project venv). Same JSON commands as
`hayakoe_runner worker`: `prepare`, `add_speakers`, `generate`, `stream`, `mem`, and
`exactness`. Started by `drive.start` with the environment of the variant being measured
(thread count, window plan, ...), so every variant runs in a fresh process.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.compare.worker import EngineWorker, claim_stdout, serve_commands
from engine import layout


class _Worker(EngineWorker):
    def make_tts(self, cache_dir: str | None):
        from engine import TTS, EngineOptions

        # the variants set the documented environment defaults (e.g. first window 0).
        options = EngineOptions.from_env()
        return TTS(device="cpu", cache_dir=cache_dir, bert_source=self.root, options=options)

    def prepare(self, msg: dict) -> dict:
        out = super().prepare(msg)
        # what each voice runs: "int8 on OpenVINO, 0.43× fp32's time here (measured)"
        out["runs"] = {name: s.runs for name, s in self.tts.speakers.items()}
        return out

    def exactness(self, msg: dict) -> dict:
        """Windowed vs whole-sentence decoding, and our cut graphs vs hayakoe's
        synthesizer.onnx, on the full-size voice: max |difference| of the audio."""
        import json as _json

        import numpy as np

        from engine.synth.common import NoiseSource, SynthInputs, SynthParams
        from engine.synth.decoder_split import SplitOnnxSynthesizer
        from engine.synth.onnx_backend import OnnxSynthesizer
        from engine.synth.windowed import (
            DecoderGeometry,
            WindowedSentence,
            WindowPlan,
        )

        folder = Path(msg["root"]) / layout.speaker_prefix(msg["speaker"], "onnx")
        cfg = _json.loads((folder / "config.json").read_text(encoding="utf-8"))
        kw = {
            "inter_channels": cfg["model"]["inter_channels"],
            "hop_length": cfg["data"]["hop_length"],
            "sample_rate": cfg["data"]["sampling_rate"],
        }
        split = SplitOnnxSynthesizer(
            folder / "synthesizer.onnx", None, geometry=DecoderGeometry.from_config(cfg), **kw
        )
        original = OnnxSynthesizer(folder / "synthesizer.onnx", None, **kw)
        rng = np.random.default_rng(0)
        t = int(msg.get("phone_ids", 121))
        inputs = SynthInputs(
            rng.integers(1, 100, t),
            rng.integers(6, 8, t),
            np.ones(t, np.int64),
            (rng.standard_normal((1024, t)) * 0.5).astype(np.float32),
            rng.standard_normal(256).astype(np.float32),
        )
        params = SynthParams(sdp_ratio=0.0)
        ref = original.synthesize(inputs, params, NoiseSource(7)).audio
        whole = split.synthesize(inputs, params, NoiseSource(7)).audio
        out = {
            "frames": len(whole) // kw["hop_length"],
            "peak": float(np.abs(ref).max()),
            "cut_vs_hayakoe_graph": float(np.abs(whole - ref).max())
            if whole.shape == ref.shape
            else None,
            "windowed_vs_whole": {},
        }
        for plan in (
            WindowPlan(1, 1.0, 1, 0),
            WindowPlan(8, 1.5, 64, 4),
            WindowPlan(24, 2.0, 512, 16),
        ):
            ws = WindowedSentence(
                split,
                inputs,
                params,
                NoiseSource(7),
                plan,
                sample_rate=kw["sample_rate"],
                trim_lead=False,
                trim_trail=False,
                margin=0,
            )
            joined = np.concatenate([p for p, _ in ws.pieces()])
            out["windowed_vs_whole"][f"first{plan.first}-x{plan.growth}-max{plan.largest}"] = float(
                np.abs(joined - np.clip(whole, -1, 1)).max()
            )
        return out


def main() -> None:
    out = claim_stdout()
    w = _Worker()
    serve_commands({**w.handlers(), "exactness": w.exactness}, out)


if __name__ == "__main__":
    main()
