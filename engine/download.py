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
import time
from collections.abc import Iterable
from pathlib import Path

from .aivm.files import is_aivm_source, local_file, split_selector
from .aivm.manifest import read_metadata
from .layout import (
    BERT_REQUIRED_FILES,
    OFFICIAL_SOURCE,
    PYTORCH_SPEAKER_FILES,
    backend_for,
    bert_prefixes,
    check_voice_name,
    speaker_files,
    speaker_prefix,
)
from .openjtalk import EMBEDDED_VOICE_NAME
from .sources import (
    Source,
    SourceNotFoundError,
    SourceUnavailableError,
    cache_root,
    parse_source,
    require_files,
)

_LOGGER = logging.getLogger(__name__)


def fetch_bert(source: Source, device: str) -> list[Path]:
    """Fetch and check the tokenizer and the BERT model for `device`; return their folders."""
    folders = []
    for prefix in bert_prefixes(backend_for(device)):
        folder = source.fetch(prefix)
        require_files(folder, BERT_REQUIRED_FILES[prefix], source.uri, prefix)
        folders.append(folder)
    return folders


def fetch_voice(source: Source, name: str, device: str) -> Path:
    """Fetch and check the folder of voice `name` for `device` and return it.

    The order is the one `engine.neural.loader.locate_voice` reads in: the device's own layout
    (`{backend}/speakers/<name>`), then the other backend's (the loader converts it), then a
    plain Style-Bert-VITS2 model at the source's root (config.json there). Only the first
    one present is fetched. An unreachable store is reported as such, never as "not found"."""
    preferred = speaker_prefix(name, backend_for(device))
    other_device = "cpu" if backend_for(device) == "pytorch" else "cuda"
    first_error: SourceNotFoundError | None = None
    for prefix, dev in (
        (preferred, device),
        (speaker_prefix(name, backend_for(other_device)), other_device),
    ):
        try:
            folder = source.fetch(prefix)
        except SourceNotFoundError as exc:
            first_error = first_error or exc
            continue
        if prefix != preferred:
            _LOGGER.info(
                "%s: no %s/, using %s/ (converted when loaded)", source.uri, preferred, prefix
            )
        require_files(folder, speaker_files(backend_for(dev)), source.uri, prefix)
        return folder
    try:
        plain = source.exists("config.json")
    except SourceNotFoundError:
        plain = False
    if plain:
        folder = source.fetch("")
        require_files(folder, PYTORCH_SPEAKER_FILES, source.uri, "")
        return folder
    if isinstance(first_error, SourceUnavailableError):
        raise first_error
    raise SourceNotFoundError(
        source.uri,
        preferred,
        f"the source has no {preferred}/ nor {speaker_prefix(name, backend_for(other_device))}/ "
        "(hayakoe "
        "layout), and no Style-Bert-VITS2 model folder (config.json, *.safetensors, "
        "style_vectors.npy) at its root",
    ) from first_error


def pre_download(
    voices: Iterable[tuple[str, str | None]],
    *,
    bert_source: str = OFFICIAL_SOURCE,
    device: str = "cpu",
    cache_dir: str | os.PathLike[str] | None = None,
    token: str | None = None,
    offline: bool = False,
) -> list[Path]:
    """Fetch the BERT files and every voice `(name, source or None)` that `device` needs.

    `None` as a voice's source means hayakoe's official repository; the embedded OpenJTalk
    voice (`EMBEDDED_VOICE_NAME`) needs nothing and is skipped (when it is the only voice,
    nothing is fetched; an empty `voices` fetches the BERT alone). Returns the local
    folders (BERT folders first, then one per voice, in order). Local sources are checked,
    not copied. Afterwards the same fetches succeed with the network gone. `offline`
    (`EngineOptions.offline`) only checks the cache."""
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
    bert = parse_source(bert_source, cache_dir=cache_dir, token=token, offline=offline)
    folders = fetch_bert(bert, device)
    _LOGGER.info("BERT ready from %s", bert.uri)
    for name, source in voices:
        if is_aivm_source(source):  # one AivisHub file (engine.aivm)
            path = local_file(
                split_selector(source or "")[0], cache_dir=cache_dir, token=token, offline=offline
            )
            read_metadata(path)  # a damaged file fails here, not at the next start
            _LOGGER.info("Voice %s ready: %s", name, path)
            folders.append(path)
            continue
        src = parse_source(
            source or OFFICIAL_SOURCE, cache_dir=cache_dir, token=token, offline=offline
        )
        folder = fetch_voice(src, name, device)
        where = "in place" if src.is_local else "cached"
        _LOGGER.info("Voice %s ready from %s (%s: %s)", name, src.uri, where, folder)
        folders.append(folder)
    _LOGGER.info("All files for %s ready (%.1f s)", device, time.monotonic() - start)
    return folders
