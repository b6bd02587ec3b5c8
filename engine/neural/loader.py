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

import dataclasses
import hashlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..bert.features import BertBackend
from ..layout import (
    INT8_SUBDIR,
    OnnxFolderFiles,
    PlainFolderFiles,
    VoiceFolderError,
    looks_onnx,
    looks_plain,
    onnx_folder_files,
    plain_folder_files,
    speaker_prefix,
)
from ..model_files import explain_load_failure
from ..options import EngineOptions
from ..synth.common import SynthBackend
from .config import load_config
from .pending_int8 import PendingInt8
from .voice import NeuralVoice

if TYPE_CHECKING:
    from ..synth.decoder_split import SplitOnnxSynthesizer
    from ..synth.quantize import Int8Graphs

_LOGGER = logging.getLogger(__name__)


def _local_root(src: Any) -> Path | None:
    if isinstance(src, (str, os.PathLike)):
        return Path(src)
    if type(src).__name__ == "LocalSource":
        return Path(src.root)
    return None


def _try_fetch(src: Any, prefix: str) -> Path | None:
    root = _local_root(src)
    if root is not None:
        path = root / prefix
        return path if path.is_dir() else None
    from ..sources import IncompleteSourceError, SourceUnavailableError

    try:
        return Path(src.fetch(prefix))
    except (SourceUnavailableError, IncompleteSourceError):
        raise  # unreachable store or an interrupted copy: say so, not "voice not found"
    except FileNotFoundError:
        return None


def _remote_plain_root(src: Any) -> Path | None:
    """A remote source whose root is a plain Style-Bert-VITS2 model folder, fetched."""
    exists = getattr(src, "exists", None)
    if exists is None or not exists("config.json"):
        return None
    return _try_fetch(src, "")


@dataclass(frozen=True)
class VoiceLocation:
    kind: str  # "onnx" or "pytorch"
    directory: Path


def locate_voice(name: str, src: Any, device: str = "cpu") -> VoiceLocation:
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
    where = getattr(src, "uri", None) or str(src)
    if root is not None and root.is_dir() and (root / "config.json").is_file():
        # A folder that is almost a voice: say what it lacks.
        plain_folder_files(root)
    raise VoiceFolderError(
        f"voice {name!r} not found in {where}: looked for {speaker_prefix(name, 'onnx')}/, "
        f"{speaker_prefix(name, 'pytorch')}/ and a model folder (config.json + *.safetensors + "
        "style_vectors.npy) at the root"
    )


def _export_cache_dir(name: str, files: PlainFolderFiles, cache_dir: Any) -> Path:
    from ..sources.cache import cache_root

    h = hashlib.sha256()
    for p in (files.checkpoint, files.config):
        st = p.stat()
        h.update(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}|".encode())
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return Path(cache_root(cache_dir)) / "exported" / f"{safe}-{h.hexdigest()[:16]}"


def exported_onnx_dir(name: str, files: PlainFolderFiles, cache_dir: Any = None) -> Path:
    """ONNX export of a PyTorch voice in the cache (made on first use; needs PyTorch)."""
    out = _export_cache_dir(name, files, cache_dir)
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
    _LOGGER.info("Exporting %s to ONNX in %s (once)", files.checkpoint, out)
    export_model_dir(files.config, files.checkpoint, files.style_vectors, out)
    return out


