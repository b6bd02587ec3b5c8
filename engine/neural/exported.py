"""PyTorch voices on the CPU: their ONNX export, made once into the cache.

`exported_onnx_dir` returns `<cache>/exported/<name>-<digest>/` (hayakoe's ONNX form of a
plain Style-Bert-VITS2 folder), exporting on first use (needs PyTorch); the digest follows
the checkpoint's and config's path, size and mtime, so a changed voice is exported again.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..layout import VoiceFolderError

if TYPE_CHECKING:
    from ..sources.cache import CacheDir

__all__ = ["PyTorchFiles", "exported_onnx_dir"]

_LOGGER = logging.getLogger(__name__)


class PyTorchFiles(Protocol):
    """A voice's PyTorch files (`engine.layout.PlainFolderFiles`, `neural.build.VoiceFiles`)."""

    @property
    def directory(self) -> Path: ...

    @property
    def config(self) -> Path | None: ...

    @property
    def checkpoint(self) -> Path | None: ...

    @property
    def style_vectors(self) -> Path | None: ...


def _export_cache_dir(name: str, checkpoint: Path, config: Path, cache_dir: CacheDir) -> Path:
    from ..sources.cache import cache_root

    h = hashlib.sha256()
    for p in (checkpoint, config):
        st = p.stat()
        h.update(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}|".encode())
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return Path(cache_root(cache_dir)) / "exported" / f"{safe}-{h.hexdigest()[:16]}"


def exported_onnx_dir(name: str, files: PyTorchFiles, cache_dir: CacheDir = None) -> Path:
    """ONNX export of a PyTorch voice in the cache (made on first use; needs PyTorch)."""
    config, checkpoint, style_vectors = files.config, files.checkpoint, files.style_vectors
    if config is None or checkpoint is None or style_vectors is None:
        raise VoiceFolderError(
            f"voice folder {files.directory} lacks PyTorch weights (config.json, "
            "*.safetensors and style_vectors.npy) to export"
        )
    out = _export_cache_dir(name, checkpoint, config, cache_dir)
    if (out / "synthesizer.onnx").is_file() and (out / "duration_predictor.onnx").is_file():
        return out
    try:
        from ..synth.export import export_model_dir
    except ImportError as exc:  # no torch in this install
        raise VoiceFolderError(
            f"voice folder {files.directory} holds PyTorch weights; running it on the CPU needs "
            f"an ONNX export (`wyoming-hayakoe export {files.directory} OUT_ROOT --name {name}`) "
            f"or PyTorch installed ({exc})"
        ) from exc
    _LOGGER.info("Exporting %s to ONNX in %s (once)", checkpoint, out)
    export_model_dir(config, checkpoint, style_vectors, out)
    return out
