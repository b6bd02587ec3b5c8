"""Where voices and the BERT come from: Hub repositories, S3 buckets, local folders.

    src = parse_source("hf://lemondouble/hayakoe")      # or s3://bucket/prefix, file:///abs, a path
    folder = src.fetch("onnx/speakers/jvnv-F1-jp")      # a local directory (cached download)

See docs/sources.md for URI forms, the cache layout, offline use and security.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import (
    DISK_FULL_ERRNOS,
    CacheWriteError,
    IncompleteSourceError,
    Source,
    SourceAccessError,
    SourceNotFoundError,
    SourceUnavailableError,
    is_disk_full,
    normalize_prefix,
    require_files,
    write_json_atomic,
)
from .cache import ENV_VAR as CACHE_ENV_VAR
from .cache import cache_root, default_cache_root
from .hf import HFSource, hub_hosts, parse_hf_uri
from .local import LocalSource
from .redact import RedactingFilter, redact, register_secret
from .s3 import S3Source, parse_s3_uri

if TYPE_CHECKING:
    from .cache import CacheDir

SourceFactory = Callable[..., Source]
"""`factory(uri, *, cache_dir=..., token=..., offline=...) -> Source`: builds a source from
its full URI."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_registry: dict[str, SourceFactory] = {}
_registry_lock = threading.Lock()


def register_scheme(scheme: str, factory: SourceFactory, *, replace: bool = False) -> None:
    """Make `parse_source` route `scheme://...` URIs to `factory`.

    `factory(uri, *, cache_dir, token)` gets the whole URI, the caller's cache_dir (pass it
    to `cache_root()` and keep downloads under a folder of your own there) and token, and
    returns a `Source` (subclass it: `fetch_file` has a default there)."""
    key = scheme.lower().rstrip(":/")
    if not re.fullmatch(r"[a-z][a-z0-9+.-]*", key):
        raise ValueError(f"bad URI scheme {scheme!r}")
    with _registry_lock:
        if key in _registry and not replace:
            raise ValueError(f"scheme {key!r} is already registered (pass replace=True)")
        _registry[key] = factory


def supported_schemes() -> list[str]:
    """Every scheme `parse_source` accepts (plain paths are accepted too)."""
    with _registry_lock:
        return sorted(_registry)


def _describe_schemes() -> str:
    names = []
    for scheme in supported_schemes():
        if scheme in ("http", "https"):
            if "https://huggingface.co/..." not in names:
                names.append("https://huggingface.co/...")
        else:
            names.append(scheme + "://")
    return ", ".join(names)


def _file_factory(
    uri: str, *, cache_dir: CacheDir = None, token: str | None = None, offline: bool = False
) -> Source:
    rest = uri.split("://", 1)[1]
    host, _, path = rest.partition("/")
    if host not in ("", "localhost"):
        raise ValueError(
            f"file:// URIs must name a local absolute path (file:///abs/path), got {redact(uri)!r}"
        )
    from urllib.parse import unquote

    return LocalSource("/" + unquote(path), given=uri)


def _https_factory(
    uri: str, *, cache_dir: CacheDir = None, token: str | None = None, offline: bool = False
) -> Source:
    host = (
        re.sub(r"^[a-zA-Z]+://", "", uri).split("/", 1)[0].rsplit("@", 1)[-1].split(":")[0]
    ).lower()
    if host not in hub_hosts():
        raise ValueError(
            f"unsupported URL {redact(uri)!r}: http(s) URLs are accepted only for Hugging Face "
            f"repositories (https://huggingface.co/owner/repo); supported: "
            f"{_describe_schemes()} and local paths"
        )
    return HFSource.from_uri(uri, cache_dir=cache_dir, token=token, offline=offline)


def parse_source(
    uri: str | os.PathLike[str],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    token: str | None = None,
    offline: bool = False,
) -> Source:
    """A `Source` for `uri`; `offline` (`EngineOptions.offline`) makes a remote source
    answer from its cache only, never touching the network.

    - `hf://owner/repo[/sub/dir][@revision]`, `https://huggingface.co/owner/repo[/tree/rev[/dir]]`
      → `HFSource` (cache under `<cache root>/hf`; `token` is the Hub token)
    - `s3://bucket/prefix` → `S3Source` (cache under `<cache root>/s3/...`)
    - `file:///abs/path`, `/abs/path`, `relative/path` → `LocalSource` (used in place)
    - a scheme added with `register_scheme`
    Anything else with a `scheme://` raises ValueError listing the supported schemes.
    """
    if isinstance(uri, os.PathLike):
        return LocalSource(os.fspath(uri))
    if not isinstance(uri, str) or not uri.strip():
        raise ValueError("empty source URI")
    text = uri.strip()
    register_secret(token)
    match = _SCHEME.match(text)
    if not match:
        return LocalSource(text, given=text)
    scheme = match.group(1).lower()
    with _registry_lock:
        factory = _registry.get(scheme)
    if factory is None:
        raise ValueError(
            f"unsupported source {redact(text)!r}: supported are "
            f"{_describe_schemes()} and local paths"
        )
    return factory(text, cache_dir=cache_dir, token=token, offline=offline)


register_scheme("hf", HFSource.from_uri)
register_scheme("https", _https_factory)
register_scheme("http", _https_factory)
register_scheme("s3", S3Source.from_uri)
register_scheme("file", _file_factory)

__all__ = [
    "CACHE_ENV_VAR",
    "DISK_FULL_ERRNOS",
    "CacheWriteError",
    "HFSource",
    "IncompleteSourceError",
    "LocalSource",
    "RedactingFilter",
    "S3Source",
    "Source",
    "SourceAccessError",
    "SourceFactory",
    "SourceNotFoundError",
    "SourceUnavailableError",
    "cache_root",
    "default_cache_root",
    "is_disk_full",
    "normalize_prefix",
    "parse_hf_uri",
    "parse_s3_uri",
    "parse_source",
    "redact",
    "register_scheme",
    "register_secret",
    "require_files",
    "supported_schemes",
    "write_json_atomic",
]
