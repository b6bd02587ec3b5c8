"""What an AivisHub file says about its speakers for ``GET /speaker_info``: the speaker's
icon (as AivisSpeech does, also its portrait), each style's icon (the speaker's when it has
none), voice samples and their transcripts, base64 without the ``data:`` prefix; the file's
license as the policy. Read from the file's manifest (the header only), per request."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SpeakerMedia", "StyleMedia", "speaker_media"]


@dataclass(frozen=True)
class StyleMedia:
    icon: str = ""
    samples: tuple[str, ...] = ()
    transcripts: tuple[str, ...] = ()


@dataclass(frozen=True)
class SpeakerMedia:
    portrait: str = ""
    styles: Mapping[str, StyleMedia] = field(default_factory=dict)
    """By style name."""


def _base64(data_url: object) -> str:
    if not isinstance(data_url, str) or not data_url.startswith("data:") or "," not in data_url:
        return ""
    return data_url.split(",", 1)[1]


def speaker_media(path: str | Path, speaker_uuid: str) -> SpeakerMedia:
    """The media of the speaker `speaker_uuid` in the AivisHub file `path` (empty ones
    when the file has none or cannot be read)."""
    from engine.aivm import AivmFileError, read_raw_metadata

    try:
        _, entries = read_raw_metadata(Path(path))
        manifest = json.loads(entries.get("aivm_manifest", "{}"))
    except (AivmFileError, OSError, ValueError):
        return SpeakerMedia()
    speakers = manifest.get("speakers") if isinstance(manifest, dict) else None
    for sp in speakers if isinstance(speakers, list) else []:
        if not isinstance(sp, dict) or str(sp.get("uuid", "")).lower() != speaker_uuid.lower():
            continue
        icon = _base64(sp.get("icon"))
        styles: dict[str, StyleMedia] = {}
        for st in sp.get("styles") or []:
            if not isinstance(st, dict):
                continue
            samples = [s for s in st.get("voice_samples") or [] if isinstance(s, dict)]
            styles[str(st.get("name", ""))] = StyleMedia(
                icon=_base64(st.get("icon")) or icon,
                samples=tuple(_base64(s.get("audio")) for s in samples),
                transcripts=tuple(str(s.get("transcript", "")) for s in samples),
            )
        return SpeakerMedia(portrait=icon, styles=styles)
    return SpeakerMedia()
