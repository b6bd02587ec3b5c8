"""The voice library's endpoints (`wyoming_hayakoe.library`), behind the page's guards
(`security`: same-origin writes, the token off loopback); documented in docs/web.md.

| method, path | answers |
| --- | --- |
| GET /api/library | voices (size, version, license, int8, update_available), jobs |
| GET /api/library?check=1 | the same, AivisHub asked for newer versions first (10 s at most) |
| POST /api/library/install | JSON ``{"source", "name"?}`` or multipart ``file`` → 202 ``{"job"}`` |
| GET /api/library/jobs/ID | the job: state, bytes, total, error, voices (int8 once ready) |
| POST /api/library/jobs/ID/cancel | cancel a job not loading yet |
| POST /api/library/remove | ``{"name"}`` → ``{"removed": [voices]}`` |
| POST /api/library/update | ``{"name"}`` → 202 ``{"job"}`` (AivisHub voices) |

An upload is streamed to disk as it arrives (never held whole in memory) with its own size
limit (``--library-max-upload``); the page's other endpoints keep their 512 KiB limit.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from aiohttp import BodyPartReader, web

from ..library.manager import CHECK_WAIT_S, Library, LibraryError
from .api import STATE

__all__ = ["add_library_routes"]

_LOGGER = logging.getLogger(__name__)

_CHUNK = 1 << 16


def _error(message: str, status: int = 400, field: str = "name") -> web.Response:
    return web.json_response({"error": message, "field": field}, status=status)


def _library(request: web.Request) -> Library:
    library = request.app[STATE].catalog.library
    if not isinstance(library, Library):
        raise LibraryError("the voice library is off (--no-library)", 404, "library")
    return library


async def _json(request: web.Request) -> dict[str, Any]:
    try:
        data = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise LibraryError("the body is not JSON", 400, "body") from None
    if not isinstance(data, dict):
        raise LibraryError("the body must be a JSON object", 400, "body")
    return data


def _guarded(handler: Any) -> Any:
    async def run(request: web.Request) -> web.StreamResponse:
        try:
            response: web.StreamResponse = await handler(request)
        except LibraryError as exc:
            return _error(str(exc), exc.status, exc.field)
        return response

    return run


async def listing(request: web.Request) -> web.Response:
    library = _library(request)
    if request.query.get("check", "").lower() in ("1", "true", "yes"):
        await library.check_updates(wait=CHECK_WAIT_S)
    return web.json_response(library.listing())


async def install(request: web.Request) -> web.Response:
    library = _library(request)
    if request.content_type == "multipart/form-data":
        return await _upload(request, library)
    data = await _json(request)
    source = data.get("source")
    if not isinstance(source, str):
        raise LibraryError("source: give an AivisHub page, a UUID or a voice name", 400, "source")
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise LibraryError("name must be a string", 400, "name")
    job = library.install(source, name or None)
    return web.json_response({"job": job.id}, status=202)


async def _upload(request: web.Request, library: Library) -> web.Response:
    reader = await request.multipart()
    name: str | None = None
    limit = library.options.max_upload
    while True:
        part = await reader.next()
        if part is None:
            break
        if not isinstance(part, BodyPartReader):
            continue
        if part.name == "name":
            name = (await part.text()).strip() or None
            continue
        if part.name != "file":
            continue
        filename = part.filename or "upload.aivmx"
        if not filename.lower().endswith((".aivmx", ".aivm")):
            raise LibraryError(f"{filename}: not an .aivmx or .aivm file", 400, "file")
        path = library.upload_path(filename)
        size = 0
        try:
            with path.open("wb") as f:
                while chunk := await part.read_chunk(_CHUNK):
                    size += len(chunk)
                    if size > limit:
                        raise LibraryError(
                            f"{filename}: larger than {limit // 2**20} MB (--library-max-upload)",
                            413,
                            "file",
                        )
                    f.write(chunk)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        if size == 0:
            path.unlink(missing_ok=True)
            raise LibraryError(f"{filename}: the file is empty", 400, "file")
        # a name part after the file part is read too
        while (rest := await reader.next()) is not None:
            if isinstance(rest, BodyPartReader) and rest.name == "name":
                name = (await rest.text()).strip() or None
        job = library.install_upload(path, filename, name)
        return web.json_response({"job": job.id}, status=202)
    raise LibraryError("file: no file in the form", 400, "file")


async def job(request: web.Request) -> web.Response:
    return web.json_response(_library(request).job(request.match_info["id"]))


async def cancel(request: web.Request) -> web.Response:
    return web.json_response(_library(request).cancel(request.match_info["id"]))


async def remove(request: web.Request) -> web.Response:
    library = _library(request)
    data = await _json(request)
    removed = await library.remove(data.get("name"))  # type: ignore[arg-type]
    return web.json_response({"removed": removed})


async def update(request: web.Request) -> web.Response:
    library = _library(request)
    data = await _json(request)
    job = library.update(data.get("name"))  # type: ignore[arg-type]
    return web.json_response({"job": job.id}, status=202)


def add_library_routes(app: web.Application) -> None:
    app.router.add_get("/api/library", _guarded(listing))
    app.router.add_post("/api/library/install", _guarded(install))
    app.router.add_get("/api/library/jobs/{id}", _guarded(job))
    app.router.add_post("/api/library/jobs/{id}/cancel", _guarded(cancel))
    app.router.add_post("/api/library/remove", _guarded(remove))
    app.router.add_post("/api/library/update", _guarded(update))
