"""Finding and loading neural (Style-Bert-VITS2 JP-Extra) voices.

Layouts recognised, in this order for `device="cpu"` (ONNX Runtime):

1. hayakoe's `onnx/speakers/<name>/` under the source root: `config.json`,
   `style_vectors.npy`, `synthesizer.onnx` (or `synthesizer_q8.onnx`), optional
   `duration_predictor.onnx`;
2. the root itself laid out like 1 (a local folder only);
3. hayakoe's `pytorch/speakers/<name>/`: `config.json`, `style_vectors.npy`, `*.safetensors`;
4. the root itself as a plain Style-Bert-VITS2 model folder (like 3; local folder only).

With `device="cuda"` (PyTorch) the PyTorch layouts (3, 4) come first and the ONNX ones are a
fallback run on the CPU. When there are several `*.safetensors`, the newest (mtime) is used,
as hayakoe does.

PyTorch weights on the CPU are exported to ONNX once, on the fly, into the cache
(`<cache>/exported/<name>-<digest>/`; needs PyTorch) and then run on ONNX Runtime, which is
faster than PyTorch on small CPUs (see docs/synthesizer.md). `backend="torch"` runs them on
PyTorch instead.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Union

from ..bert.features import BertBackend
from ..layout import (
    VoiceFolderError,
    looks_onnx,
    looks_plain,
    onnx_folder_files,
    plain_folder_files,
    speaker_prefix,
)
from ..model_files import explain_load_failure
from ..options import EngineOptions
from .build import BuildSettings, BuiltVoice, ModelPool, VoiceFiles, build_voice
from .exported import exported_onnx_dir
from .voice import NeuralVoice

if TYPE_CHECKING:
    from ..sources.base import Source
    from ..sources.cache import CacheDir

_LOGGER = logging.getLogger(__name__)

VoiceSource = Union["Source", str, "os.PathLike[str]"]
"""Where a voice is looked for: a `Source`, or a local folder by its path."""


def _local_root(src: VoiceSource) -> Path | None:
    if isinstance(src, (str, os.PathLike)):
        return Path(src)
    from ..sources.local import LocalSource

    if isinstance(src, LocalSource):
        return src.root
    return None


def _try_fetch(src: VoiceSource, prefix: str) -> Path | None:
    root = _local_root(src)
    if root is not None:
        path = root / prefix
        return path if path.is_dir() else None
    assert not isinstance(src, (str, os.PathLike))  # a local path has a root
    from ..sources import IncompleteSourceError, SourceUnavailableError

    try:
        return Path(src.fetch(prefix))
    except (SourceUnavailableError, IncompleteSourceError):
        raise  # unreachable store or an interrupted copy: say so, not "voice not found"
    except FileNotFoundError:
        return None


def _remote_plain_root(src: VoiceSource) -> Path | None:
    """A remote source whose root is a plain Style-Bert-VITS2 model folder, fetched."""
    if isinstance(src, (str, os.PathLike)) or not src.exists("config.json"):
        return None
    return _try_fetch(src, "")


@dataclass(frozen=True)
class VoiceLocation:
    kind: str  # "onnx" or "pytorch"
    directory: Path


def locate_voice(name: str, src: VoiceSource, device: str = "cpu") -> VoiceLocation:
    """Find voice `name` in `src` (a folder path or a `Source`); see the module doc."""
    root = _local_root(src)

    def onnx() -> VoiceLocation | None:
        d = _try_fetch(src, speaker_prefix(name, "onnx"))
        if d is not None:
            return VoiceLocation("onnx", d)
        if root is not None and root.is_dir() and looks_onnx(root):
            return VoiceLocation("onnx", root)
        return None

    def torch_() -> VoiceLocation | None:
        d = _try_fetch(src, speaker_prefix(name, "pytorch"))
        if d is not None:
            return VoiceLocation("pytorch", d)
        plain = root if root is not None else _remote_plain_root(src)
        if plain is not None and plain.is_dir() and looks_plain(plain):
            return VoiceLocation("pytorch", plain)
        return None

    order = (torch_, onnx) if str(device).startswith("cuda") else (onnx, torch_)
    for find in order:
        found = find()
        if found is not None:
            return found
    where = str(src) if isinstance(src, (str, os.PathLike)) else src.uri
    if root is not None and root.is_dir() and (root / "config.json").is_file():
        # A folder that is almost a voice: say what it lacks.
        plain_folder_files(root)
    raise VoiceFolderError(
        f"voice {name!r} not found in {where}: looked for {speaker_prefix(name, 'onnx')}/, "
        f"{speaker_prefix(name, 'pytorch')}/ and a model folder (config.json + *.safetensors + "
        "style_vectors.npy) at the root"
    )


def find_native(
    name: str, src: VoiceSource, device: str = "cpu", cache_dir: CacheDir = None
) -> VoiceFiles:
    """Voice `name` in `src` (a folder path or a `Source`) as `VoiceFiles`: hayakoe's ONNX
    form, or PyTorch weights (exported to ONNX into the cache when it is to run on the
    CPU)."""
    loc = locate_voice(name, src, device)
    if loc.kind == "onnx":
        return VoiceFiles(name, loc.directory, onnx=onnx_folder_files(loc.directory))
    plain = plain_folder_files(loc.directory)
    onnx = None
    if not str(device).startswith("cuda"):
        onnx = onnx_folder_files(exported_onnx_dir(name, plain, cache_dir))
    return VoiceFiles(
        name,
        loc.directory,
        onnx=onnx,
        checkpoint=plain.checkpoint,
        config=plain.config,
        style_vectors=plain.style_vectors,
    )


def load_neural_voice(
    name: str,
    src: VoiceSource,
    *,
    device: str = "cpu",
    bert: BertBackend,
    compile: bool = False,
    backend: str | None = None,
    cache_dir: CacheDir = None,
    options: EngineOptions | None = None,
) -> NeuralVoice:
    """Load voice `name` from `src` (a `Source` or a folder) for `device`: `find_native`,
    then the one builder (`engine.neural.build.build_voice`; int8 graphs still to be made
    are made now).

    `backend` forces "onnx" or "torch" (default: ONNX Runtime on CPU, PyTorch on CUDA);
    `compile` (PyTorch) uses torch.compile; `options` tunes threads, streaming windows,
    memory and precision (`EngineOptions`)."""
    if backend not in (None, "onnx", "torch"):
        raise ValueError(f"backend must be 'onnx' or 'torch', got {backend!r}")
    cuda = str(device).startswith("cuda")
    where = "cuda" if backend == "torch" or (backend is None and cuda) else "cpu"
    files = find_native(name, src, where, cache_dir)
    settings = BuildSettings(
        device=device,
        options=options or EngineOptions(),
        backend=backend,
        compile=compile,
        cache_dir=cache_dir,
    )
    return load_voice_files(files, bert, settings).voice


def load_voice_files(
    files: VoiceFiles,
    bert: BertBackend,
    settings: BuildSettings | None = None,
    models: ModelPool | None = None,
) -> BuiltVoice:
    """`build_voice(files, bert, settings, models)`, naming the damaged file when loading
    fails."""
    try:
        return build_voice(files, bert, settings, models)
    except (ImportError, FileNotFoundError, MemoryError):
        raise  # a missing file or module says so itself
    except Exception as exc:  # name the damaged file (read only now, on the error path)
        from ..int8.control import Cancelled

        if isinstance(exc, Cancelled):
            raise
        found = sorted(p for p in files.directory.rglob("*") if p.is_file())
        raise explain_load_failure(f"voice {files.name!r}", exc, found, files.directory) from exc
