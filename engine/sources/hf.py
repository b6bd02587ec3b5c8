"""`HFSource`: a Hugging Face Hub repository, through huggingface_hub's own cache.

URI forms (see `parse_hf_uri`):

    hf://owner/repo                     hf://owner/repo@revision
    hf://owner/repo/sub/dir@revision    hf://datasets/owner/repo
    https://huggingface.co/owner/repo[/tree/<revision>[/sub/dir]]

`fetch(prefix)` calls `snapshot_download(allow_patterns=[f"{prefix}/*"])` into
`<cache root>/hf`, **cache first**: a folder already in the cache is returned without any
network call (current huggingface_hub versions also check it against the cached file listing, so a
half-finished download is not taken as whole). Only when the cache lacks it does the Hub get
asked. With `HF_HUB_OFFLINE=1` (read at each call, not only at import) or `HAYAKOE_OFFLINE=1`
the network is never used.

The token comes from the constructor, else huggingface_hub's usual places (`HF_TOKEN`, the
stored login). It is passed to huggingface_hub only; it never appears in `uri`, in logs, in
error messages or in the cache.
"""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import parse_qs, unquote, urlsplit

from ..layout import OFFICIAL_SOURCE
from .base import (
    Source,
    SourceAccessError,
    SourceNotFoundError,
    SourceUnavailableError,
    cache_write_error,
    normalize_prefix,
)
from .cache import cache_root, hf_cache_dir
from .redact import redact, register_secret

if TYPE_CHECKING:
    from .cache import CacheDir

_LOGGER = logging.getLogger(__name__)

HF_HOSTS = ("huggingface.co", "www.huggingface.co", "hf.co")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_REPO_TYPES = {"datasets": "dataset", "spaces": "space"}


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def hub_offline(offline: bool = False) -> bool:
    """True when Hub access is switched off now: `offline` (`EngineOptions.offline`), or
    huggingface_hub's own switches (`HF_HUB_OFFLINE`, `TRANSFORMERS_OFFLINE`, or its setting
    read at its import)."""
    if offline or _truthy(os.environ.get("HF_HUB_OFFLINE")):
        return True
    if _truthy(os.environ.get("TRANSFORMERS_OFFLINE")):
        return True
    try:
        from huggingface_hub import constants

        return bool(constants.HF_HUB_OFFLINE)
    except Exception:  # pragma: no cover
        return False


def hub_hosts() -> tuple[str, ...]:
    """Hosts whose https URLs name Hub repositories (plus the host of `HF_ENDPOINT`)."""
    endpoint = os.environ.get("HF_ENDPOINT", "").strip()
    extra = (urlsplit(endpoint).hostname or "",) if endpoint else ()
    return HF_HOSTS + tuple(h.lower() for h in extra if h)


class HubUri(TypedDict):
    """A Hub URI's parts (`parse_hf_uri`), the keywords `HFSource` takes."""

    repo_id: str
    repo_type: str
    revision: str | None
    subdir: str
    endpoint: str | None


