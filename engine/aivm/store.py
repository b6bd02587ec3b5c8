"""An AivisHub file as a voice folder in the cache, made once per file version.

`voice_folder(meta)` gives `<cache>/aivm/<uuid>-<version>-<digest>/` holding hayakoe's
synthesizer files (`config.json`, `style_vectors.npy`, `synthesizer.onnx`, and for an `.aivm`
also `duration_predictor.onnx`) and `aivm.json`, the stamp: manifest uuid and version, the
source file (path, size, mtime) and this format's number. Every later derived file (the
split graphs, int8 graphs) is made from the folder's `synthesizer.onnx` and so sits under
that uuid and version too. The user's file is only read, never written.

- `.aivmx`: the graph adapted by `engine.aivm.onnx_adapter` (no PyTorch needed);
- `.aivm`: the Safetensors body loaded into our PyTorch network and exported like a plain
  model folder (`engine.synth.export`; needs PyTorch, as plain folders do).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..json_types import JsonObject
from ..layout import CONFIG_FILE, STYLE_VECTORS_FILE, SYNTHESIZER_FILE
from .manifest import AivmFileError, AivmMetadata, read_metadata, read_safetensors_header

if TYPE_CHECKING:
    from ..sources.cache import CacheDir

_LOGGER = logging.getLogger(__name__)

CACHE_SUBDIR = "aivm"
STAMP_FILE = "aivm.json"
FORMAT = 1  # bump when what is written here changes


def _stamp(meta: AivmMetadata) -> JsonObject:
    st = meta.path.stat()
    return {
        "format": FORMAT,
        "uuid": meta.manifest.uuid,
        "version": meta.manifest.version,
        "kind": meta.kind,
        "source": str(meta.path.resolve()),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
    }


def folder_for(meta: AivmMetadata, cache_dir: CacheDir = None) -> Path:
    """Where the voice folder of `meta`'s file goes."""
    from ..sources.cache import cache_root, path_digest

    digest = path_digest(meta.path)[:12]
    safe_version = "".join(c if c.isalnum() or c in "-_." else "_" for c in meta.manifest.version)
    return cache_root(cache_dir) / CACHE_SUBDIR / f"{meta.manifest.uuid}-{safe_version}-{digest}"


