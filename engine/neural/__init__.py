"""Neural (Style-Bert-VITS2 JP-Extra) voices.

- `config`: the typed `config.json` of a JP-Extra voice (`VoiceConfig`, `load_config`)
- `voice`: `NeuralVoice`, frontend + BERT + synthesizer behind the `Voice` seam
- `loader`: `locate_voice` (which folder of a source holds a voice) and `load_neural_voice`

The names below are loaded on first use (module ``__getattr__``), so that the synthesizer
backends and the model may import `engine.neural.config` without importing the loader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import VoiceConfig, load_config
    from .loader import VoiceLocation, load_neural_voice, locate_voice
    from .voice import NeuralVoice

_LAZY = {
    "VoiceConfig": "engine.neural.config",
    "load_config": "engine.neural.config",
    "NeuralVoice": "engine.neural.voice",
    "VoiceLocation": "engine.neural.loader",
    "load_neural_voice": "engine.neural.loader",
    "locate_voice": "engine.neural.loader",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(_LAZY[name]), name)


__all__ = [
    "NeuralVoice",
    "VoiceConfig",
    "VoiceLocation",
    "load_config",
    "load_neural_voice",
    "locate_voice",
]
