"""One engine as a worker process, `python -m benchmarks.compare.worker ENGINE ROOT` (`ours`, or
`hayakoe` in its own venv: standard library, numpy and psutil only at import), started by
`drive.worker`. It answers each JSON command on stdin (`prepare`, `generate`, `stream`, `mem`:
the methods below) with one JSON line on its real stdout; what libraries print goes to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any

from benchmarks.lib.listener import ListenerClock
from benchmarks.lib.memory import own_memory
from benchmarks.lib.voices import OPTIONS, VOICE_NAME


class EngineWorker:
    """Both engines timed by the same code (hayakoe's API shape)."""

    def __init__(self, engine: str, root: str) -> None:
        self.engine, self.root = engine, root
        self.tts: Any = None

    def prepare(self, msg: dict) -> dict:
        """Load one more speaker (the first call makes the TTS, timed too) and prepare."""
        t0 = time.perf_counter()
        if self.tts is None and self.engine == "hayakoe":
            from hayakoe import TTS

            self.tts = TTS(device="cpu", bert_source=self.root)
        elif self.tts is None:
            from engine import TTS, EngineOptions  # options: the variant's environment

            self.tts = TTS(device="cpu", bert_source=self.root, options=EngineOptions.from_env())
        self.tts.load(msg.get("speaker", VOICE_NAME), source=self.root).prepare()
        runs = {name: getattr(s, "runs", None) for name, s in self.tts.speakers.items()}
        return {"prepare_s": time.perf_counter() - t0, "runs": runs, **self.mem(msg)}

    def generate(self, msg: dict) -> dict:
        t0 = time.perf_counter()
        audio = self.tts.speakers[msg.get("speaker", VOICE_NAME)].generate(msg["text"], **OPTIONS)
        wall, audio_s, rss = (
            time.perf_counter() - t0,
            len(audio.data) / audio.sr,
            self.mem(msg)["rss"],
        )
        return {"wall_s": wall, "audio_s": audio_s, "rtf": wall / audio_s, "rss_after": rss}

    def stream(self, msg: dict) -> dict:
        """First audio and end, and for a real-time player the silence from late chunks
        (summed however short) and when it hears the last sample. `first_only` closes the
        stream after its first chunk (the rest is not made)."""
        speaker = self.tts.speakers[VOICE_NAME]
        rate = getattr(speaker, "sample_rate", None) or speaker.sampling_rate
        t0 = time.perf_counter()
        clock, chunks = ListenerClock(start=t0, min_gap=0.0), speaker.stream(msg["text"], **OPTIONS)
        for chunk in chunks:
            clock.feed(time.perf_counter(), len(chunk.data), rate)
            if msg.get("first_only"):
                getattr(chunks, "close", lambda: None)()
                break
        wall = time.perf_counter() - t0
        first = wall if clock.first_audio_s is None else clock.first_audio_s
        figs = {"ttfa_s": first, "stream_wall_s": wall, "stream_chunks": clock.chunks}
        return {**figs, "gap_s": clock.gap_s, "played_s": clock.heard_until_s}

    def mem(self, msg: dict) -> dict:
        """Resident set size now and its peak so far, bytes."""
        rss, peak = own_memory()
        return {"rss": rss, "hwm": peak}


def main(engine: str, root: str) -> None:
    out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)  # the protocol's stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    worker = EngineWorker(engine, root)
    for line in sys.stdin:
        msg = json.loads(line)
        try:
            reply = getattr(worker, msg["cmd"])(msg)
        except Exception as exc:  # noqa: BLE001 - the driver stops with the message
            traceback.print_exc()
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
