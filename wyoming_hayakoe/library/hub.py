"""AivisHub through its API only (never an arbitrary URL): a page URL or a bare UUID →
the model's facts (`HubModel`) → its `.aivmx` downloaded to a file, its size and SHA-256
checked as it streams.

Facts (AivisSpeech Engine's client): ``GET {api}/aivm-models/{uuid}`` answers JSON with
``name``, ``user``, ``speakers`` and ``model_files`` (``model_type`` AIVM/AIVMX, ``version``,
``file_size``, ``checksum``, ``license_type``, ``creators``, ``model_architecture``);
``GET {api}/aivm-models/{uuid}/download?model_type=AIVMX`` answers the file. Redirects are
followed only to the API's own host and port, or over https within the hub's domain family
(`HUB_DOMAIN`); any other is refused. Three tries, none after a 403 or 404; a connect
timeout (10 s) and a read timeout. A download stops as soon as it passes the size the hub
declared, or `max_bytes` when it declares none. Cancelling the caller's task stops a try,
a retry's wait, everything at once; a disk that fills (or a file size limit) ends it with one
sentence, not a retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import logging
import re
import uuid as uuidlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlparse

import aiohttp

from engine.sources import is_disk_full

from ..errors import HayakoeError
from .errors import Code, LibraryError

__all__ = ["HUB_HOST", "HubError", "HubModel", "download", "fetch_model", "hub_uuid"]

_LOGGER = logging.getLogger(__name__)

HUB_HOST = "hub.aivis-project.com"
HUB_DOMAIN = "aivis-project.com"
"""Redirects from the hub are followed over https within this domain (and its subdomains)."""
MAX_REDIRECTS = 5
TRIES = 3
_CHUNK = 1 << 16
_UUID = re.compile(r"^[0-9a-f]{8}-?(?:[0-9a-f]{4}-?){3}[0-9a-f]{12}$", re.IGNORECASE)


class HubError(LibraryError):
    """A hub request failed; the message is one sentence naming the cause."""

    def __init__(self, message: str, code: Code = Code.HUB_ERROR) -> None:
        super().__init__(code, message, "source")


def hub_uuid(text: str) -> str | None:
    """The model UUID of an AivisHub page URL (``https://hub.aivis-project.com/aivm-models/
    <uuid>``) or of a bare UUID; None for anything else."""
    text = text.strip()
    if _UUID.match(text):
        return str(uuidlib.UUID(text))
    url = urlparse(text)
    if url.scheme in ("http", "https") and (url.hostname or "").lower() == HUB_HOST:
        parts = [p for p in url.path.split("/") if p]
        if len(parts) >= 2 and parts[0] == "aivm-models" and _UUID.match(parts[1]):
            return str(uuidlib.UUID(parts[1]))
    return None


@dataclass(frozen=True)
class HubModel:
    uuid: str
    name: str
    version: str
    file_size: int | None
    checksum: str | None
    """Hex SHA-256 when the hub gives one of that form, else None (not checked)."""
    license: str
    creators: tuple[str, ...]
    architecture: str


def _model(uuid: str, data: Any) -> HubModel:
    if not isinstance(data, dict):
        raise HubError(f"AivisHub answered something other than a model for {uuid}")
    files = [f for f in data.get("model_files") or [] if isinstance(f, dict)]
    aivmx = [f for f in files if str(f.get("model_type", "")).upper() == "AIVMX"]
    if not aivmx:
        raise HubError(f"AivisHub model {uuid} has no .aivmx file to download")
    f = aivmx[0]
    checksum = str(f.get("checksum") or "").lower()
    size = f.get("file_size")
    return HubModel(
        uuid=uuid,
        name=str(data.get("name") or uuid),
        version=str(f.get("version") or ""),
        file_size=int(size) if isinstance(size, int) and size > 0 else None,
        checksum=checksum if re.fullmatch(r"[0-9a-f]{64}", checksum) else None,
        license=str(f.get("license_type") or ""),
        creators=tuple(str(c) for c in f.get("creators") or []),
        architecture=str(f.get("model_architecture") or ""),
    )


def _timeout(connect: float, read: float) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(total=None, connect=connect, sock_connect=connect, sock_read=read)


async def _retrying(what: str, attempt: Callable[[], Any]) -> Any:
    last: Exception | None = None
    for n in range(TRIES):
        try:
            return await attempt()
        except aiohttp.ClientResponseError as exc:
            if exc.status == 404:
                raise HubError(f"AivisHub has no {what} (404)") from exc
            if exc.status == 403:
                raise HubError(f"AivisHub refused {what} (403)") from exc
            last = HubError(f"AivisHub answered {exc.status} for {what}")
        except (TimeoutError, asyncio.TimeoutError) as exc:
            last = HubError(f"AivisHub did not answer in time for {what}", Code.HUB_UNREACHABLE)
            last.__cause__ = exc
        except aiohttp.ClientError as exc:
            last = HubError(
                f"AivisHub could not be reached for {what} ({exc})", Code.HUB_UNREACHABLE
            )
        _LOGGER.warning("%s (try %d of %d)", last, n + 1, TRIES)
        if n + 1 < TRIES:
            await asyncio.sleep(0.5 * (n + 1))
    assert last is not None
    raise last


async def fetch_model(api: str, uuid: str, *, connect: float, read: float) -> HubModel:
    """The model's facts from the hub (`HubError` naming the cause)."""

    async def attempt() -> HubModel:
        async with aiohttp.ClientSession(timeout=_timeout(connect, read)) as session:
            async with session.get(f"{api}/aivm-models/{uuid}", raise_for_status=True) as r:
                try:
                    data = await r.json(content_type=None)
                except ValueError as exc:
                    raise HubError(f"AivisHub answered no JSON for model {uuid}") from exc
                return _model(uuid, data)

    result: HubModel = await _retrying(f"model {uuid}", attempt)
    return result