def load_neural_voice(
    name: str,
    src: Any,
    *,
    device: str = "cpu",
    bert: BertBackend,
    compile: bool = False,
    backend: str | None = None,
    cache_dir: Any = None,
    options: EngineOptions | None = None,
    on_pending_int8: Callable[[PendingInt8], None] | None = None,
) -> NeuralVoice:
    """Load voice `name` from `src` (a `Source` or a folder) for `device`.

    `backend` forces "onnx" or "torch" (default: ONNX Runtime on CPU, PyTorch on CUDA);
    `compile` (PyTorch) uses torch.compile; `options` tunes threads, streaming windows and
    memory (`EngineOptions`). With `on_pending_int8` and `options.quantize_in_background`,
    int8 graphs that would be made now are not: the voice comes back on fp32 and
    `on_pending_int8` gets what making them later needs (`PendingInt8`); without it, the
    load waits for them."""
    options = options or EngineOptions()

    cuda = str(device).startswith("cuda")
    if backend is None:
        backend = "torch" if cuda else "onnx"
    if backend not in ("onnx", "torch"):
        raise ValueError(f"backend must be 'onnx' or 'torch', got {backend!r}")
    loc = locate_voice(name, src, "cuda" if backend == "torch" else "cpu")
    defer = on_pending_int8 is not None and options.quantize_in_background
    pending: list[PendingInt8] = []
    later = pending if defer else None
    try:
        voice = _load_located(name, loc, backend, device, bert, compile, cache_dir, options, later)
    except (ImportError, FileNotFoundError, MemoryError):
        raise  # a missing file or module says so itself
    except Exception as exc:  # name the damaged file (read only now, on the error path)
        files = sorted(p for p in loc.directory.rglob("*") if p.is_file())
        raise explain_load_failure(f"voice {name!r}", exc, files, loc.directory) from exc
    for job in pending:
        job.voice = voice
        if on_pending_int8 is not None:
            on_pending_int8(job)
    return voice


def _load_located(
    name: str,
    loc: VoiceLocation,
    backend: str,
    device: str,
    bert: BertBackend,
    compile: bool,
    cache_dir: Any,
    options: EngineOptions,
    pending: list[PendingInt8] | None = None,
) -> NeuralVoice:
    cuda = str(device).startswith("cuda")
    if loc.kind == "onnx":
        files = onnx_folder_files(loc.directory)
        if backend == "torch":
            _LOGGER.warning("Voice %s has only ONNX files: running it on ONNX Runtime (CPU)", name)
        synth = _onnx_backend(
            files, options, name=name, bert=bert, cache_dir=cache_dir, pending=pending
        )
        config_path, style_path = files.config, files.style_vectors
    else:
        plain = plain_folder_files(loc.directory)
        config_path, style_path = plain.config, plain.style_vectors
        if backend == "torch":
            from ..synth.torch_backend import TorchSynthesizer

            synth = TorchSynthesizer(
                load_config(plain.config),
                plain.checkpoint,
                device=device if cuda else "cpu",
                compile=compile,
            )
        else:
            out = exported_onnx_dir(name, plain, cache_dir)
            synth = _onnx_backend(
                onnx_folder_files(out),
                options,
                name=name,
                bert=bert,
                cache_dir=cache_dir,
                pending=pending,
            )
    _LOGGER.info("Voice %s: %s from %s", name, synth.kind, loc.directory)
    return NeuralVoice.from_files(
        name,
        config_path,
        style_path,
        synth,
        bert,
        source=str(loc.directory),
        first_window=options.first_window,
        overlap=options.overlap,
    )


def _split_backend(
    files: OnnxFolderFiles,
    options: EngineOptions,
    cache_dir: Any = None,
    decoder: Path | None = None,
    precision: str = "fp32",
    front: Path | None = None,
) -> SplitOnnxSynthesizer:
    """The synthesizer cut at the decoder (sub-sentence streaming), with `decoder` and
    `front` (the int8 graphs) instead of the fp32 ones when given."""
    from ..synth.decoder_split import SplitOnnxSynthesizer
    from ..synth.windowed import DecoderGeometry

    cfg = load_config(files.config)
    return SplitOnnxSynthesizer(
        files.synthesizer,
        files.duration_predictor,
        inter_channels=cfg.model.inter_channels,
        hop_length=cfg.hop_length,
        sample_rate=cfg.sample_rate,
        threads=options.threads,
        geometry=DecoderGeometry.from_config(dataclasses.asdict(cfg.model)),
        conv2d=options.conv2d,
        release_memory=options.release_memory,
        cache_dir=cache_dir,
        decoder=decoder,
        front=front,
        precision=precision,
    )


