"""AivisHub voices: `.aivmx` (ONNX graph + metadata) and `.aivm` (Safetensors + metadata),
loaded as they are published (see docs/aivm.md).

`manifest` reads what a file says about itself (no weights), `files` finds a file through
the sources, `onnx_adapter` turns an `.aivmx` graph into the synthesizer form the engine
runs, `store` makes the cached voice folder once per file version, `naming` gives stable
voice names, `loader` ties them to `engine.neural` (`load_aivm_voice`, `voices_in_dir`,
`voices_of_file`).

This package is the server's one way in (its names below; the submodules are the engine's
own). Importing it stays light: the loader, which needs `engine.neural`, is imported on the
first use of its names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .files import SPEAKER_SELECTOR, is_aivm_source, local_file, split_selector
from .manifest import (
    AivmFileError,
    AivmManifest,
    AivmMetadata,
    is_aivm_path,
    license_summary,
    read_metadata,
    read_raw_metadata,
)
from .naming import model_slug
from .store import forget_cache

if TYPE_CHECKING:  # for the type checker only: at run time `__getattr__` imports them
    from .loader import voices_in_dir, voices_of_file

__all__ = [
    "SPEAKER_SELECTOR",
    "AivmFileError",
    "AivmManifest",
    "AivmMetadata",
    "forget_cache",
    "is_aivm_path",
    "is_aivm_source",
    "license_summary",
    "local_file",
    "model_slug",
    "read_metadata",
    "read_raw_metadata",
    "split_selector",
    "voices_in_dir",
    "voices_of_file",
]

# name -> submodule that defines it; imported on first use (it imports engine.neural).
_LAZY: dict[str, str] = {"voices_in_dir": "loader", "voices_of_file": "loader"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
