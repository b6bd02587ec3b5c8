"""The `Source` protocol, its errors, and helpers every store shares.

A source is a place that holds a hayakoe-style tree of files (or a plain Style-Bert-VITS2
folder). Loaders never talk to a store directly: they ask `fetch(prefix)` for a *local
directory* holding everything under `prefix` and read files from there.
"""

from __future__ import annotations

import errno
import fnmatch
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Protocol, runtime_checkable

from ..errors import EngineError
from .redact import redact


class SourceNotFoundError(EngineError, FileNotFoundError):
    """Nothing usable under `prefix` in the source `uri` (the URI is already redacted)."""

    what = "not found"

    def __init__(self, uri: str, prefix: str, detail: str = "") -> None:
        self.uri = uri
        self.prefix = prefix
        where = f"{uri.rstrip('/')}/{prefix}" if prefix else uri
        message = f"{where}: {self.what}"
        if detail:
            message += f" ({detail})"
        super().__init__(redact(message))


class SourceUnavailableError(SourceNotFoundError):
    """The store could not be reached (offline, no credentials, DNS, refused) and no complete
    cached copy exists."""

    what = "unavailable"


class IncompleteSourceError(SourceNotFoundError):
    """A folder exists but lacks files a loader needs (e.g. an interrupted copy)."""

    what = "incomplete"

    def __init__(self, uri: str, prefix: str, missing: Sequence[str], directory: Path) -> None:
        self.missing = list(missing)
        self.directory = Path(directory)
        detail = f"missing {', '.join(self.missing)} in {directory}"
        super().__init__(uri, prefix, detail)


class SourceAccessError(EngineError, PermissionError):
    """The store refused access (bad or missing credentials, gated repository)."""


_CACHE_WRITE_REASONS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "it is on a read-only file system",
    errno.EACCES: "this process may not write there",
    errno.EPERM: "this process may not write there",
    errno.EFBIG: "a file grew larger than this process may write",
}


DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""The OS errors that mean "no room": the disk or the quota is full, or a file may not grow."""


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc`, or an error it was raised from, says there is no room to write (the
    one classification of a full disk: the cache, the voice library, the web page)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, OSError) and current.errno in DISK_FULL_ERRNOS:
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


class CacheWriteError(EngineError, OSError):
    """A download could not be written into the cache (full, read-only, no permission).

    Downloads are written under temporary names and renamed only when whole, so nothing
    partly written is ever taken for a finished file; the next fetch downloads again."""

    def __init__(self, code: int, folder: Path, detail: str) -> None:
        self.folder = Path(folder)
        message = (
            f"cannot write to the voice cache {folder}: {_CACHE_WRITE_REASONS[code]} ({detail}). "
            "Free some space there, or point --cache-dir (or $HAYAKOE_CACHE) at a writable "
            "folder with room; nothing partly written is used"
        )
        super().__init__(code, redact(message))

    def __str__(self) -> str:
        return str(self.strerror)


def cache_write_error(exc: BaseException, folder: Path) -> CacheWriteError | None:
    """`exc` as a `CacheWriteError` about `folder` when it is a local write failure of that
    kind (disk full, read-only, permission), else None."""
    if isinstance(exc, CacheWriteError):
        return exc
    if not isinstance(exc, OSError) or exc.errno not in _CACHE_WRITE_REASONS:
        return None
    where = f": {exc.filename}" if exc.filename else ""
    return CacheWriteError(exc.errno, folder, f"{exc.strerror or exc}{where}")


@runtime_checkable
class Source(Protocol):
    """What every store provides, declared (callers call these; nothing is probed).

    - `uri`: where the files live, redacted (never holds a token or key).
    - `is_local`: True when `fetch` returns the original files in place (no download, no cache).
    - `fetch(prefix)`: a local directory with everything under `prefix` ("" = the root),
      downloaded into the cache if needed; raises `SourceNotFoundError` when nothing is there.
    - `exists(prefix)`: cheap check whether `prefix` names a file or a non-empty folder
      (used for layout detection). Works offline from the cache.
    - `upload(prefix, local_dir)`: copy `local_dir`'s files to `prefix` in the store.
    - `fetch_file()`: the one file the URI names (an AivisHub voice file), as a local file;
      the default (a store whose URIs name folders only) raises ValueError.

    A store subclasses `Source` to inherit the default `fetch_file` (HFSource, S3Source and
    LocalSource name a file too and override it).
    """

    uri: str
    is_local: bool

    def fetch(self, prefix: str) -> Path: ...

    def exists(self, prefix: str) -> bool: ...

    def upload(self, prefix: str, local_dir: Path) -> None: ...

    def fetch_file(self) -> Path:
        raise ValueError(f"{self.uri}: this kind of source cannot hold a single voice file")


def normalize_prefix(prefix: str) -> str:
    """`prefix` as a clean relative POSIX path ("" for the root).

    Rejects absolute paths and `..` so that no prefix (or object key) can reach outside the
    source root or the cache."""
    if prefix is None:
        return ""
    text = str(prefix).replace("\\", "/").strip()
    if text.startswith("/") and text.strip("/"):
        raise ValueError(f"prefix must be relative to the source root, got {redact(prefix)!r}")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise ValueError(f"prefix must not contain '..', got {redact(prefix)!r}")
    return "/".join(parts)


def safe_relative_path(rel: str) -> PurePosixPath | None:
    """`rel` (an object key relative to a listed prefix) as a path that stays inside its
    folder, or None when it is empty, absolute, or climbs out with `..`."""
    if not rel or rel.startswith("/") or "\x00" in rel:
        return None
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    return PurePosixPath(*parts)


def require_files(
    directory: str | os.PathLike[str],
    names: Iterable[str | Sequence[str]],
    uri: str,
    prefix: str = "",
) -> None:
    """Raise `IncompleteSourceError` naming `uri`/`prefix` and every missing file.

    Each entry of `names` is a file name relative to `directory`, a glob (``"*.safetensors"``:
    at least one match), or a tuple/list of alternatives (any one present is enough, e.g.
    ``("synthesizer.onnx", "synthesizer_q8.onnx")``). An empty file counts as missing: a
    zero-byte model file is always the trace of a broken copy.
    """
    base = Path(directory)
    missing: list[str] = []
    for entry in names:
        alternatives = [entry] if isinstance(entry, str) else list(entry)
        if not any(_present(base, name) for name in alternatives):
            missing.append(" or ".join(alternatives))
    if missing:
        raise IncompleteSourceError(uri, prefix, missing, base)


def _present(base: Path, name: str) -> bool:
    if any(ch in name for ch in "*?["):
        parent = base / PurePosixPath(name).parent
        pattern = PurePosixPath(name).name
        if not parent.is_dir():
            return False
        return any(
            fnmatch.fnmatch(p.name, pattern) and p.is_file() and p.stat().st_size > 0
            for p in parent.iterdir()
        )
    path = base / name
    return (path.is_file() and path.stat().st_size > 0) or path.is_dir()


def write_json_atomic(path: Path, data: object) -> None:
    """Write JSON so that readers see the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