def _read_stamp(folder: Path) -> JsonObject | None:
    try:
        data = json.loads((folder / STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def bert_width_of_aivm(path: Path) -> int:
    """The BERT width an `.aivm`'s weights take (`enc_p.bert_proj.weight` [h, width, 1])."""
    header, _ = read_safetensors_header(path)
    entry = header.get("enc_p.bert_proj.weight")
    shape = entry.get("shape", []) if isinstance(entry, dict) else None
    if not isinstance(shape, list) or len(shape) != 3:
        raise AivmFileError(path, "no enc_p.bert_proj.weight tensor (not a JP-Extra checkpoint)")
    width = shape[1]
    if not isinstance(width, (int, float, str)):
        raise AivmFileError(path, f"enc_p.bert_proj.weight: bad shape {shape!r}")
    return int(width)


def _write_common(meta: AivmMetadata, folder: Path, bert_channels: int) -> None:
    config = meta.model_config()
    config = replace(config, model=replace(config.model, bert_channels=bert_channels))
    raw = json.dumps(config.to_dict(), ensure_ascii=False, indent=1)
    (folder / CONFIG_FILE).write_text(raw, "utf-8")
    np.save(folder / STYLE_VECTORS_FILE, meta.style_vectors)


def _build_aivmx(meta: AivmMetadata, folder: Path, stamp: JsonObject) -> None:
    import onnx
    from google.protobuf.message import DecodeError

    from .onnx_adapter import adapt_graph

    try:
        model = onnx.load(str(meta.path), load_external_data=False)
    except (DecodeError, ValueError, OSError) as exc:
        raise AivmFileError(
            meta.path, f"the ONNX graph cannot be read (corrupted?): {exc}"
        ) from None
    adapted = adapt_graph(
        model,
        meta.path,
        hop_length=meta.config.hop_length,
        style_dim=meta.config.style_dim,
        stamp={
            "aivm_uuid": meta.manifest.uuid,
            "aivm_version": meta.manifest.version,
            "aivm_source": str(meta.path),
        },
    )
    del model
    onnx.save(adapted.model, str(folder / SYNTHESIZER_FILE))
    _write_common(meta, folder, adapted.bert_channels)


def _build_aivm(meta: AivmMetadata, folder: Path) -> None:
    try:
        from ..synth.export import export_model_dir
    except ImportError as exc:
        raise AivmFileError(
            meta.path,
            f".aivm files hold PyTorch weights and need PyTorch to be converted once ({exc}); "
            "use the .aivmx of the same voice, or install the torch extra",
        ) from exc
    _write_common(meta, folder, bert_width_of_aivm(meta.path))
    export_model_dir(
        folder / CONFIG_FILE, meta.path, folder / STYLE_VECTORS_FILE, folder / ".export"
    )
    for f in (folder / ".export").iterdir():
        f.replace(folder / f.name)
    (folder / ".export").rmdir()


def voice_folder(meta: AivmMetadata, cache_dir: CacheDir = None) -> Path:
    """The cached voice folder of `meta`'s file (see the module doc), made when missing or
    when the file changed."""
    out = folder_for(meta, cache_dir)
    want = _stamp(meta)
    if _read_stamp(out) == want and (out / SYNTHESIZER_FILE).is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        _LOGGER.info(
            "%s: preparing %s %s (%s) once into %s",
            meta.path,
            meta.manifest.name,
            meta.manifest.version,
            meta.kind,
            out,
        )
        if meta.kind == "aivmx":
            _build_aivmx(meta, tmp, want)
        else:
            _build_aivm(meta, tmp)
        (tmp / STAMP_FILE).write_text(json.dumps(want), encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def cache_entries(meta: AivmMetadata, cache_dir: CacheDir = None) -> list[Path]:
    """Every folder made in the cache from `meta`'s file that exists now: its voice folder,
    and what was derived from its graphs (split graphs, ONNX Runtime's optimised graphs,
    int8 graphs), found by the digest of each graph's path as those caches name them. For
    removing a voice with everything it left behind."""
    from ..sources.cache import DERIVED_SUBDIR, INT8_SUBDIR, cache_root, path_digest

    root = cache_root(cache_dir)
    found: list[Path] = []
    todo = [folder_for(meta, cache_dir)]
    while todo:
        folder = todo.pop()
        if folder in found or not folder.is_dir():
            continue
        found.append(folder)
        for graph in sorted(folder.glob("*.onnx")):
            digest = path_digest(graph)
            for sub in (DERIVED_SUBDIR, INT8_SUBDIR):
                todo.extend(sorted((root / sub).glob(f"*-{digest}")))
    return found


def forget_cache(file: Path, cache_dir: CacheDir = None) -> list[Path]:
    """Remove every folder the cache holds for AivisHub file `file` (`cache_entries`: its
    voice folder and what was derived from its graphs, and a half-made voice folder that a
    killed process left), the file itself left alone; the public way to forget a voice's
    cache before its file is deleted. A file that cannot be read has nothing found for it.
    Returns the folders removed."""
    try:
        meta = read_metadata(file)
    except (OSError, AivmFileError) as exc:
        _LOGGER.debug("%s: no cache to forget (%s)", file, exc)
        return []
    own = folder_for(meta, cache_dir)
    half_made = sorted(own.parent.glob(f".{own.name}.*")) if own.parent.is_dir() else []
    entries = cache_entries(meta, cache_dir) + half_made
    for folder in entries:
        shutil.rmtree(folder, ignore_errors=True)
    return entries
