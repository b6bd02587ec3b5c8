"""The one cache root shared by every remote source.

Layout under the root:

    <root>/hf/   huggingface_hub's own cache (models--owner--repo/{blobs,snapshots,refs,trees})
    <root>/s3/<store>/<bucket>/<key prefix>/...   S3 copies (+ .hayakoe_manifest.json,
                                                   .hayakoe_synced)
    <root>/derived/<stem>-<digest>/   graphs derived from one file (`derived_dir`): ONNX
                                      Runtime's optimised copies, the synthesizer cut at its
                                      decoder, the compacted BERT; each with a stamp
                                      (`file_stamp`) saying what it was made from
    <root>/int8/<name>-<digest>/      a voice's int8 graphs (`engine.int8.store`)

Local sources are never copied here.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

ENV_VAR = "HAYAKOE_CACHE"
DERIVED_SUBDIR = "derived"
INT8_SUBDIR = "int8"

CacheDir = str | os.PathLike[str] | None
"""A cache root as a caller gives it (None or blank: `$HAYAKOE_CACHE`, else the default)."""


def default_cache_root() -> Path:
    """`$XDG_CACHE_HOME/hayakoe`, else `~/.cache/hayakoe`.

    A user-level default (rather than hayakoe's `$CWD/hayakoe_cache`) keeps a server's cache
    in one place whatever directory it is started from. Containers set `HAYAKOE_CACHE`."""
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "hayakoe"


def cache_root(cache_dir: CacheDir = None) -> Path:
    """The cache root: `cache_dir` if given, else `$HAYAKOE_CACHE`, else the default.

    The result is absolute (relative values are taken from the current directory now, so a
    later `chdir` does not move the cache). Nothing is created here."""
    if cache_dir is not None and str(cache_dir).strip():
        chosen = Path(cache_dir)
    elif os.environ.get(ENV_VAR, "").strip():
        chosen = Path(os.environ[ENV_VAR].strip())
    else:
        chosen = default_cache_root()
    return chosen.expanduser().absolute()


def hf_cache_dir(root: Path) -> Path:
    """Where huggingface_hub keeps its files under `root`."""
    return Path(root) / "hf"


def s3_cache_dir(root: Path) -> Path:
    """Where S3 copies live under `root`."""
    return Path(root) / "s3"


def path_digest(path: str | os.PathLike[str]) -> str:
    """16 hex digits naming the file at `path` (its absolute, resolved path) in cache folder
    names: two voices with the same file name never share a folder."""
    return hashlib.sha1(str(Path(path).resolve()).encode("utf-8")).hexdigest()[:16]


def derived_dir(source: Path, cache_dir: CacheDir = None) -> Path:
    """`<root>/derived/<stem>-<digest>/`: where graphs derived from the file `source` are kept
    (never beside it: a user's voice folder stays as it was). Nothing is created here."""
    return cache_root(cache_dir) / DERIVED_SUBDIR / f"{source.stem}-{path_digest(source)}"


StampValue = str | int | float | bool | None
"""One field of a derived file's stamp (kept as JSON)."""


def file_stamp(source: Path, /, **fields: StampValue) -> dict[str, StampValue]:
    """What a derived file was made from: `source`'s size and modification time, and the
    maker's own `fields` (its format version, the runtime's version...). A derived file
    whose stored stamp differs is made again."""
    st = source.stat()
    return {**fields, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def stamp_matches(path: Path, want: Mapping[str, StampValue]) -> bool:
    """Whether the stamp file at `path` (JSON, `write_stamp`) says what `want` says; False
    when it is missing or unreadable."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(found == want)


def write_stamp(path: Path, stamp: Mapping[str, StampValue]) -> None:
    """Write `stamp` (from `file_stamp`) to `path` as JSON, once the derived files beside it
    are whole."""
    path.write_text(json.dumps(stamp), encoding="utf-8")
