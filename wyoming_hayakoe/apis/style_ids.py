"""VOICEVOX style IDs for the served voices.

A VOICEVOX client names a voice and style by one integer. For an AivisHub voice the ID is
the one AivisSpeech Engine gives it, so a client set up for AivisSpeech keeps its IDs with
the same model: the speaker UUID's MD5 (as a number, its low 27 bits) shifted left by 5,
the style's local ID (0-31) in the low 5 bits, the sign bit cleared (Anneli's ノーマル,
speaker ``e756b8e4-…``, local 0: 888753760). Other voices get small IDs that stay the same
from run to run: a CRC of ``voice:style`` below 32768 (the next free one on a clash, in name
order), and a speaker UUID derived from the voice's name.
"""

from __future__ import annotations

import hashlib
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from engine import Speaker

__all__ = ["StyleEntry", "StyleTable", "aivis_style_id", "style_table"]

_SMALL = 1 << 15
_NAMESPACE = uuid.UUID("6f1c1b1e-3a52-4d6c-9a55-68a1c0e2d347")


def aivis_style_id(speaker_uuid: str, local_style_id: int) -> int:
    """AivisSpeech Engine's style ID for a speaker UUID (as written) and a local style ID."""
    if not 0 <= local_style_id <= 31:
        raise ValueError(f"local style ID {local_style_id}: 0 to 31")
    digest = int(hashlib.md5(speaker_uuid.encode("utf-8"), usedforsecurity=False).hexdigest(), 16)
    combined = ((digest & ((1 << 27) - 1)) << 5) | local_style_id
    return combined & ~(1 << 31)


@dataclass(frozen=True)
class StyleEntry:
    voice: str
    style: str
    id: int
    speaker_uuid: str


@dataclass(frozen=True)
class StyleTable:
    """Every served voice's styles with their IDs, voices in the catalog's order."""

    entries: tuple[StyleEntry, ...]

    def find(self, style_id: int) -> StyleEntry | None:
        return next((e for e in self.entries if e.id == style_id), None)

    def of_voice(self, voice: str) -> list[StyleEntry]:
        return [e for e in self.entries if e.voice == voice]

    def ids(self) -> list[int]:
        return [e.id for e in self.entries]


def _aivm_ids(speaker: Speaker) -> tuple[str, dict[str, int]] | None:
    """(speaker UUID, style → local ID) of an AivisHub voice, as the voice declares them
    (`Speaker.identity`); None for other voices."""
    identity = speaker.identity
    if identity is None or identity.speaker_uuid is None:
        return None
    return identity.speaker_uuid, dict(identity.style_ids)


def style_table(speakers: Mapping[str, Speaker]) -> StyleTable:
    """The IDs of `speakers` (the catalog's, now)."""
    entries: list[StyleEntry] = []
    taken: set[int] = set()
    others: list[tuple[str, str]] = []
    for name, speaker in speakers.items():
        found = _aivm_ids(speaker)
        if found is None:
            others.extend((name, style) for style in speaker.styles)
            continue
        speaker_uuid, local_ids = found
        for style in speaker.styles:
            if style in local_ids:
                sid = aivis_style_id(speaker_uuid, local_ids[style])
                entries.append(StyleEntry(name, style, sid, speaker_uuid))
                taken.add(sid)
            else:
                others.append((name, style))
    for name, style in sorted(others):
        sid = zlib.crc32(f"{name}:{style}".encode()) % _SMALL
        while sid in taken:
            sid = (sid + 1) % _SMALL
        taken.add(sid)
        entries.append(StyleEntry(name, style, sid, str(uuid.uuid5(_NAMESPACE, name))))
    order = {name: i for i, name in enumerate(speakers)}
    entries.sort(key=lambda e: (order[e.voice], speakers[e.voice].styles.index(e.style)))
    return StyleTable(tuple(entries))
