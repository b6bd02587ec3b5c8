"""A minimal Wyoming TTS server around hayakoe 1.3.1's `astream()` (hayakoe ships none), so
both engines' Wyoming first audio is measured by the same client; run by `drive.server` in
hayakoe's own torch-free venv (with torch importable, transformers imports it and inflates
hayakoe's memory, hayakoe-interface.md §7). One-shot `synthesize` streams hayakoe's sentences
as they come; streaming (`synthesize-start/-chunk/-stop`) speaks each sentence once its end
(。！？!?\\n) has arrived: the obvious way to put hayakoe behind Wyoming.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from typing import Any

from hayakoe import TTS
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event
from wyoming.info import Attribution, Info, TtsProgram, TtsVoice
from wyoming.server import AsyncEventHandler, AsyncServer

from benchmarks.lib.voices import OPTIONS

_SENTENCE_END = re.compile(r"(?<=[。！？!?\n])")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag in ("--uri", "--root", "--voice"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()

    tts = TTS(device="cpu", bert_source=args.root).load(args.voice, source=args.root).prepare()
    speaker = tts.speakers[args.voice]
    audio = {"rate": speaker.sampling_rate, "width": 2, "channels": 1}
    about: dict[str, Any] = {
        "attribution": Attribution(name="hayakoe", url="https://github.com/LemonDouble/hayakoe"),
        "installed": True,
    }
    voice = TtsVoice(
        name=args.voice, description=args.voice, version=None, languages=["ja"], **about
    )
    program = TtsProgram(
        name="hayakoe-minimal",
        description="hayakoe 1.3.1 behind a minimal Wyoming handler",
        version="1.3.1",
        voices=[voice],
        supports_synthesize_streaming=True,
        **about,
    )
    info = Info(tts=[program])

    class Handler(AsyncEventHandler):
        streaming, buffer, started = False, "", False  # then set per connection

        async def _speak(self, text: str) -> None:
            async for chunk in speaker.astream(text, **OPTIONS):
                await self._start()
                await self.write_event(AudioChunk(audio=chunk.pcm_bytes(), **audio).event())

        async def _start(self) -> None:
            if not self.started:
                await self.write_event(AudioStart(**audio).event())
                self.started = True

        async def handle_event(self, event: Event) -> bool:
            if event.type == "describe":
                await self.write_event(info.event())
            elif event.type == "synthesize-start":
                self.streaming, self.buffer, self.started = True, "", False
            elif event.type == "synthesize-chunk":
                self.buffer += event.data["text"]
                *complete, self.buffer = _SENTENCE_END.split(self.buffer)
                if "".join(complete).strip():
                    await self._speak("".join(complete))
            elif event.type == "synthesize-stop":
                if self.buffer.strip():
                    await self._speak(self.buffer)
                await self.write_event(AudioStop().event())
                await self.write_event(Event("synthesize-stopped"))
                self.streaming, self.buffer = False, ""
            elif event.type == "synthesize" and not self.streaming:
                self.started = False
                await self._speak(event.data["text"])
                await self._start()
                await self.write_event(AudioStop().event())
            return True

    server = AsyncServer.from_uri(args.uri)
    print("Ready", flush=True, file=sys.stderr)
    asyncio.run(server.run(Handler))


if __name__ == "__main__":
    main()
