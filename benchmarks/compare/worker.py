"""What both engines' worker processes share: memory probes, timing, the wire format.

Imported by `ours_runner` (project venv) and `hayakoe_runner` (hayakoe's own torch-free
venv), so it uses only the standard library, numpy and psutil.

Workers talk to their driver (`drive.Worker`) over stdin/stdout, one JSON object per line.
Anything a library prints goes to stderr: a worker moves its real stdout to a private
descriptor before it imports the engine (`claim_stdout`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from benchmarks.lib.listener import ListenerClock
from benchmarks.lib.voices import OPTIONS


def memory() -> dict[str, int]:
    """Resident set size now and its peak so far (bytes) for this process."""
    rss = hwm = 0
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
    except OSError:  # not Linux: psutil gives the current RSS only
        import psutil

        rss = hwm = psutil.Process().memory_info().rss
    return {"rss": rss, "hwm": hwm}


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux ≥ 4.0: write 5 to clear_refs). True if done."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def claim_stdout() -> TextIO:
    """Keep the real stdout for the JSON protocol and point fd 1 and sys.stdout at stderr."""
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "w", encoding="utf-8", buffering=1)


def serve_commands(handlers: dict[str, Callable[[dict], dict]], out: TextIO) -> None:
    """Read JSON commands from stdin, answer each with one JSON line ({"error": ...} on
    failure) until {"cmd": "quit"} or end of input."""
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        cmd = msg.get("cmd")
        if cmd == "quit":
            out.write(json.dumps({"ok": True}) + "\n")
            return
        try:
            handler = handlers[cmd]
            reply = handler(msg)
        except Exception as exc:  # noqa: BLE001 - reported to the driver, which stops with the message
            import traceback

            traceback.print_exc()
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(reply) + "\n")


def time_stream(chunks: Any, sample_rate: int, *, first_only: bool = False) -> dict[str, float]:
    """Consume an iterator of audio results (objects with `.data` int16 arrays), timing the
    first one and the end. Starts the clock when called: create the iterator right before.

    `gap_s`: the silence a player would insert, starting to play the first chunk when it
    arrives and each later one as soon as both it has arrived and the previous one has
    played (underruns, summed, however short: `listener.ListenerClock` with no noise floor).
    With `first_only` the stream is closed after the first chunk (time to first audio only;
    the rest is not synthesized)."""
    t0 = time.perf_counter()
    clock = ListenerClock(start=t0, min_gap=0.0)
    for chunk in chunks:
        clock.feed(time.perf_counter(), len(chunk.data), sample_rate)
        if first_only:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
            break
    wall = time.perf_counter() - t0
    first = clock.first_audio_s
    return {
        "ttfa_s": first if first is not None else wall,
        "wall_s": wall,
        "audio_s": clock.audio_s,
        "chunks": clock.chunks,
        "gap_s": clock.gap_s,
        "played_s": clock.heard_until_s,  # when a real-time player would finish
    }


class EngineWorker:
    """The benchmark commands (`prepare`, `add_speakers`, `generate`, `stream`, `mem`) for an
    engine with hayakoe's API shape; each runner subclasses it and names its `TTS` class and
    how a speaker reports its sample rate, so both engines are timed by the same code."""

    sample_rate_attr = "sample_rate"

    def __init__(self) -> None:
        self.tts: Any = None
        self.root = ""

    def make_tts(self, cache_dir: str | None) -> Any:
        raise NotImplementedError

    def prepare(self, msg: dict) -> dict:
        self.root = msg["root"]
        t0 = time.perf_counter()
        tts = self.make_tts(msg.get("cache_dir"))
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
        rate = getattr(speaker, self.sample_rate_attr)
        return {**time_stream(chunks, rate, first_only=msg.get("first_only", False)), **memory()}

    def mem(self, msg: dict) -> dict:
        if msg.get("reset"):
            reset_peak()
        return memory()

    def handlers(self) -> dict[str, Callable[[dict], dict]]:
        """Command name → method, for `serve_commands`."""
        return {
            "prepare": self.prepare,
            "add_speakers": self.add_speakers,
            "generate": self.generate,
            "stream": self.stream,
            "mem": self.mem,
        }
