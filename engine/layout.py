"""hayakoe's repository layout: the one module that knows where each file lives.

A voice root (the official Hugging Face repository, an S3 prefix, a local folder) holds::

    bert/tokenizer/                 tokenizer files (vocab.txt or tokenizer.json)
    onnx/bert/q8/bert_q8.onnx       BERT for CPUs (int8), ONNX Runtime
    onnx/bert/fp32/bert.onnx        BERT fp32 (optional, our export)
    pytorch/bert/fp32/              BERT for CUDA (an AutoModelForMaskedLM folder)
    onnx/speakers/<name>/           config.json, style_vectors.npy, synthesizer(_q8).onnx,
                                    duration_predictor.onnx (optional)
    pytorch/speakers/<name>/        config.json, style_vectors.npy, *.safetensors

A plain Style-Bert-VITS2 model folder (config.json, *.safetensors, style_vectors.npy) has the
files of a `pytorch/speakers/<name>/` folder. Everything else in the engine (and the server,
the commands, the benchmarks) imports these names; none spells a layout path itself. This
module imports nothing from the engine (a leaf), so any module may use it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .errors import EngineError

OFFICIAL_SOURCE = "hf://lemondouble/hayakoe"
"""Where official voices and the BERT come from unless told otherwise."""

Backend = Literal["onnx", "pytorch"]
"""A top-level folder of the layout: ONNX Runtime (CPU) or PyTorch (CUDA) files."""

BACKENDS: tuple[Backend, ...] = ("onnx", "pytorch")

# -- BERT ----------------------------------------------------------------------------------

BERT_TOKENIZER_PREFIX = "bert/tokenizer"
BERT_ONNX_Q8_PREFIX = "onnx/bert/q8"
BERT_ONNX_Q8_FILE = "bert_q8.onnx"
BERT_ONNX_FP32_PREFIX = "onnx/bert/fp32"
BERT_ONNX_FP32_FILE = "bert.onnx"
BERT_TORCH_PREFIX = "pytorch/bert/fp32"

Requirement = Sequence["str | Sequence[str]"]
"""Files a folder must hold: each entry a glob, or a sequence of alternatives (any one)."""

BERT_REQUIRED_FILES: dict[str, list[str | tuple[str, ...]]] = {
    BERT_TOKENIZER_PREFIX: ["tokenizer_config.json", ("vocab.txt", "tokenizer.json")],
    BERT_ONNX_Q8_PREFIX: [BERT_ONNX_Q8_FILE],
    BERT_TORCH_PREFIX: ["config.json", ("*.safetensors", "pytorch_model.bin")],
}
"""Files each BERT prefix must hold (entries as in `engine.sources.require_files`)."""

# -- speakers ------------------------------------------------------------------------------

CONFIG_FILE = "config.json"
STYLE_VECTORS_FILE = "style_vectors.npy"
CHECKPOINT_GLOB = "*.safetensors"
SYNTHESIZER_FILE = "synthesizer.onnx"
SYNTHESIZER_Q8_FILE = "synthesizer_q8.onnx"
SYNTHESIZER_FILES = (SYNTHESIZER_FILE, SYNTHESIZER_Q8_FILE)
"""Synthesizer graphs of an ONNX speaker folder, in the order they are preferred."""
DURATION_PREDICTOR_FILE = "duration_predictor.onnx"
INT8_SUBDIR = "int8"
"""Our addition inside an `onnx/speakers/<name>/` folder: the int8 graphs, their
fidelity report and stamp, written by `wyoming-hayakoe quantize` (hayakoe ignores it)."""

ONNX_SPEAKER_FILES: list[str | tuple[str, ...]] = [
    CONFIG_FILE,
    STYLE_VECTORS_FILE,
    SYNTHESIZER_FILES,
]
"""Files an `onnx/speakers/<name>/` folder must hold."""
PYTORCH_SPEAKER_FILES: list[str | tuple[str, ...]] = [
    CONFIG_FILE,
    STYLE_VECTORS_FILE,
    CHECKPOINT_GLOB,
]
"""Files a `pytorch/speakers/<name>/` folder (or a plain Style-Bert-VITS2 folder) must hold."""

_VOICE_NAME = re.compile(r"^[^/\\\x00-\x1f.][^/\\\x00-\x1f]*$")


def check_voice_name(name: str) -> str:
    """`name` if it can be a folder name (no '/', no '..', no control characters)."""
    if not isinstance(name, str) or not _VOICE_NAME.match(name) or len(name) > 200:
        raise ValueError(f"bad voice name {name!r}: it must be a single folder name")
    return name


def backend_for(device: str) -> Backend:
    """ "pytorch" for CUDA devices ("cuda", "cuda:1"), "onnx" for everything else
    (hayakoe's rule)."""
    text = str(device).strip().lower()
    if not text:
        raise ValueError("device must be 'cpu' or 'cuda'")
    return "pytorch" if text.startswith("cuda") else "onnx"


def speaker_prefix(name: str, backend: Backend) -> str:
    """`{onnx|pytorch}/speakers/<name>`: the folder of voice `name` for `backend`."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
    return f"{backend}/speakers/{check_voice_name(name)}"


def speaker_files(backend: Backend) -> list[str | tuple[str, ...]]:
    """Files a speaker folder must hold for `backend`."""
    return PYTORCH_SPEAKER_FILES if backend == "pytorch" else ONNX_SPEAKER_FILES


def bert_prefixes(backend: Backend) -> list[str]:
    """The BERT prefixes `backend` reads (tokenizer first)."""
    model = BERT_TORCH_PREFIX if backend == "pytorch" else BERT_ONNX_Q8_PREFIX
    return [BERT_TOKENIZER_PREFIX, model]


# -- folders on disk -----------------------------------------------------------------------


class VoiceFolderError(EngineError, FileNotFoundError):
    """A voice folder that lacks files (names the folder and what is missing)."""


@dataclass(frozen=True)
class PlainFolderFiles:
    """The files of a plain Style-Bert-VITS2 model folder (also hayakoe's pytorch layout)."""

    directory: Path
    """The folder itself."""
    config: Path
    """`config.json`."""
    checkpoint: Path
    """The newest `*.safetensors` (by mtime, as hayakoe picks)."""
    style_vectors: Path
    """`style_vectors.npy`."""


@dataclass(frozen=True)
class OnnxFolderFiles:
    """The files of hayakoe's `onnx/speakers/<name>/` folder."""

    directory: Path
    """The folder itself."""
    config: Path
    """`config.json`."""
    style_vectors: Path
    """`style_vectors.npy`."""
    synthesizer: Path
    """`synthesizer.onnx`, else `synthesizer_q8.onnx`."""
    duration_predictor: Path | None
    """`duration_predictor.onnx` when present (the deterministic duration path)."""


def newest_checkpoint(d: Path) -> Path | None:
    """The newest `*.safetensors` in `d` (mtime, then name), or None."""
    found = [p for p in d.glob(CHECKPOINT_GLOB) if p.is_file()]
    if not found:
        return None
    return max(found, key=lambda p: (p.stat().st_mtime, p.name))


def plain_folder_files(d: Path) -> PlainFolderFiles:
    """Files of a plain Style-Bert-VITS2 model folder (also hayakoe's pytorch layout)."""
    d = Path(d)
    if not d.is_dir():
        raise VoiceFolderError(f"voice folder {d} does not exist")
    missing = []
    config, style = d / CONFIG_FILE, d / STYLE_VECTORS_FILE
    if not config.is_file():
        missing.append(CONFIG_FILE)
    ckpt = newest_checkpoint(d)
    if ckpt is None:
        missing.append(CHECKPOINT_GLOB)
    if not style.is_file():
        missing.append(STYLE_VECTORS_FILE)
    if missing or ckpt is None:
        raise VoiceFolderError(f"voice folder {d} lacks {', '.join(missing)}")
    return PlainFolderFiles(d, config, ckpt, style)


def onnx_folder_files(d: Path) -> OnnxFolderFiles:
    """Files of hayakoe's `onnx/speakers/<name>/` folder."""
    d = Path(d)
    if not d.is_dir():
        raise VoiceFolderError(f"voice folder {d} does not exist")
    missing = []
    config, style = d / CONFIG_FILE, d / STYLE_VECTORS_FILE
    synth = next((d / n for n in SYNTHESIZER_FILES if (d / n).is_file()), None)
    if not config.is_file():
        missing.append(CONFIG_FILE)
    if not style.is_file():
        missing.append(STYLE_VECTORS_FILE)
    if synth is None:
        missing.append(SYNTHESIZER_FILE)
    if missing or synth is None:
        raise VoiceFolderError(f"voice folder {d} lacks {', '.join(missing)}")
    dp = d / DURATION_PREDICTOR_FILE
    return OnnxFolderFiles(d, config, style, synth, dp if dp.is_file() else None)


def looks_onnx(d: Path) -> bool:
    """`d` holds a synthesizer graph (an ONNX speaker folder)."""
    return any((d / n).is_file() for n in SYNTHESIZER_FILES)


def looks_plain(d: Path) -> bool:
    """`d` holds a config and a checkpoint (a plain model folder)."""
    return (d / CONFIG_FILE).is_file() and any(d.glob(CHECKPOINT_GLOB))
