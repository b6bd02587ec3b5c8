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

from common import OPTIONS, claim_stdout, memory, reset_peak, serve_commands, time_stream  # noqa: E402


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

    def mem(self, msg: dict) -> dict:
        if msg.get("reset"):
            reset_peak()
        return memory()


def main() -> None:
    out = claim_stdout()
    w = _Worker()
    serve_commands(
        {"prepare": w.prepare, "add_speakers": w.add_speakers, "generate": w.generate,
         "stream": w.stream, "mem": w.mem},
        out,
    )


if __name__ == "__main__":
    main()
