"""Fetch ahead of time exactly the files one device's backend will read, into the cache.

This is what `TTS.pre_download` and `wyoming-hayakoe download` run (e.g. in a Docker build),
so that the running server needs no network and holds no credentials. Nothing here builds
a model or imports torch / onnxruntime: it only moves files and checks they are complete.

Per device (hayakoe's layout, see docs/sources.md):

| device | BERT prefixes                          | voice prefix                 |
| ------ | -------------------------------------- | ---------------------------- |
| cpu    | `bert/tokenizer`, `onnx/bert/q8`       | `onnx/speakers/<name>`       |
| cuda   | `bert/tokenizer`, `pytorch/bert/fp32`  | `pytorch/speakers/<name>`    |

A voice source that holds a plain Style-Bert-VITS2 folder (config.json + *.safetensors +
style_vectors.npy at its root) is fetched whole instead. Local sources are only checked.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from .openjtalk import EMBEDDED_VOICE_NAME
from .sources import (
    OFFICIAL_REPO,
    Source,
    SourceNotFoundError,
    SourceUnavailableError,
    cache_root,
    parse_source,
    require_files,
)

_LOGGER = logging.getLogger(__name__)

BERT_TOKENIZER = "bert/tokenizer"
ONNX_BERT = "onnx/bert/q8"
PYTORCH_BERT = "pytorch/bert/fp32"

Requirement = Sequence["str | Sequence[str]"]

REQUIRED_FILES: dict[str, list] = {
    BERT_TOKENIZER: ["tokenizer_config.json", ("vocab.txt", "tokenizer.json")],
    ONNX_BERT: ["bert_q8.onnx"],
    PYTORCH_BERT: ["config.json", ("*.safetensors", "pytorch_model.bin")],
}
"""Files each BERT prefix must hold (entries as in `require_files`)."""

ONNX_SPEAKER_FILES: list = ["config.json", "style_vectors.npy", ("synthesizer.onnx", "synthesizer_q8.onnx")]
PYTORCH_SPEAKER_FILES: list = ["config.json", "style_vectors.npy", "*.safetensors"]
PLAIN_SBV2_FILES: list = ["config.json", "style_vectors.npy", "*.safetensors"]

_VOICE_NAME = re.compile(r"^[^/\\\x00-\x1f.][^/\\\x00-\x1f]*$")


def backend_for(device: str) -> str:
    """"pytorch" for CUDA devices ("cuda", "cuda:1"), "onnx" for everything else (hayakoe's rule)."""
    text = str(device).strip().lower()
    if not text:
        raise ValueError("device must be 'cpu' or 'cuda'")
    return "pytorch" if text.startswith("cuda") else "onnx"


def bert_prefixes(device: str) -> list[str]:
    """The BERT prefixes `device`'s backend reads."""
    return [BERT_TOKENIZER, PYTORCH_BERT if backend_for(device) == "pytorch" else ONNX_BERT]


def speaker_prefix(name: str, device: str) -> str:
    """`{onnx|pytorch}/speakers/<name>` for `device`."""
    check_voice_name(name)
    return f"{backend_for(device)}/speakers/{name}"


def speaker_files(device: str) -> list:
    """Files a speaker folder must hold for `device`'s backend."""
    return PYTORCH_SPEAKER_FILES if backend_for(device) == "pytorch" else ONNX_SPEAKER_FILES


def check_voice_name(name: str) -> str:
    """`name` if it can be a folder name (no '/', no '..', no control characters)."""
    if not isinstance(name, str) or not _VOICE_NAME.match(name) or len(name) > 200:
        raise ValueError(f"bad voice name {name!r}: it must be a single folder name")
    return name


def fetch_bert(source: Source, device: str) -> list[Path]:
    """Fetch and check the tokenizer and the BERT model for `device`; return their folders."""
    folders = []
    for prefix in bert_prefixes(device):
        folder = source.fetch(prefix)
        require_files(folder, REQUIRED_FILES[prefix], source.uri, prefix)
        folders.append(folder)
    return folders


def fetch_voice(source: Source, name: str, device: str) -> Path:
    """Fetch and check the folder of voice `name` for `device` and return it.

    The order is the one `engine.voices.locate_voice` reads in: the device's own layout
    (`{backend}/speakers/<name>`), then the other backend's (the loader converts it), then a
    plain Style-Bert-VITS2 model at the source's root (config.json there). Only the first
    one present is fetched. An unreachable store is reported as such, never as "not found"."""
    preferred = speaker_prefix(name, device)
    other_device = "cpu" if backend_for(device) == "pytorch" else "cuda"
    first_error: SourceNotFoundError | None = None
    for prefix, dev in ((preferred, device), (speaker_prefix(name, other_device), other_device)):
        try:
            folder = source.fetch(prefix)
        except SourceNotFoundError as exc:
            first_error = first_error or exc
            continue
        if prefix != preferred:
            _LOGGER.info("%s: no %s/, using %s/ (converted when loaded)", source.uri, preferred, prefix)
        require_files(folder, speaker_files(dev), source.uri, prefix)
        return folder
    try:
        plain = source.exists("config.json")
    except SourceNotFoundError:
        plain = False
    if plain:
        folder = source.fetch("")
        require_files(folder, PLAIN_SBV2_FILES, source.uri, "")
        return folder
    if isinstance(first_error, SourceUnavailableError):
        raise first_error
    raise SourceNotFoundError(
        source.uri,
        preferred,
        f"the source has no {preferred}/ nor {speaker_prefix(name, other_device)}/ (hayakoe "
        "layout), and no Style-Bert-VITS2 model folder (config.json, *.safetensors, "
        "style_vectors.npy) at its root",
    ) from first_error


def pre_download(
    voices: Iterable[tuple[str, str | None]],
    *,
    bert_source: str = OFFICIAL_REPO,
    device: str = "cpu",
    cache_dir: str | os.PathLike[str] | None = None,
    token: str | None = None,
) -> list[Path]:
    """Fetch the BERT files and every voice `(name, source or None)` that `device` needs.

    `None` as a voice's source means hayakoe's official repository; the embedded OpenJTalk
    voice (`EMBEDDED_VOICE_NAME`) needs nothing and is skipped (when it is the only voice,
    nothing is fetched; an empty `voices` fetches the BERT alone). Returns the local
    folders (BERT folders first, then one per voice, in order). Local sources are checked,
    not copied. Afterwards the same fetches succeed with the network gone."""
    voices = list(voices)
    wanted = []
    for name, source in voices:
        if name == EMBEDDED_VOICE_NAME and source is None:
            _LOGGER.info("Voice %s is embedded: nothing to download", name)
            continue
        wanted.append((check_voice_name(name), source))
    only_embedded = bool(voices) and not wanted
    voices = wanted
    backend = backend_for(device)
    start = time.monotonic()
    _LOGGER.info(
        "Fetching files for device %s (%s backend) into %s", device, backend, cache_root(cache_dir)
    )
    if only_embedded:
        return []  # the BERT serves neural voices only
    bert = parse_source(bert_source, cache_dir=cache_dir, token=token)
    folders = fetch_bert(bert, device)
    _LOGGER.info("BERT ready from %s", bert.uri)
    for name, source in voices:
        src = parse_source(source or OFFICIAL_REPO, cache_dir=cache_dir, token=token)
        folder = fetch_voice(src, name, device)
        where = "in place" if getattr(src, "is_local", False) else "cached"
        _LOGGER.info("Voice %s ready from %s (%s: %s)", name, src.uri, where, folder)
        folders.append(folder)
    _LOGGER.info("All files for %s ready (%.1f s)", device, time.monotonic() - start)
    return folders
