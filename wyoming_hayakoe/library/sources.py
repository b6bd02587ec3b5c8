"""What the user typed → where the voice comes from. Only the AivisHub API and Hugging Face
are ever fetched from: any other address is refused (the page must not become a way to reach
other hosts on the user's network). Names are checked here, before any work starts
(`naming.check_name`); an official voice keeps its own name (its folder in hayakoe's
repository is that name)."""

from __future__ import annotations

from dataclasses import dataclass

from engine import OFFICIAL_SOURCE

from .errors import Code, LibraryError
from .hub import HUB_HOST, hub_uuid
from .naming import check_name

__all__ = ["OFFICIAL_VOICES", "Requested", "SourceRefused", "parse_request"]

OFFICIAL_VOICES = ("jvnv-F1-jp", "jvnv-F2-jp", "jvnv-M1-jp", "jvnv-M2-jp")
"""hayakoe's official voices (`OFFICIAL_SOURCE`), offered as one-click installs."""


class SourceRefused(LibraryError):
    """Not a source the library takes; the message says what is accepted."""

    def __init__(self, message: str) -> None:
        super().__init__(Code.SOURCE_INVALID, message, "source")


@dataclass(frozen=True)
class Requested:
    kind: str
    """``aivishub`` or ``hf``."""
    source: str
    """As given."""
    uuid: str = ""
    load_source: str = ""
    """What the engine loads (``hf``)."""
    name: str | None = None


_ACCEPTED = (
    f"an AivisHub page (https://{HUB_HOST}/aivm-models/<uuid>), a model UUID, an official "
    f"voice ({', '.join(OFFICIAL_VOICES)}) or hf://<user>/<repo> with a name"
)


def parse_request(source: str, name: str | None = None) -> Requested:
    text = source.strip() if isinstance(source, str) else ""
    if not text:
        raise SourceRefused(f"source is empty: give {_ACCEPTED}")
    name = check_name(name) if name is not None else None
    uuid = hub_uuid(text)
    if uuid is not None:
        return Requested("aivishub", text, uuid=uuid, name=name)
    official = {v.casefold(): v for v in OFFICIAL_VOICES}.get(text.casefold())
    if official is not None:
        if name is not None and name.casefold() != official.casefold():
            raise LibraryError(
                Code.NAME_INVALID,
                f"name: the official voice {official} is installed under its own name "
                f"(it is the folder fetched from {OFFICIAL_SOURCE}); leave the name out",
                "name",
            )
        return Requested("hf", text, load_source=OFFICIAL_SOURCE, name=official)
    if text.startswith("hf://"):
        if not name:
            raise SourceRefused(
                f"source {text!r}: give the voice's name too (its folder in the repository)"
            )
        return Requested("hf", text, load_source=text, name=name)
    if "://" in text:
        raise SourceRefused(
            f"source {text!r}: no address but AivisHub's is fetched; give {_ACCEPTED}"
        )
    raise SourceRefused(f"source {text!r} is not {_ACCEPTED}")
