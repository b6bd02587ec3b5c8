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

from . import layout
from .audio import AudioResult
from .heap import limit_malloc_arenas, trim_heap
from .layout import OFFICIAL_SOURCE
from .openjtalk import EMBEDDED_VOICE_NAME
from .options import EngineOptions
from .output import OUTPUT_RATES, Chime, OutputOptions, WavError
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


_LAZY = {
    # name: (module, attribute) — loaded on first use, so `import engine` stays cheap and
    # the torch-only tools cost nothing on the ONNX/CPU path.
    "RedactingFilter": ("engine.sources.redact", "RedactingFilter"),
    "redact": ("engine.sources.redact", "redact"),
    "register_secret": ("engine.sources.redact", "register_secret"),
    "cache_root": ("engine.sources.cache", "cache_root"),
    "parse_source": ("engine.sources", "parse_source"),
    "pre_download": ("engine.download", "pre_download"),
    "export_bert": ("engine.bert.export", "export_bert"),
    "export_voice": ("engine.synth.export", "export_voice"),
    "check_export": ("engine.synth.export", "check_export"),
    # int8 graphs with their fidelity report (`wyoming-hayakoe quantize`)
    "quantize_voice": ("engine.neural.quantize", "quantize_voice"),
    # AivisHub voice files (.aivmx / .aivm)
    "is_aivm_source": ("engine.aivm.files", "is_aivm_source"),
    "aivm_voices_of_file": ("engine.aivm.loader", "voices_of_file"),
    "aivm_voices_in_dir": ("engine.aivm.loader", "voices_in_dir"),
    "AivmFileError": ("engine.aivm.manifest", "AivmFileError"),
    # user dictionary files: reload on SIGHUP, `dict check`
    "reload_user_dictionary": ("engine.text.userdict_watch", "reload_user_dictionary"),
    "check_user_dictionary": ("engine.text.userdict_watch", "check_user_dictionary"),
    # the web page: what a text will be read as, and the user dictionary's entries
    "TextPipeline": ("engine.text.pipeline", "TextPipeline"),
    "Readings": ("engine.text.pipeline", "Readings"),
    "AccentPhrase": ("engine.text.accents", "AccentPhrase"),
    "UserWord": ("engine.text.userdict", "UserWord"),
    "UserDictionaryError": ("engine.text.userdict", "UserDictionaryError"),
    "read_user_dictionary": ("engine.text.userdict", "read_user_dictionary"),
}


def __getattr__(name: str):
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    from importlib import import_module

    return getattr(import_module(module), attr)


__all__ = [
    "AivmFileError",
    "aivm_voices_in_dir",
    "aivm_voices_of_file",
    "is_aivm_source",
    "AccentPhrase",
    "Readings",
    "TextPipeline",
    "UserDictionaryError",
    "UserWord",
    "read_user_dictionary",
    "limit_malloc_arenas",
    "trim_heap",
    "OFFICIAL_SOURCE",
    "EMBEDDED_VOICE_NAME",
    "OUTPUT_RATES",
    "TTS",
    "AudioPiece",
    "AudioResult",
    "Chime",
    "EngineOptions",
    "OutputOptions",
    "RedactingFilter",
    "Speaker",
    "SynthesisOptions",
    "Voice",
    "__version__",
    "cache_root",
    "check_export",
    "check_user_dictionary",
    "export_bert",
    "export_voice",
    "parse_source",
    "pre_download",
    "quantize_voice",
    "redact",
    "register_secret",
    "layout",
    "reload_user_dictionary",
    "WavError",
]
