"""AivisHub voices: `.aivmx` (ONNX graph + metadata) and `.aivm` (Safetensors + metadata),
loaded as they are published (see docs/aivm.md).

`manifest` reads what a file says about itself (no weights), `files` finds a file through
the sources, `onnx_adapter` turns an `.aivmx` graph into the synthesizer form the engine
runs, `store` makes the cached voice folder once per file version, `naming` gives stable
voice names, `loader` ties them to `engine.neural` (`load_aivm_voice`, `voices_in_dir`,
`voices_of_file`). Importing this package stays light: the loader is imported on use.
"""

from __future__ import annotations

from .files import SPEAKER_SELECTOR, is_aivm_source, local_file, split_selector
from .manifest import AivmFileError, AivmMetadata, is_aivm_path, license_summary, read_metadata

__all__ = [
    "SPEAKER_SELECTOR",
    "AivmFileError",
    "AivmMetadata",
    "is_aivm_path",
    "is_aivm_source",
    "license_summary",
    "local_file",
    "read_metadata",
    "split_selector",
]
