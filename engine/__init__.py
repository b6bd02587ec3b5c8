"""wyoming-hayakoe's text-to-speech engine: Japanese text → audio, no Wyoming in here.

Public API (hayakoe's shape)::

    from engine import TTS
    tts = TTS(device="cpu").load("openjtalk-mei").prepare()
    audio = tts.speakers["openjtalk-mei"].generate("こんにちは。")
    audio.save("out.wav")

Importing this package is cheap: no PyTorch, ONNX Runtime or pyopenjtalk until a voice
is prepared. These twelve names are the whole public API; the tools (export, quantize,
download, the user dictionary, the text pipeline, ...) are imported from their modules
(`engine.synth.export`, `engine.neural.quantize`, `engine.download`, `engine.text.userdict`,
`engine.text.pipeline`, ...), as `docs/internals.md` lists.
"""

from __future__ import annotations

import os
import re
from importlib import metadata
from pathlib import Path

# ONNX Runtime >= 1.30 on Linux and macOS sends usage events to Microsoft's 1DS collector
# (mobile.events.data.microsoft.com): its ProcessInfo event is queued when the native module
# loads and uploaded about 10 s later. `onnxruntime.disable_telemetry_events()` leaves that
# uploader running; only this variable, read once when the native module initializes,
# keeps it from being created. Set before any part of the engine imports onnxruntime; a
# value the user set is kept (docs/deployment.md, "No network lookups").
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from .audio import AudioResult
from .layout import OFFICIAL_SOURCE
from .openjtalk import EMBEDDED_VOICE_NAME
from .options import EngineOptions
from .output import Chime, OutputOptions
from .speaker import Speaker
from .tts import TTS
from .voice_backend import AudioPiece, SynthesisOptions, Voice


def _version() -> str:
    try:
        return metadata.version("wyoming-hayakoe")
    except metadata.PackageNotFoundError:  # running from a source tree
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        try:
            found = re.search(
                r'^version\s*=\s*"([^"]+)"', pyproject.read_text("utf-8"), re.MULTILINE
            )
        except OSError:
            found = None
        return found.group(1) if found else "unknown"


__version__ = _version()


__all__ = [
    "EMBEDDED_VOICE_NAME",
    "OFFICIAL_SOURCE",
    "TTS",
    "AudioPiece",
    "AudioResult",
    "Chime",
    "EngineOptions",
    "OutputOptions",
    "Speaker",
    "SynthesisOptions",
    "Voice",
    "__version__",
]