def parse_hf_uri(uri: str) -> HubUri:
    """Split a Hub URI into repo_id, repo_type, revision, subdir (and endpoint for https
    URLs on a non-default host). Raises ValueError (redacted) for malformed URIs or URIs that
    carry credentials."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if "@" in parts.netloc or parts.password or parts.username:
        raise ValueError(
            f"credentials in the URI are not supported ({redact(uri)!r}); "
            "set HF_TOKEN or pass token= instead"
        )
    if parts.query:
        if any(k.lower() in ("token", "access_token") for k in parse_qs(parts.query)):
            raise ValueError(
                f"tokens in the URI are not supported ({redact(uri)!r}); set HF_TOKEN or pass "
                "token= instead"
            )
        raise ValueError(f"Hub URIs take no query string: {redact(uri)!r}")
    endpoint = None
    if scheme == "hf":
        text = parts.netloc + parts.path
        revision = None
        if "@" in text:
            text, revision = text.split("@", 1)
            revision = unquote(revision)
        segments = [s for s in text.split("/") if s]
        repo_type = "model"
        if segments and segments[0] in _REPO_TYPES:
            repo_type = _REPO_TYPES[segments.pop(0)]
        if len(segments) < 2:
            raise ValueError(f"Hub URI needs owner/repo: {redact(uri)!r} (e.g. {OFFICIAL_SOURCE})")
        owner, name, sub = segments[0], segments[1], segments[2:]
    elif scheme in ("http", "https"):
        host = (parts.hostname or "").lower()
        if host not in hub_hosts():
            raise ValueError(f"not a Hugging Face URL: {redact(uri)!r}")
        if host not in HF_HOSTS:
            endpoint = f"{scheme}://{parts.netloc}"
        segments = [unquote(s) for s in parts.path.split("/") if s]
        repo_type = "model"
        if segments and segments[0] in _REPO_TYPES:
            repo_type = _REPO_TYPES[segments.pop(0)]
        if len(segments) < 2:
            raise ValueError(f"Hub URL needs owner/repo: {redact(uri)!r}")
        owner, name, rest = segments[0], segments[1], segments[2:]
        revision, sub = None, []
        if rest:
            if rest[0] != "tree" or len(rest) < 2:
                raise ValueError(
                    f"unsupported Hub URL {redact(uri)!r}: use https://huggingface.co/owner/repo"
                    "[/tree/<revision>[/folder]]"
                )
            revision, sub = rest[1], rest[2:]
    else:
        raise ValueError(f"not a Hub URI: {redact(uri)!r}")
    for part in (owner, name):
        if not _NAME.match(part) or len(part) > 96:
            raise ValueError(f"bad owner/repo name {part!r} in {redact(uri)!r}")
    if revision is not None and not revision.strip():
        raise ValueError(f"empty revision in {redact(uri)!r}")
    return {
        "repo_id": f"{owner}/{name}",
        "repo_type": repo_type,
        "revision": revision,
        "subdir": normalize_prefix("/".join(sub)),
        "endpoint": endpoint,
    }


class HFSource(Source):
    """Files of a Hub repository at a revision, optionally below a sub-folder."""

    is_local = False

    def __init__(
        self,
        repo_id: str,
        *,
        revision: str | None = None,
        subdir: str = "",
        repo_type: str = "model",
        cache_dir: str | os.PathLike[str] | None = None,
        token: str | None = None,
        endpoint: str | None = None,
        offline: bool = False,
    ) -> None:
        self.repo_id = repo_id
        self.offline = offline
        """Answer from the cache only (`EngineOptions.offline`)."""
        self.revision = revision
        self.subdir = normalize_prefix(subdir)
        self.repo_type = repo_type
        self.cache_dir = hf_cache_dir(cache_root(cache_dir))
        self._token = token or None
        register_secret(self._token)
        self.endpoint = endpoint
        kind = {"dataset": "datasets/", "space": "spaces/"}.get(repo_type, "")
        uri = f"hf://{kind}{repo_id}"
        if self.subdir:
            uri += f"/{self.subdir}"
        if revision:
            uri += f"@{revision}"
        self.uri = redact(uri)

    @classmethod
    def from_uri(
        cls,
        uri: str,
        *,
        cache_dir: CacheDir = None,
        token: str | None = None,
        offline: bool = False,
    ) -> HFSource:
        """Factory for `parse_source`."""
        return cls(**parse_hf_uri(uri), cache_dir=cache_dir, token=token, offline=offline)

    def __repr__(self) -> str:
        return f"HFSource({self.uri!r})"

    # -- public API ----------------------------------------------------------------------

    def fetch(self, prefix: str) -> Path:
        """Local folder (inside huggingface_hub's snapshot) holding everything under `prefix`."""
        rel = normalize_prefix(prefix)
        path = self._path_in_repo(rel)
        patterns = [f"{path}/*"] if path else None
        cached = self._from_cache(patterns, path)
        if cached is not None:
            _LOGGER.debug("%s: %s found in the cache", self.uri, rel or "(root)")
            return cached
        if hub_offline(self.offline):
            raise SourceUnavailableError(
                self.uri,
                rel,
                f"not in the cache {self.cache_dir} and the Hub is switched off (HF_HUB_OFFLINE / "
                "HAYAKOE_OFFLINE); run `wyoming-hayakoe download` with network access first",
            )
        _LOGGER.info("Downloading %s: %s", self.uri, rel or "(whole repository)")
        start = time.monotonic()
        snapshot = self._snapshot(patterns, rel, local_only=False)
        target = Path(snapshot) / path if path else Path(snapshot)
        if not _nonempty_dir(target):
            raise SourceNotFoundError(self.uri, rel, "the repository has no files in that folder")
        size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
        _LOGGER.info(
            "Downloaded %s: %s (%.1f MB, %.1f s)",
            self.uri,
            rel or "(whole repository)",
            size / (1024 * 1024),
            time.monotonic() - start,
        )
        return target

    def fetch_file(self) -> Path:
        """The single file this source names (`hf://owner/repo/dir/FILE`), cached: the
        cache answers first, offline only the cache answers."""
        path = self.subdir
        if not path:
            raise SourceNotFoundError(self.uri, "", "the URI names a repository, not a file")
        try:
            cached = Path(self._snapshot([path], path, local_only=True)) / path
        except Exception as exc:  # not cached
            _LOGGER.debug("%s: not usable from the cache: %s", self.uri, redact(exc))
            cached = None
        if cached is not None and cached.is_file():
            return cached
        if hub_offline(self.offline):
            raise SourceUnavailableError(
                self.uri,
                "",
                f"not in the cache {self.cache_dir} and the Hub is switched off (HF_HUB_OFFLINE / "
                "HAYAKOE_OFFLINE); run `wyoming-hayakoe download` with network access first",
            )
        _LOGGER.info("Downloading %s", self.uri)
        target = Path(self._snapshot([path], path, local_only=False)) / path
        if not target.is_file():
            raise SourceNotFoundError(self.uri, "", "the repository has no such file")
        _LOGGER.info("Downloaded %s (%.1f MB)", self.uri, target.stat().st_size / (1024 * 1024))
        return target

    def exists(self, prefix: str) -> bool:
        """True if `prefix` is a file or a non-empty folder in the repository (the cache
        answers first; offline, only the cache answers)."""
        rel = normalize_prefix(prefix)
        path = self._path_in_repo(rel)
        if self._in_cache(path):
            return True
        if hub_offline(self.offline):
            return False
        api = self._api()
        try:
            if path and api.file_exists(
                self.repo_id,
                path,
                repo_type=self.repo_type,
                revision=self.revision,
                token=self._token,
            ):
                return True
            entries = api.list_repo_tree(
                self.repo_id,
                path_in_repo=path or None,
                revision=self.revision,
                repo_type=self.repo_type,
                token=self._token,
            )
            return next(iter(entries), None) is not None
        except Exception as exc:
            translated = self._translate(exc, rel)
            if type(translated) is SourceNotFoundError:
                return False
            raise translated from None

    def upload(self, prefix: str, local_dir: Path) -> None:
        """Commit the files of `local_dir` to `prefix` in the repository (which must exist)."""
        rel = normalize_prefix(prefix)
        folder = Path(local_dir)
        if not folder.is_dir():
            raise NotADirectoryError(f"upload: {folder} is not a directory")
        path = self._path_in_repo(rel)
        try:
            self._api().upload_folder(
                repo_id=self.repo_id,
                folder_path=str(folder),
                path_in_repo=path or None,
                repo_type=self.repo_type,
                revision=self.revision,
                commit_message=f"Upload {path or 'files'} with wyoming-hayakoe",
                ignore_patterns=[".hayakoe_*", "**/.hayakoe_*"],
            )
        except Exception as exc:
            raise self._translate(exc, rel) from None
        _LOGGER.info("Uploaded %s to %s/%s", folder, self.uri, rel)

    # -- internals -----------------------------------------------------------------------

    def _path_in_repo(self, rel: str) -> str:
        return "/".join(p for p in (self.subdir, rel) if p)

    def _endpoint(self) -> str | None:
        return self.endpoint or os.environ.get("HF_ENDPOINT", "").strip() or None

    def _api(self) -> Any:
        from huggingface_hub import HfApi

        return HfApi(endpoint=self._endpoint(), token=self._token)

    def _snapshot(self, patterns: list[str] | None, rel: str, *, local_only: bool) -> str:
        from huggingface_hub import snapshot_download

        try:
            return snapshot_download(
                self.repo_id,
                repo_type=self.repo_type,
                revision=self.revision,
                cache_dir=str(self.cache_dir),
                token=self._token,
                allow_patterns=patterns,
                local_files_only=local_only,
                endpoint=self._endpoint(),
            )
        except Exception as exc:
            translated = exc if local_only else self._translate(exc, rel)
            if translated is exc:
                raise
            raise translated from _safe_cause(exc)

    def _from_cache(self, patterns: list[str] | None, path: str) -> Path | None:
        try:
            snapshot = self._snapshot(patterns, path, local_only=True)
        except Exception as exc:  # not cached, or cached incompletely
            _LOGGER.debug("%s: %s not usable from the cache: %s", self.uri, path, redact(exc))
            return None
        target = Path(snapshot) / path if path else Path(snapshot)
        return target if _nonempty_dir(target) else None

    def _in_cache(self, path: str) -> bool:
        """Whether the cache holds `path` (a file, or a folder with files) complete."""
        for patterns in ([f"{path}/*"], [path]) if path else (None,):
            try:
                snapshot = Path(self._snapshot(patterns, path, local_only=True))
            except Exception as exc:
                if not path and getattr(exc, "snapshot_path", None):
                    return True  # part of the repository is cached: the root exists
                continue
            local = snapshot / path if path else snapshot
            if local.is_file() or _nonempty_dir(local):
                return True
        return False

    def _translate(self, exc: Exception, rel: str) -> Exception:
        """A clear, redacted error for a huggingface_hub / HTTP exception."""
        from huggingface_hub import errors

        unwritable = cache_write_error(exc, self.cache_dir)
        if unwritable is not None:  # disk full, read-only, no permission
            return unwritable

        text = redact(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        if isinstance(exc, errors.GatedRepoError):
            return SourceAccessError(
                redact(
                    f"{self.uri}: gated repository; accept its terms on the Hub and set HF_TOKEN"
                )
            )
        if isinstance(exc, errors.RepositoryNotFoundError):
            return SourceNotFoundError(
                self.uri, rel, "repository not found, or private and no valid token (set HF_TOKEN)"
            )
        if isinstance(exc, errors.RevisionNotFoundError):
            return SourceNotFoundError(self.uri, rel, f"revision {self.revision!r} not found")
        if isinstance(exc, (errors.EntryNotFoundError,)) and not isinstance(
            exc, errors.LocalEntryNotFoundError
        ):
            return SourceNotFoundError(self.uri, rel, "no such file or folder in the repository")
        offline_error = getattr(errors, "OfflineModeIsEnabled", errors.LocalEntryNotFoundError)
        if isinstance(exc, (errors.LocalEntryNotFoundError, offline_error)):
            return SourceUnavailableError(
                self.uri, rel, f"the Hub could not be reached and the cache lacks it: {text}"
            )
        if isinstance(exc, errors.HfHubHTTPError):
            status = getattr(getattr(exc, "response", None), "status_code", None)
            if status in (401, 403):
                return SourceAccessError(
                    redact(f"{self.uri}: access denied (HTTP {status}); check HF_TOKEN")
                )
            if status == 404:
                return SourceNotFoundError(self.uri, rel, "not found on the Hub")
            return OSError(redact(f"{self.uri}/{rel}: Hub error: {text}"))
        if (
            isinstance(exc, (ConnectionError, TimeoutError))
            or "connect" in type(exc).__name__.lower()
        ):
            return SourceUnavailableError(self.uri, rel, f"the Hub could not be reached: {text}")
        if isinstance(exc, (ValueError, OSError)):
            return (
                type(exc)(redact(f"{self.uri}/{rel}: {text}"))
                if type(exc) in (ValueError, OSError)
                else exc
            )
        return exc


def _nonempty_dir(path: Path) -> bool:
    return path.is_dir() and any(path.iterdir())


def _safe_cause(exc: Exception) -> Exception | None:
    """Keep `exc` as the cause of a translated error only if its text holds no secret."""
    text = str(exc)
    return exc if redact(text) == text else None
