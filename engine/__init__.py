"""wyoming-hayakoe's text-to-speech engine: Japanese text → audio, no Wyoming in here.

Public API (hayakoe's shape)::

    from engine import TTS
    tts = TTS(device="cpu").load("openjtalk-mei").prepare()
    audio = tts.speakers["openjtalk-mei"].generate("こんにちは。")
    audio.save("out.wav")

Importing this package is cheap: no PyTorch, ONNX Runtime or pyopenjtalk until a voice
is prepared.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

from .audio import AudioResult
from .openjtalk import EMBEDDED_VOICE_NAME
from .speaker import Speaker
from .tts import DEFAULT_SOURCE, TTS, NeuralEngineMissingError
from .voice import AudioPiece, SynthesisOptions, Voice


def _version() -> str:
    try:
        return metadata.version("wyoming-hayakoe")
    except metadata.PackageNotFoundError:  # running from a source tree
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        try:
            found = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text("utf-8"), re.MULTILINE)
        except OSError:
            found = None
        return found.group(1) if found else "unknown"


__version__ = _version()


def __getattr__(name: str):
    # Lazy: only the server's logging setup needs it.
    if name == "RedactingFilter":
        from .sources.redact import RedactingFilter

        return RedactingFilter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "DEFAULT_SOURCE",
    "EMBEDDED_VOICE_NAME",
    "TTS",
    "AudioPiece",
    "AudioResult",
    "NeuralEngineMissingError",
    "RedactingFilter",
    "Speaker",
    "SynthesisOptions",
    "Voice",
    "__version__",
]
