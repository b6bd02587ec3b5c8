"""`S3Source`: `s3://bucket/prefix` on AWS S3 or any S3-compatible store (MinIO, R2, ...).

`fetch(prefix)` mirrors every object under the prefix into the cache:

- the listing is compared with a manifest (`.hayakoe_manifest.json`: key → ETag, size), so
  unchanged objects are skipped and objects whose ETag or size changed are fetched again;
- each object is streamed to a hidden temporary name in the same folder, its size checked,
  then `os.replace`d into place: an interrupted download never leaves a file under its
  final name that looks whole;
- `.hayakoe_synced` is written only after a complete sync, and removed before a sync that
  changes anything. When the store cannot be reached (no network, no credentials) a folder
  with that marker is used as is, and the log says so;
- a store that accepts connections but never answers is given up after `timeout` seconds per
  attempt (three attempts), with an error that says so;
- a cache that cannot be written (disk full, read-only, no permission) is a `CacheWriteError`
  naming the folder; an up-to-date cached copy on a read-only disk is used as is.

boto3 is imported only when a store is first used (the `s3` extra). The endpoint comes from
the constructor, else `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`; credentials come from
boto3's usual chain (environment, config files, instance roles) and are never stored.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import EngineError
from .base import (
    Source,
    SourceAccessError,
    SourceNotFoundError,
    SourceUnavailableError,
    cache_write_error,
    normalize_prefix,
    safe_relative_path,
    write_json_atomic,
)
from .cache import cache_root, s3_cache_dir
from .progress import Progress
from .redact import redact

if TYPE_CHECKING:
    from botocore.client import BaseClient

    from .cache import CacheDir

_LOGGER = logging.getLogger(__name__)

MANIFEST_NAME = ".hayakoe_manifest.json"
SYNCED_NAME = ".hayakoe_synced"
LOCK_NAME = ".hayakoe_lock"
PART_MARK = ".hayakoe-part"
_CHUNK = 1024 * 1024
DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_READ_TIMEOUT_S = 60.0

_ACCESS_CODES = {
    "AccessDenied",
    "403",
    "Forbidden",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "AllAccessDisabled",
}
_NOT_FOUND_CODES = {"NoSuchBucket", "NoSuchKey", "404", "NotFound"}


@dataclass(frozen=True)
class _Object:
    key: str
    rel: str
    etag: str
    size: int


class _Unreachable(EngineError):
    """Internal: the store could not be reached; `reason` is already redacted."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """`s3://bucket/some/prefix` → ("bucket", "some/prefix")."""
    parts = urlsplit(uri)
    if parts.scheme.lower() != "s3":
        raise ValueError(f"not an s3:// URI: {redact(uri)!r}")
    if "@" in parts.netloc:
        raise ValueError(
            f"credentials in s3:// URIs are not supported ({redact(uri)!r}); use "
            "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or an AWS profile"
        )
    bucket = parts.netloc
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}", bucket or ""):
        raise ValueError(f"s3:// URI needs a bucket name: {redact(uri)!r}")
    if parts.query or parts.fragment:
        raise ValueError(f"s3:// URIs take no query or fragment: {redact(uri)!r}")
    return bucket, normalize_prefix(parts.path.lstrip("/"))


def _store_display(endpoint: str | None) -> str:
    """Host[:port] of the endpoint for messages (never credentials), or "AWS S3"."""
    if not endpoint:
        return "AWS S3"
    parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)


def _store_name(endpoint: str | None) -> str:
    """A cache folder name for the endpoint (host and port only, never credentials)."""
    if not endpoint:
        return "aws"
    parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    name = parts.hostname or "endpoint"
    if parts.port:
        name += f"_{parts.port}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


class S3Source(Source):
    """Objects under `s3://bucket/prefix`, cached under `<cache root>/s3/<store>/<bucket>/`."""

    is_local = False

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        endpoint_url: str | None = None,
        region: str | None = None,
        client: BaseClient | None = None,
        timeout: float | None = None,
        offline: bool = False,
    ) -> None:
        """`timeout`: seconds to wait for a connection and for each answer (default 10 s to
        connect, 60 s per answer)."""
        self.bucket = bucket
        self.connect_timeout = timeout if timeout is not None else DEFAULT_CONNECT_TIMEOUT_S
        self.read_timeout = timeout if timeout is not None else DEFAULT_READ_TIMEOUT_S
        self.offline = offline
        """Answer from the cache only, never contacting the store (`EngineOptions.offline`)."""
        self.prefix = normalize_prefix(prefix)
        self.endpoint_url = (
            endpoint_url
            or os.environ.get("AWS_ENDPOINT_URL_S3", "").strip()
            or os.environ.get("AWS_ENDPOINT_URL", "").strip()
            or None
        )
        self.region = region
        self._client = client
        self.uri = redact(f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}")
        base = s3_cache_dir(cache_root(cache_dir)) / _store_name(self.endpoint_url) / bucket
        self.cache_path = base / self.prefix if self.prefix else base

    @classmethod
    def from_uri(
        cls,
        uri: str,
        *,
        cache_dir: CacheDir = None,
        token: str | None = None,
        offline: bool = False,
    ) -> S3Source:
        """Factory for `parse_source` (`token` is for Hub sources and is ignored here)."""
        bucket, prefix = parse_s3_uri(uri)
        return cls(bucket, prefix, cache_dir=cache_dir, offline=offline)

    def __repr__(self) -> str:
        return f"S3Source({self.uri!r})"

    # -- public API ----------------------------------------------------------------------

    def fetch(self, prefix: str) -> Path:
        """Sync every object under `prefix` into the cache and return that folder."""
        rel = normalize_prefix(prefix)
        local = self.cache_path / rel if rel else self.cache_path
        if self.offline:
            return self._use_cache(local, rel, "offline (HAYAKOE_OFFLINE / --offline)", warn=False)
        try:
            objects = self._list(rel)
        except _Unreachable as exc:
            return self._use_cache(local, rel, exc.reason, warn=True)
        if not objects:
            raise SourceNotFoundError(
                self.uri,
                rel,
                f"no objects under s3://{self.bucket}/{self._list_prefix(self._key(rel))}",
            )
        try:
            with _folder_lock(local):
                self._sync(local, rel, objects)
        except _Unreachable as exc:
            raise SourceUnavailableError(
                self.uri, rel, f"connection lost during download: {exc.reason}; fetch again"
            ) from None
        except OSError as exc:
            error = cache_write_error(exc, local)
            if error is None:
                raise
            raise error from None
        return local

    def fetch_file(self) -> Path:
        """The single object this source names (`s3://bucket/dir/FILE`), synced into its own
        cache folder (`<FILE>.d/`, with the same manifest and marker as a folder) and
        returned as a local file."""
        key = self.prefix
        if not key:
            raise SourceNotFoundError(self.uri, "", "the URI names a bucket, not a file")
        name = key.rsplit("/", 1)[-1]
        local = self.cache_path.with_name(self.cache_path.name + ".d")
        if self.offline:
            return (
                self._use_cache(local, "", "offline (HAYAKOE_OFFLINE / --offline)", warn=False)
                / name
            )
        try:
            response = self._call("list_objects_v2", "", Bucket=self.bucket, Prefix=key, MaxKeys=50)
        except _Unreachable as exc:
            return self._use_cache(local, "", exc.reason, warn=True) / name
        item = next((i for i in response.get("Contents", []) if i["Key"] == key), None)
        if item is None:
            raise SourceNotFoundError(self.uri, "", f"no object s3://{self.bucket}/{key}")
        obj = _Object(key, name, str(item.get("ETag", "")), int(item["Size"]))
        try:
            with _folder_lock(local):
                self._sync(local, name, [obj])
        except _Unreachable as exc:
            raise SourceUnavailableError(
                self.uri, "", f"connection lost during download: {exc.reason}; fetch again"
            ) from None
        except OSError as exc:
            error = cache_write_error(exc, local)
            if error is None:
                raise
            raise error from None
        return local / name

    def exists(self, prefix: str) -> bool:
        """True if `prefix` is an object or has objects under it (the cache answers when the
        store cannot be reached)."""
        rel = normalize_prefix(prefix)
        local = self.cache_path / rel if rel else self.cache_path
        if self.offline:
            return local.exists()
        key = self._key(rel)
        try:
            if key and self._head(key):
                return True
            response = self._call(
                "list_objects_v2", rel, Bucket=self.bucket, Prefix=self._list_prefix(key), MaxKeys=1
            )
            return int(response.get("KeyCount", len(response.get("Contents", [])))) > 0
        except _Unreachable:
            return local.exists()

    def upload(self, prefix: str, local_dir: Path) -> None:
        """Upload every file under `local_dir` to `prefix` (keys keep the relative paths)."""
        rel = normalize_prefix(prefix)
        src_dir = Path(local_dir)
        if not src_dir.is_dir():
            raise NotADirectoryError(f"upload: {src_dir} is not a directory")
        files = [
            p
            for p in sorted(src_dir.rglob("*"))
            if p.is_file() and not p.name.startswith(".hayakoe_") and PART_MARK not in p.name
        ]
        total = sum(p.stat().st_size for p in files)
        progress = Progress(_LOGGER, f"Uploading {len(files)} files to {self.uri}/{rel}", total)
        for path in files:
            key = "/".join(filter(None, [self._key(rel), path.relative_to(src_dir).as_posix()]))
            try:
                self._client_or_create().upload_file(
                    str(path), self.bucket, key, Callback=progress.update
                )
            except Exception as exc:  # boto3 wraps ClientError in S3UploadFailedError
                raise self._translate(exc, rel) from None
        progress.finish()

    # -- internals -----------------------------------------------------------------------

    def _key(self, rel: str) -> str:
        return "/".join(p for p in (self.prefix, rel) if p)

    @staticmethod
    def _list_prefix(key: str) -> str:
        return f"{key}/" if key else ""

    def _client_or_create(self) -> Any:
        if self._client is None:
            try:
                import boto3
                from botocore.config import Config
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise ImportError(
                    "s3:// sources need boto3: pip install 'wyoming-hayakoe[s3]'"
                ) from exc
            config = Config(
                connect_timeout=self.connect_timeout,
                read_timeout=self.read_timeout,
                retries={"max_attempts": 3, "mode": "standard"},
                s3={"addressing_style": "path"} if self.endpoint_url else None,
            )
            self._client = boto3.session.Session().client(
                "s3", endpoint_url=self.endpoint_url, region_name=self.region, config=config
            )
        return self._client

    def _call(self, method: str, rel: str, **kwargs: Any) -> Any:
        try:
            return getattr(self._client_or_create(), method)(**kwargs)
        except Exception as exc:
            raise self._translate(exc, rel) from None

    def _head(self, key: str) -> bool:
        try:
            self._client_or_create().head_object(Bucket=self.bucket, Key=key)
            return True
        except Exception as exc:
            translated = self._translate(exc, key[len(self.prefix) :].lstrip("/"))
            if isinstance(translated, SourceNotFoundError) and not _is_missing_bucket(exc):
                return False
            raise translated from None

    def _translate(self, exc: Exception, rel: str) -> Exception:
        """A clear, redacted error (or `_Unreachable`) for a boto3/botocore exception."""
        try:
            from botocore import exceptions as bex
        except ImportError:  # pragma: no cover
            return exc
        if isinstance(exc, (bex.NoCredentialsError, bex.PartialCredentialsError)):
            return _Unreachable(f"no AWS credentials ({type(exc).__name__})")
        if isinstance(exc, bex.ReadTimeoutError):
            where = _store_display(self.endpoint_url)
            return _Unreachable(
                f"{where} did not answer within {self.read_timeout:g} s (tried 3 times)"
            )
        if isinstance(exc, (bex.ConnectionError, bex.HTTPClientError)):
            where = _store_display(self.endpoint_url)
            return _Unreachable(f"cannot connect to {where} ({type(exc).__name__})")
        error = getattr(exc, "response", None) or {}
        inner = exc.__cause__ or exc.__context__  # boto3's S3UploadFailedError wraps a ClientError
        inner_response = getattr(inner, "response", None)
        if not error and isinstance(inner_response, dict):
            error = inner_response
        info = error.get("Error", {}) if isinstance(error, dict) else {}
        code = str(info.get("Code", ""))
        status = str(error.get("ResponseMetadata", {}).get("HTTPStatusCode", "")) if error else ""
        message = redact(info.get("Message", "") or exc)
        if code == "NoSuchBucket":
            return SourceNotFoundError(
                self.uri,
                rel,
                f"bucket {self.bucket!r} does not exist at {_store_display(self.endpoint_url)}",
            )
        if code in _NOT_FOUND_CODES or status == "404":
            return SourceNotFoundError(self.uri, rel, f"{code or status}: {message}")
        if code in _ACCESS_CODES or status == "403":
            return SourceAccessError(
                redact(
                    f"{self.uri}: access denied ({code or status}: {message}); check the AWS "
                    "credentials"
                )
            )
        if code in ("PreconditionFailed", "412") or status == "412":
            return SourceUnavailableError(
                self.uri, rel, "an object changed while it was downloaded; fetch again"
            )
        if isinstance(exc, bex.BotoCoreError) or error:
            return OSError(
                redact(f"{self.uri}/{rel}: S3 error {code or type(exc).__name__}: {message}")
            )
        return exc

    def _list(self, rel: str) -> list[_Object]:
        list_prefix = self._list_prefix(self._key(rel))
        objects: list[_Object] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": list_prefix}
            if token:
                kwargs["ContinuationToken"] = token
            response = self._call("list_objects_v2", rel, **kwargs)
            for item in response.get("Contents", []):
                obj_key = item["Key"]
                rel = obj_key[len(list_prefix) :]
                if obj_key.endswith("/"):
                    continue  # a "folder" placeholder object
                safe = safe_relative_path(rel)
                if safe is None:
                    _LOGGER.warning("Skipping object with an unsafe key: %r", redact(obj_key))
                    continue
                if safe.name.startswith(".hayakoe_") or PART_MARK in safe.name:
                    continue
                objects.append(
                    _Object(obj_key, safe.as_posix(), str(item.get("ETag", "")), int(item["Size"]))
                )
            if not response.get("IsTruncated"):
                return objects
            token = response.get("NextContinuationToken")

    def _use_cache(self, local: Path, rel: str, reason: str, *, warn: bool) -> Path:
        marker = local / SYNCED_NAME
        if marker.is_file():
            when = _marker_time(marker)
            log = _LOGGER.warning if warn else _LOGGER.info
            log(
                "%s/%s: S3 not used (%s); using the cached copy synced %s",
                self.uri,
                rel,
                reason,
                when,
            )
            return local
        detail = f"{reason}, and no complete cached copy in {local}"
        if local.is_dir() and any(local.iterdir()):
            detail += " (an earlier download did not finish)"
        detail += "; run `wyoming-hayakoe download` with access to the store first"
        raise SourceUnavailableError(self.uri, rel, detail)

    def _sync(self, local: Path, rel: str, objects: list[_Object]) -> None:
        local.mkdir(parents=True, exist_ok=True)
        for part in local.rglob(f"*{PART_MARK}*"):
            if _abandoned(part):
                part.unlink(missing_ok=True)
        manifest_path = local / MANIFEST_NAME
        manifest = _load_manifest(manifest_path)
        current = {obj.rel for obj in objects}
        todo = [obj for obj in objects if not _up_to_date(local, obj, manifest.get(obj.rel))]
        gone = sorted(r for r in manifest if r not in current)
        marker = local / SYNCED_NAME
        if not todo and not gone:
            if not marker.is_file():
                _write_marker(marker, objects)
            _LOGGER.debug(
                "%s/%s: cached copy is up to date (%d objects)", self.uri, rel, len(objects)
            )
            return
        marker.unlink(missing_ok=True)
        for old in gone:
            safe = safe_relative_path(old)
            if safe is not None:
                (local / safe).unlink(missing_ok=True)
            manifest.pop(old, None)
        _save_manifest(manifest_path, manifest)
        total = sum(obj.size for obj in todo)
        label = f"Downloading {len(todo)} of {len(objects)} files from {self.uri}/{rel}".rstrip("/")
        _LOGGER.info("%s (%.1f MB)", label, total / (1024 * 1024))
        progress = Progress(_LOGGER, label, total)
        for obj in todo:
            self._download(obj, local / obj.rel, progress)
            manifest[obj.rel] = {"etag": obj.etag, "size": obj.size}
            _save_manifest(manifest_path, manifest)
        _write_marker(marker, objects)
        progress.finish()

    def _download(self, obj: _Object, dest: Path, progress: Progress) -> None:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}{PART_MARK}-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": obj.key}
            if obj.etag:
                kwargs["IfMatch"] = obj.etag  # the bytes must be the version we listed
            response = self._call("get_object", obj.rel, **kwargs)
            body = response["Body"]
            try:
                with open(tmp, "wb") as f:
                    _copy_stream(body, f, progress)
                    f.flush()
                    os.fsync(f.fileno())
            except Exception as exc:
                raise self._translate(exc, obj.rel) from None
            finally:
                body.close()
            got = tmp.stat().st_size
            if got != obj.size:
                raise SourceUnavailableError(
                    self.uri,
                    obj.rel,
                    f"download truncated ({got} of {obj.size} bytes); fetch again",
                )
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)


def _copy_stream(body: Any, out: Any, progress: Progress) -> None:
    """Copy an HTTP body to `out` in 1 MiB chunks, counting progress."""
    while True:
        chunk = body.read(_CHUNK)
        if not chunk:
            return
        out.write(chunk)
        progress.update(len(chunk))


def _abandoned(part: Path) -> bool:
    """Whether a temporary download file was left by a process that no longer runs (its pid
    is in the name), so that a sync never deletes another live process's file."""
    match = re.search(re.escape(PART_MARK) + r"-(\d+)-", part.name)
    if not match:
        return True
    pid = int(match.group(1))
    if pid == os.getpid():
        return False  # maybe another thread of ours; ours are removed in `_download`
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists but not ours to signal
        return False
    return False


