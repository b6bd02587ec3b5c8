"""Where one voice's int8 graphs live, and reading them back.

`cache_dir_for` names the cache folder of a voice's graphs (`<cache>/int8/<name>-<digest>/`);
`read_int8_dir` returns the graphs there (`Int8Graphs`) only when their stamp matches the
voice and today's recipe; `find_int8` looks beside the voice (baked by
`wyoming-hayakoe quantize`) and then in the cache; `write_stamp` marks a folder complete.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .gate import FidelityReport
from .recipe import (
    DECODER_FILE,
    FRONT_FILE,
    REPORT_FILE,
    STAMP_FILE,
    Int8Stamp,
    QuantSettings,
    stamp_matches,
)

if TYPE_CHECKING:
    from ..sources.cache import CacheDir

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class Int8Graphs:
    """One voice's int8 graphs and their report, in `directory`."""

    directory: Path
    report: FidelityReport

    @property
    def decoder(self) -> Path:
        return self.directory / DECODER_FILE

    @property
    def front(self) -> Path | None:
        """The int8 front graph (None when the recipe leaves the front in fp32)."""
        path = self.directory / FRONT_FILE
        return path if path.is_file() else None


def read_int8_dir(directory: Path, source: Path, settings: QuantSettings) -> Int8Graphs | None:
    """The int8 graphs in `directory` if its stamp matches `source` and `settings` (else
    None; graphs made from another source or recipe are ignored, with a log line)."""
    directory = Path(directory)
    try:
        found = json.loads((directory / STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or not (directory / DECODER_FILE).is_file():
        return None
    if not stamp_matches(found, source, settings):
        _LOGGER.info("Ignoring int8 graphs in %s: made from another source or recipe", directory)
        return None
    try:
        report = FidelityReport.load(directory / REPORT_FILE)
    except ValueError as exc:
        _LOGGER.warning("Ignoring int8 graphs in %s: %s", directory, exc)
        return None
    return Int8Graphs(directory, report)


def cache_dir_for(name: str, synthesizer: Path, cache_dir: CacheDir = None) -> Path:
    """`<cache>/int8/<name>-<digest of the synthesizer's path>/`: where int8 graphs made at
    load time go (the stamp inside says what they were made from)."""
    from ..sources.cache import INT8_SUBDIR, cache_root, path_digest

    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return cache_root(cache_dir) / INT8_SUBDIR / f"{safe}-{path_digest(synthesizer)}"


def find_int8(
    name: str,
    synthesizer: Path,
    baked_dirs: list[Path],
    cache_dir: CacheDir = None,
    settings: QuantSettings | None = None,
) -> Int8Graphs | None:
    """Stamped int8 graphs of this synthesizer: in `baked_dirs` (by `quantize`), else the cache."""
    settings = settings or QuantSettings()
    for d in [*baked_dirs, cache_dir_for(name, synthesizer, cache_dir)]:
        found = read_int8_dir(d, Path(synthesizer), settings)
        if found is not None:
            return found
    return None


def write_stamp(directory: Path, stamp: Int8Stamp) -> None:
    """Mark `directory`'s graphs and report complete (atomically: a reader sees the stamp
    only once everything it describes is in place)."""
    tmp = directory / f".{STAMP_FILE}.{os.getpid()}.partial"
    tmp.write_text(json.dumps(asdict(stamp), indent=2), encoding="utf-8")
    os.replace(tmp, directory / STAMP_FILE)
