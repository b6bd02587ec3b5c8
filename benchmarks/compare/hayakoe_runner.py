"""The baseline: hayakoe 1.3.1, run in its own torch-free venv (benchmarks/.cache/hayakoe-venv).

Started by `drive` as `python -m benchmarks.compare.hayakoe_runner`, never imported by the
project's side. Two modes:

- `worker`: answers JSON commands on stdin (see `worker.serve_commands`): `prepare`,
  `add_speakers`, `generate`, `stream`, `mem`.
- `serve`: a minimal Wyoming TTS server around hayakoe's own `astream()` (hayakoe ships no
  Wyoming server), so the Wyoming time-to-first-audio of both engines is measured with the
  same client. One-shot `synthesize` streams hayakoe's sentences as they come; streaming
  (`synthesize-start/-chunk/-stop`) synthesizes each sentence as soon as its end
  (。！？!?\\n) has arrived — the obvious way to put hayakoe behind Wyoming.

Why a separate venv: with torch importable, transformers (used by hayakoe for the tokenizer)
imports it, inflating memory that hayakoe's CPU users would not have (hayakoe-interface.md §7).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys

from benchmarks.compare.worker import EngineWorker, claim_stdout, serve_commands
from benchmarks.lib.voices import OPTIONS

_SENTENCE_END = re.compile(r"(?<=[。！？!?\n])")


class _Worker(EngineWorker):
    sample_rate_attr = "sampling_rate"

    def make_tts(self, cache_dir: str | None):
        from hayakoe import TTS

        return TTS(device="cpu", cache_dir=cache_dir, bert_source=self.root)


def _worker() -> None:
    out = claim_stdout()
    w = _Worker()
    serve_commands(w.handlers(), out)


# ----------------------------------------------------------------------------- Wyoming ---


def _serve(args: argparse.Namespace) -> None:
    from hayakoe import TTS
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.event import Event
    from wyoming.info import Attribution, Describe, Info, TtsProgram, TtsVoice
    from wyoming.server import AsyncEventHandler, AsyncServer
    from wyoming.tts import (
        Synthesize,
        SynthesizeChunk,
        SynthesizeStart,
        SynthesizeStop,
        SynthesizeStopped,
    )

    tts = TTS(device="cpu", bert_source=args.root).load(args.voice, source=args.root).prepare()
    speaker = tts.speakers[args.voice]
    rate = speaker.sampling_rate
    attribution = Attribution(name="hayakoe", url="https://github.com/LemonDouble/hayakoe")
    info = Info(
        tts=[
            TtsProgram(
                name="hayakoe-minimal",
                description="hayakoe 1.3.1 behind a minimal Wyoming handler",
                attribution=attribution,
                installed=True,
                version="1.3.1",
                voices=[
                    TtsVoice(
                        name=args.voice,
                        description=args.voice,
                        attribution=attribution,
                        installed=True,
                        version=None,
                        languages=["ja"],
                    )
                ],
                supports_synthesize_streaming=True,
            )
        ]
    )

    class Handler(AsyncEventHandler):
        def __init__(self, *a, **kw) -> None:
            super().__init__(*a, **kw)
            self.streaming = False
            self.buffer = ""
            self.started = False

        async def _speak(self, text: str) -> None:
            async for chunk in speaker.astream(text, **OPTIONS):
                if not self.started:
                    await self.write_event(AudioStart(rate=rate, width=2, channels=1).event())
                    self.started = True
                await self.write_event(
                    AudioChunk(rate=rate, width=2, channels=1, audio=chunk.pcm_bytes()).event()
                )

        async def handle_event(self, event: Event) -> bool:
            if Describe.is_type(event.type):
                await self.write_event(info.event())
            elif SynthesizeStart.is_type(event.type):
                self.streaming, self.buffer, self.started = True, "", False
            elif SynthesizeChunk.is_type(event.type):
                self.buffer += SynthesizeChunk.from_event(event).text
                parts = _SENTENCE_END.split(self.buffer)
                self.buffer = parts.pop()  # the unfinished tail
                complete = "".join(parts)
                if complete.strip():
                    await self._speak(complete)
            elif SynthesizeStop.is_type(event.type):
                if self.buffer.strip():
                    await self._speak(self.buffer)
                self.buffer = ""
                await self.write_event(AudioStop().event())
                await self.write_event(SynthesizeStopped().event())
                self.streaming = False
            elif Synthesize.is_type(event.type) and not self.streaming:
                self.started = False
                await self._speak(Synthesize.from_event(event).text)
                if not self.started:
                    await self.write_event(AudioStart(rate=rate, width=2, channels=1).event())
                await self.write_event(AudioStop().event())
            return True

    server = AsyncServer.from_uri(args.uri)
    print("Ready", flush=True, file=sys.stderr)
    asyncio.run(server.run(Handler))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    sub.add_parser("worker")
    serve = sub.add_parser("serve")
    serve.add_argument("--root", required=True)
    serve.add_argument("--voice", required=True)
    serve.add_argument("--uri", required=True)
    args = parser.parse_args()
    if args.mode == "worker":
        _worker()
    else:
        _serve(args)


if __name__ == "__main__":
    main()