def _is_missing_bucket(exc: Exception) -> bool:
    error = getattr(exc, "response", None) or {}
    return bool(error.get("Error", {}).get("Code") == "NoSuchBucket")


def _up_to_date(local: Path, obj: _Object, entry: dict[str, Any] | None) -> bool:
    if not entry or entry.get("etag") != obj.etag or entry.get("size") != obj.size:
        return False
    path = local / obj.rel
    return path.is_file() and path.stat().st_size == obj.size


def _load_manifest(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        _LOGGER.warning("Ignoring unreadable manifest %s; every file will be checked again", path)
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return {}
    return {k: v for k, v in files.items() if isinstance(v, dict)}


def _save_manifest(path: Path, manifest: dict[str, dict[str, Any]]) -> None:
    write_json_atomic(path, {"version": 1, "files": manifest})


def _write_marker(marker: Path, objects: list[_Object]) -> None:
    write_json_atomic(
        marker,
        {
            "synced_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "objects": len(objects),
            "bytes": sum(o.size for o in objects),
        },
    )


def _marker_time(marker: Path) -> str:
    try:
        return "at " + str(json.loads(marker.read_text(encoding="utf-8"))["synced_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return "earlier"


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """Serialise syncs of one folder across processes (POSIX advisory lock; no-op elsewhere)."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    try:
        handle = open(folder / LOCK_NAME, "a+b")
    except OSError as exc:
        if cache_write_error(exc, folder) is None:
            raise
        # Nobody can write here: nothing to serialise. A sync that has to write fails
        # with a `CacheWriteError`; an up-to-date copy is used as it is.
        yield
        return
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
