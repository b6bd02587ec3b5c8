"""AivisHub files as voices: find them, name them, load them.

    voices_of_file("hf://user/repo/voice.aivmx", name="mine")  # [(voice name, source), ...]
    voices_in_dir("/share/aivis")                              # every .aivmx/.aivm there
    load_aivm_voice("mine", "voice.aivmx#speaker=1", bert=bert)  # -> NeuralVoice

A file is reached through the sources (`engine.sources`): a path, `file://`, `hf://` or
`s3://` naming the file itself, fetched into the one cache (offline: the cache only). A
model with several speakers is one voice per speaker; the source of each names its speaker
with `#speaker=<local_id>` after the file.

The voice runs on the same machinery as a native ONNX voice (`engine.neural.loader`):
split at the decoder for windowed streaming, `precision` with the int8 graphs and their
fidelity gate (shared by every speaker of one file). Its description says the model, the
speaker, the creators and the license; the start log says them too.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..bert.features import BertBackend
from ..layout import onnx_folder_files
from ..neural.build import VoiceFiles, VoiceMeta
from ..neural.voice import NeuralVoice
from ..options import EngineOptions
from ..voice_config import load_config
from .files import SPEAKER_SELECTOR, is_aivm_source, local_file, split_selector, with_speaker
from .manifest import (
    SUFFIXES,
    AivmFileError,
    AivmMetadata,
    AivmSpeaker,
    license_summary,
    read_metadata,
)
from .naming import Candidate, unique_names, voice_name

if TYPE_CHECKING:
    from ..sources.cache import CacheDir

__all__ = [
    "SPEAKER_SELECTOR",
    "describe_aivm",
    "is_aivm_source",
    "load_aivm_voice",
    "local_file",
    "split_selector",
    "voices_in_dir",
    "voices_of_file",
]

_LOGGER = logging.getLogger(__name__)

DEFAULT_STYLES = ("Neutral", "ノーマル")
HUB_URL = "https://hub.aivis-project.com/aivm-models/{uuid}"


def _pick(meta: AivmMetadata, local_id: int | None) -> AivmSpeaker:
    speakers = meta.manifest.speakers
    if local_id is None:
        if len(speakers) == 1:
            return speakers[0]
        listing = ", ".join(f"{s.name} (#speaker={s.local_id})" for s in speakers)
        raise AivmFileError(
            meta.path, f"the model has {len(speakers)} speakers; name one: {listing}"
        )
    found = next((s for s in speakers if s.local_id == local_id), None)
    if found is None:
        raise AivmFileError(meta.path, f"the manifest has no speaker with local_id {local_id}")
    return found


def voices_of_file(
    source: str,
    name: str | None = None,
    *,
    cache_dir: CacheDir = None,
    token: str | None = None,
    offline: bool = False,
) -> list[tuple[str, str]]:
    """(voice name, source) for each speaker of the file `source` names (one, when the source
    names a speaker). `name`: the name given to the file (else the manifest's slug)."""
    uri, local_id = split_selector(source)
    meta = read_metadata(local_file(uri, cache_dir=cache_dir, token=token, offline=offline))
    if local_id is not None:
        return [(name or voice_name(meta.manifest, _pick(meta, local_id)), source)]
    many = len(meta.manifest.speakers) > 1
    return [
        (voice_name(meta.manifest, sp, name), with_speaker(uri, sp.local_id) if many else uri)
        for sp in meta.manifest.speakers
    ]


def voices_in_dir(
    directory: str | Path, *, taken: Sequence[str] = ()
) -> tuple[list[tuple[str, str]], list[AivmFileError]]:
    """(voices, bad files) of every `.aivmx`/`.aivm` in `directory` (not recursive, hidden
    files skipped): one voice per speaker, named from the manifests (`engine.aivm.naming`),
    distinct from each other and from `taken`. A bad file is logged and returned, never
    raised, so the other files still serve."""
    folder = Path(directory)
    if not folder.is_dir():
        raise NotADirectoryError(f"voice folder {folder} does not exist or is not a folder")
    files = sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in SUFFIXES
    )
    candidates: list[Candidate] = []
    sources: list[str] = []
    bad: list[AivmFileError] = []
    for path in files:
        try:
            meta = read_metadata(path)
        except AivmFileError as exc:
            _LOGGER.error("AivisHub file left out: %s", exc)
            bad.append(exc)
            continue
        many = len(meta.manifest.speakers) > 1
        for sp in meta.manifest.speakers:
            candidates.append(
                Candidate(
                    voice_name(meta.manifest, sp),
                    meta.manifest.uuid,
                    meta.manifest.version,
                    path.name,
                    sp.local_id,
                )
            )
            sources.append(with_speaker(str(path), sp.local_id) if many else str(path))
    if not files:
        _LOGGER.warning("Voice folder %s holds no .aivmx or .aivm file", folder)
    names = unique_names(candidates, taken)
    return list(zip(names, sources)), bad