def _redirect_allowed(api: str, target: str) -> bool:
    """A redirect is followed to the API's own scheme, host and port, or over https to a
    host of the hub's domain family."""
    base, url = urlparse(api), urlparse(target)
    if (url.scheme, url.hostname, url.port) == (base.scheme, base.hostname, base.port):
        return True
    host = (url.hostname or "").lower()
    return url.scheme == "https" and (host == HUB_DOMAIN or host.endswith("." + HUB_DOMAIN))


@contextlib.asynccontextmanager
async def _get_file(
    session: aiohttp.ClientSession, api: str, uuid: str
) -> AsyncIterator[aiohttp.ClientResponse]:
    """The file's response, redirects followed by `_redirect_allowed` alone."""
    url = f"{api}/aivm-models/{uuid}/download?model_type=AIVMX"
    for _ in range(MAX_REDIRECTS + 1):
        async with session.get(url, allow_redirects=False) as r:
            if r.status in (301, 302, 303, 307, 308):
                target = urljoin(url, r.headers.get("Location", ""))
                if not _redirect_allowed(api, target):
                    host = urlparse(target).hostname or target
                    raise _Mismatch(
                        f"AivisHub sent the file of model {uuid} to {host}, which is not "
                        f"AivisHub's; it is not fetched"
                    )
                url = target
                continue
            r.raise_for_status()
            yield r
            return
    raise _Mismatch(f"AivisHub redirected the file of model {uuid} more than {MAX_REDIRECTS} times")


async def download(
    api: str,
    model: HubModel,
    dest: Path,
    *,
    connect: float,
    read: float,
    progress: Callable[[int, int | None], None],
    max_bytes: int,
) -> None:
    """The model's `.aivmx` into `dest` (replaced on each try), checked against the hub's
    size and SHA-256 as it streams: stopped at the first byte past the declared size, or past
    `max_bytes` when none is declared; `HubError` (the file removed) when it does not match.
    Cancelling the calling task stops it at once (the file removed)."""
    limit = model.file_size if model.file_size is not None else max_bytes

    async def attempt() -> None:
        digest = hashlib.sha256()
        done = 0
        async with (
            aiohttp.ClientSession(timeout=_timeout(connect, read)) as session,
            _get_file(session, api, model.uuid) as r,
        ):
            total = model.file_size or r.content_length
            if total is not None and total > limit:
                raise _Mismatch(_too_large(model, total, limit), Code.TOO_LARGE)
            progress(0, total)
            try:
                with dest.open("wb") as f:
                    async for chunk in r.content.iter_chunked(_CHUNK):
                        done += len(chunk)
                        if done > limit:
                            raise _Mismatch(_too_large(model, done, limit), Code.TOO_LARGE)
                        f.write(chunk)
                        digest.update(chunk)
                        progress(done, total)
            except OSError as exc:
                if not is_disk_full(exc):
                    raise
                raise _Mismatch(_disk_full(model, dest, done, total, exc), Code.DISK_FULL) from None
        if model.file_size is not None and done != model.file_size:
            raise _Mismatch(
                f"the download of {model.name} has {done} bytes, AivisHub says "
                f"{model.file_size} (file_size)"
            )
        if model.checksum is not None and digest.hexdigest() != model.checksum:
            raise _Mismatch(
                f"the download of {model.name} does not match AivisHub's SHA-256 checksum"
            )

    try:
        await _retrying(f"the file of model {model.uuid}", attempt)
    except _Mismatch as exc:
        dest.unlink(missing_ok=True)
        raise HubError(str(exc), exc.code) from None
    except BaseException:
        dest.unlink(missing_ok=True)
        raise


class _Mismatch(HayakoeError):
    """Not retried: the hub's file is not what it says."""

    def __init__(self, message: str, code: Code = Code.HUB_ERROR) -> None:
        super().__init__(message)
        self.code = code


def _too_large(model: HubModel, size: int, limit: int) -> str:
    declared = "the size AivisHub declared (file_size)" if model.file_size else "the limit"
    return f"the download of {model.name} passed {declared}: {size} bytes of {limit}; stopped"


def _disk_full(model: HubModel, dest: Path, done: int, total: int | None, exc: OSError) -> str:
    size = f" of {total / 2**20:.0f} MB" if total else ""
    why = "a file size limit" if exc.errno == errno.EFBIG else "its disk is full"
    return (
        f"the download of {model.name} stopped after {done / 2**20:.1f} MB{size}: "
        f"{dest.parent.parent} cannot hold it ({why}: {exc.strerror})"
    )