def voice_spec(name: str, files: OnnxFolderFiles) -> Any:
    """What int8 calibration needs to know of a voice (`engine.synth.quantize.VoiceSpec`)."""
    import numpy as np

    from ..synth.quantize import VoiceSpec

    cfg = load_config(files.config)
    vectors = np.load(files.style_vectors, allow_pickle=False).astype(np.float32)
    return VoiceSpec(name, vectors, dict(cfg.data.style2id), max(1, cfg.data.n_speakers))


def _with_precision(
    files: OnnxFolderFiles,
    options: EngineOptions,
    *,
    name: str,
    bert: Any,
    cache_dir: Any,
    pending: list[PendingInt8] | None = None,
) -> SynthBackend:
    """The voice cut at the decoder, on the decoder `options.precision` picks
    (`engine.synth.precision`; the choice and its reason are logged). With `pending` (a list
    to append to), int8 graphs still to be made are left for later (`PendingInt8`)."""
    from ..synth.precision import cache_dir_for, choose_precision, gate_thresholds

    cfg = load_config(files.config)
    thresholds = (
        gate_thresholds(options.int8_min_snr_db) if options.int8_min_snr_db is not None else None
    )
    spec = voice_spec(name, files)
    choice = choose_precision(
        options.precision,
        name=name,
        synthesizer=files.synthesizer,
        fp32_synth=lambda: _split_backend(files, options, cache_dir),
        bert=bert,
        voice=spec,
        decoder_channels=cfg.model.upsample_initial_channel,
        baked_dirs=[files.directory / INT8_SUBDIR],
        cache_dir=cache_dir,
        threads=options.threads,
        thresholds=thresholds,
        defer=pending is not None,
    )
    _LOGGER.info("Voice %s runs %s: %s", name, choice.precision, choice.reason)
    if choice.pending and pending is not None:

        def fp32_synth(threads: int | None) -> SplitOnnxSynthesizer:
            few = dataclasses.replace(options, threads=threads, precision="fp32")
            return _split_backend(files, few, cache_dir)

        def int8_synth(graphs: Int8Graphs) -> SynthBackend:
            return _split_backend(files, options, cache_dir, graphs.decoder, "int8", graphs.front)

        pending.append(
            PendingInt8(
                name=name,
                precision=options.precision,
                synthesizer=files.synthesizer,
                out_dir=cache_dir_for(name, files.synthesizer, cache_dir),
                bert=bert,
                spec=spec,
                fp32_synth=fp32_synth,
                int8_synth=int8_synth,
                thresholds=thresholds,
            )
        )
    if choice.precision == "int8" and choice.graphs is not None:
        graphs = choice.graphs
        return _split_backend(files, options, cache_dir, graphs.decoder, "int8", graphs.front)
    return _split_backend(files, options, cache_dir)


def _onnx_backend(
    files: OnnxFolderFiles,
    options: EngineOptions,
    *,
    name: str = "",
    bert: Any = None,
    cache_dir: Any = None,
    pending: list[PendingInt8] | None = None,
) -> SynthBackend:
    from ..synth.onnx_backend import OnnxSynthesizer

    cfg = load_config(files.config)
    try:  # cut at the decoder: sub-sentence streaming (engine.synth.decoder_split)
        if options.precision == "fp32" or bert is None:
            return _split_backend(files, options, cache_dir)
        return _with_precision(
            files,
            options,
            name=name or files.directory.name,
            bert=bert,
            cache_dir=cache_dir,
            pending=pending,
        )
    except (ImportError, OSError, ValueError) as exc:  # SplitError is a ValueError
        _LOGGER.warning("%s: whole-sentence decoding only (%s)", files.synthesizer, exc)
    return OnnxSynthesizer(
        files.synthesizer,
        files.duration_predictor,
        inter_channels=cfg.model.inter_channels,
        hop_length=cfg.hop_length,
        sample_rate=cfg.sample_rate,
        threads=options.threads,
    )