def _describe(meta: AivmMetadata, speaker: AivmSpeaker) -> str:
    m = meta.manifest
    who = ", ".join(m.creators) or "unknown creators"
    model = m.name if len(m.speakers) == 1 else f"{m.name} / {speaker.name}"
    return f"{model} (AivisHub {m.version}, by {who}; license: {license_summary(m.license)})"


def describe_aivm(
    name: str,
    source: str,
    *,
    device: str = "cpu",
    cache_dir: CacheDir = None,
    token: str | None = None,
    offline: bool = False,
) -> VoiceFiles:
    """Voice `name` from the AivisHub file (and speaker) `source` names, as `VoiceFiles`
    for the one builder (`engine.neural.build`): the cached ONNX folder of the file, its
    model key (every speaker of a file shares it: one set of sessions, one set of int8
    graphs), the speaker pinned, its styles and what the manifest says."""
    uri, local_id = split_selector(source)
    path = local_file(uri, cache_dir=cache_dir, token=token, offline=offline)
    meta = read_metadata(path)
    speaker = _pick(meta, local_id)
    if str(device).startswith("cuda"):
        _LOGGER.warning("Voice %s is an AivisHub file: it runs on ONNX Runtime (CPU)", name)
    from .store import voice_folder

    folder = voice_folder(meta, cache_dir)
    files = onnx_folder_files(folder)
    model_cfg = load_config(files.config)
    config = dataclasses.replace(meta.speaker_config(speaker), model=model_cfg.model)
    styles = [s.name for s in speaker.styles]
    m = meta.manifest
    _LOGGER.info(
        "Voice %s: %s, styles %s, from %s; license: %s",
        name,
        _describe(meta, speaker),
        ", ".join(styles),
        path,
        license_summary(m.license),
    )
    return VoiceFiles(
        name,
        path,
        onnx=files,
        model_key=f"aivm-{m.uuid}-{m.version}",
        speaker_id=speaker.local_id if max(1, meta.config.data.n_speakers) > 1 else None,
        voice_config=config,
        style_array=meta.style_vectors,
        meta=VoiceMeta(
            description=_describe(meta, speaker),
            default_style=next((s for s in DEFAULT_STYLES if s in styles), styles[0]),
            license=m.license,
            creators=tuple(m.creators),
            version=m.version,
            attribution_name=", ".join(m.creators) or m.name,
            attribution_url=HUB_URL.format(uuid=m.uuid),
            speaker_uuid=speaker.uuid,
            style_ids=speaker.style2id,
        ),
        onnx_only=True,
    )


def load_aivm_voice(
    name: str,
    source: str,
    *,
    bert: BertBackend,
    device: str = "cpu",
    cache_dir: CacheDir = None,
    token: str | None = None,
    options: EngineOptions | None = None,
) -> NeuralVoice:
    """Voice `name` from the AivisHub file (and speaker) `source` names: `describe_aivm`,
    then the one builder (int8 graphs still to be made are made now)."""
    from ..neural.build import BuildSettings
    from ..neural.loader import load_voice_files

    options = options or EngineOptions()
    files = describe_aivm(
        name, source, device=device, cache_dir=cache_dir, token=token, offline=options.offline
    )
    built = load_voice_files(files, bert, BuildSettings(options=options, cache_dir=cache_dir))
    voice: NeuralVoice = built.voice
    return voice
