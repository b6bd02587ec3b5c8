"""Voice names for AivisHub models: stable ASCII slugs from their manifests.

A one-speaker model is one voice named after the model; a model with several speakers is
one voice per speaker, `<model>-<speaker>`. A name is the manifest name folded to ASCII
letters, digits and dashes (`NFKC`, lower case); a name with nothing left (a Japanese
name, most of AivisHub) becomes `aivm-` and the first 8 hex digits of the model's uuid, and a
speaker `s<local_id>`. The same file gives the same names on every start.

`unique_names` resolves collisions (two files of one model, two models named alike)
deterministically: the voices are ordered by (uuid, version, file, speaker) and a later
voice with a taken name gets `-<uuid8>`, then `-<version>`, then `-2`, `-3`, ...; each
resolution is logged.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from .manifest import AivmManifest, AivmSpeaker

_LOGGER = logging.getLogger(__name__)

_NOT_SLUG = re.compile(r"[^a-z0-9]+")
MAX_SLUG = 40


def slug(text: str) -> str:
    """`text` folded to `[a-z0-9-]` (may be empty)."""
    folded = unicodedata.normalize("NFKC", text).lower()
    ascii_only = folded.encode("ascii", "ignore").decode("ascii")
    return _NOT_SLUG.sub("-", ascii_only).strip("-")[:MAX_SLUG].strip("-")


def model_slug(manifest: AivmManifest) -> str:
    return slug(manifest.name) or f"aivm-{manifest.uuid.replace('-', '')[:8]}"


def speaker_slug(speaker: AivmSpeaker) -> str:
    return slug(speaker.name) or f"s{speaker.local_id}"


def voice_name(manifest: AivmManifest, speaker: AivmSpeaker, base: str | None = None) -> str:
    """The voice name of `speaker` (`base`: a name the user gave the whole file)."""
    root = base or model_slug(manifest)
    if len(manifest.speakers) == 1:
        return root
    return f"{root}-{speaker_slug(speaker)}"


@dataclass(frozen=True)
class Candidate:
    """One voice to name: its wanted name and what makes it unique."""

    wanted: str
    uuid: str
    version: str
    file: str
    speaker: int


def unique_names(candidates: Sequence[Candidate], taken: Sequence[str] = ()) -> list[str]:
    """One distinct name per candidate (same order as given; see the module doc)."""
    used = {t.casefold() for t in taken}
    names: dict[int, str] = {}
    order = sorted(
        range(len(candidates)),
        key=lambda i: (
            candidates[i].uuid,
            candidates[i].version,
            candidates[i].file,
            candidates[i].speaker,
        ),
    )
    for i in order:
        c = candidates[i]
        options = [
            c.wanted,
            f"{c.wanted}-{c.uuid.replace('-', '')[:8]}",
            f"{c.wanted}-{slug(c.version) or 'v'}",
        ]
        name = next((o for o in options if o.casefold() not in used), None)
        n = 2
        while name is None:
            if f"{c.wanted}-{n}".casefold() not in used:
                name = f"{c.wanted}-{n}"
            n += 1
        if name != c.wanted:
            _LOGGER.warning(
                "Voice name %s is taken; %s (speaker %d) is served as %s",
                c.wanted,
                c.file,
                c.speaker,
                name,
            )
        used.add(name.casefold())
        names[i] = name
    return [names[i] for i in range(len(candidates))]
