"""Where an AivisHub file is: a voice source naming a file, maybe one of its speakers.

A source is a path, `file://`, `hf://owner/repo/dir/FILE.aivmx[@rev]` or
`s3://bucket/dir/FILE.aivmx`, optionally followed by `#speaker=<local_id>` (one speaker of a
multi-speaker model). `local_file` fetches a remote file into the one cache (offline: the
cache only) through `engine.sources`. Light: no model code is imported here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from .manifest import is_aivm_path

if TYPE_CHECKING:
    from ..sources.cache import CacheDir

SPEAKER_SELECTOR = "#speaker="
_SELECTOR = re.compile(r"#speaker=(\d+)$")


def is_aivm_source(source: str | None) -> bool:
    """Whether a voice source names an AivisHub file (`.aivmx`/`.aivm`, maybe a speaker)."""
    return source is not None and is_aivm_path(split_selector(source)[0])


def split_selector(source: str) -> tuple[str, int | None]:
    """(the file's URI, the speaker's local_id or None)."""
    m = _SELECTOR.search(source)
    if m is None:
        return source, None
    return source[: m.start()], int(m.group(1))


def with_speaker(source: str, local_id: int) -> str:
    return f"{split_selector(source)[0]}{SPEAKER_SELECTOR}{local_id}"


def local_file(
    uri: str, *, cache_dir: CacheDir = None, token: str | None = None, offline: bool = False
) -> Path:
    """The AivisHub file `uri` names, as a local file (fetched into the cache if remote)."""
    from ..sources import parse_source

    src = parse_source(uri, cache_dir=cache_dir, token=token, offline=offline)
    return Path(src.fetch_file())
