"""AivisHub through its API only (never an arbitrary URL): a page URL or a bare UUID →
the model's facts (`HubModel`) → its `.aivmx` downloaded to a file, its size and SHA-256
checked as it streams.

Facts (AivisSpeech Engine's client): ``GET {api}/aivm-models/{uuid}`` answers JSON with
``name``, ``user``, ``speakers`` and ``model_files`` (``model_type`` AIVM/AIVMX, ``version``,
``file_size``, ``checksum``, ``license_type``, ``creators``, ``model_architecture``);
``GET {api}/aivm-models/{uuid}/download?model_type=AIVMX`` answers the file (redirects
followed). Three tries, none after a 403 or 404; a connect timeout (10 s) and a read
timeout. A cancelled download stops within `CANCEL_POLL_S` even while the hub sends
nothing; a disk that fills (or a file size limit) ends it with one sentence, not a retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import logging
import re
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import aiohttp

__all__ = ["HUB_HOST", "HubError", "HubModel", "download", "fetch_model", "hub_uuid"]

_LOGGER = logging.getLogger(__name__)

HUB_HOST = "hub.aivis-project.com"
TRIES = 3
CANCEL_POLL_S = 0.1
"""How often a download asks whether its job was cancelled while it waits for the hub."""
_CHUNK = 1 << 16
_DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_UUID = re.compile(r"^[0-9a-f]{8}-?(?:[0-9a-f]{4}-?){3}[0-9a-f]{12}$", re.IGNORECASE)


class HubError(RuntimeError):
    """A hub request failed; the message is one sentence naming the cause."""


class Cancelled(Exception):
    """The job was cancelled while downloading."""


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
            last = HubError(f"AivisHub did not answer in time for {what}")
            last.__cause__ = exc
        except aiohttp.ClientError as exc:
            last = HubError(f"AivisHub could not be reached for {what} ({exc})")
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


async def download(
    api: str,
    model: HubModel,
    dest: Path,
    *,
    connect: float,
    read: float,
    progress: Callable[[int, int | None], None],
    cancelled: Callable[[], bool],
) -> None:
    """The model's `.aivmx` into `dest` (replaced on each try), checked against the hub's
    size and SHA-256; `HubError` (the file removed) when it does not match."""

    async def attempt() -> None:
        digest = hashlib.sha256()
        done = 0
        async with aiohttp.ClientSession(timeout=_timeout(connect, read)) as session:
            url = f"{api}/aivm-models/{model.uuid}/download"
            async with session.get(url, params={"model_type": "AIVMX"}, raise_for_status=True) as r:
                total = model.file_size or r.content_length
                progress(0, total)
                try:
                    with dest.open("wb") as f:
                        async for chunk in r.content.iter_chunked(_CHUNK):
                            if cancelled():
                                raise Cancelled
                            f.write(chunk)
                            digest.update(chunk)
                            done += len(chunk)
                            progress(done, total)
                except OSError as exc:
                    if exc.errno not in _DISK_FULL:
                        raise
                    raise _Mismatch(_disk_full(model, dest, done, total, exc)) from None
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
        await _until_cancelled(_retrying(f"the file of model {model.uuid}", attempt), cancelled)
    except _Mismatch as exc:
        dest.unlink(missing_ok=True)
        raise HubError(str(exc)) from None
    except BaseException:
        dest.unlink(missing_ok=True)
        raise


class _Mismatch(Exception):
    """Not retried: the hub's file is not what it says."""


async def _until_cancelled(work: Any, cancelled: Callable[[], bool]) -> None:
    """Await `work`; `Cancelled` as soon as `cancelled()` says so, even while it waits for a
    hub that sends nothing (its file closed before this returns, so the caller can remove
    it). Cancelling the caller cancels `work` too."""
    task = asyncio.ensure_future(work)
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=CANCEL_POLL_S)
            if not task.done() and cancelled():
                raise Cancelled
        task.result()
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _disk_full(model: HubModel, dest: Path, done: int, total: int | None, exc: OSError) -> str:
    size = f" of {total / 2**20:.0f} MB" if total else ""
    why = "a file size limit" if exc.errno == errno.EFBIG else "its disk is full"
    return (
        f"the download of {model.name} stopped after {done / 2**20:.1f} MB{size}: "
        f"{dest.parent.parent} cannot hold it ({why}: {exc.strerror})"
    )
