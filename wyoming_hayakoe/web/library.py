"""The voice library's endpoints (`wyoming_hayakoe.library`), behind the page's guards
(`security`: same-origin writes, the token off loopback); documented in docs/web.md.

| method, path | answers |
| --- | --- |
| GET /api/library | voices (size, version, license, int8, update_available, served), jobs |
| GET /api/library?check=1 | the same, AivisHub asked first (10 s at most; one per 2 s) |
| POST /api/library/install | JSON ``{"source", "name"?}`` or multipart ``file`` → 202 ``{"job"}`` |
| GET /api/library/jobs/ID | the job: state, bytes, total, error, error_code, voices, int8 |
| POST /api/library/jobs/ID/cancel | cancel a job not loading yet (final) |
| POST /api/library/jobs/ID/dismiss | a finished job leaves the listing |
| POST /api/library/remove | ``{"name"}`` → ``{"removed": [voices]}`` |
| POST /api/library/update | ``{"name"}`` → 202 ``{"job"}`` (AivisHub voices) |

The library's errors carry a code and no status: `STATUS` is the one table that maps them.
An upload is streamed to disk as it arrives (never held whole in memory), each chunk counted
against ``--library-max-upload`` with every other upload arriving or queued
(`library.uploads`); a failed upload removes its file at once. The page's other endpoints
keep their 512 KiB limit.
"""

from __future__ import annotations

import logging
from pathlib import Path

from aiohttp import BodyPartReader, MultipartReader, web

from ..library.errors import Code, LibraryError
from ..library.manager import CHECK_WAIT_S, Library
from ..library.naming import MAX_NAME, check_name
from ..library.uploads import Reservation
from .api import STATE
from .errors import ApiError, Handler, read_json_object
from .forms import read_form

__all__ = ["STATUS", "add_library_routes"]

_LOGGER = logging.getLogger(__name__)

_CHUNK = 1 << 16

STATUS: dict[Code, int] = {
    Code.NAME_INVALID: 400,
    Code.SOURCE_INVALID: 400,
    Code.FILE_INVALID: 400,
    Code.NAME_TAKEN: 409,
    Code.ALREADY_INSTALLED: 409,
    Code.CONFIGURED_VOICE: 409,
    Code.IN_USE: 409,
    Code.JOB_ENDED: 409,
    Code.JOB_BUSY: 409,
    Code.NOT_IN_LIBRARY: 404,
    Code.JOB_NOT_FOUND: 404,
    Code.LIBRARY_OFF: 404,
    Code.NOT_SUPPORTED: 422,
    Code.MEMORY: 507,
    Code.DISK_FULL: 507,
    Code.TOO_LARGE: 413,
    Code.QUEUE_FULL: 429,
    Code.THROTTLED: 429,
    Code.HUB_UNREACHABLE: 502,
    Code.SOURCE_UNREACHABLE: 502,
    Code.HUB_ERROR: 502,
    Code.BERT_MISSING: 503,
    Code.LOAD_FAILED: 500,
    Code.INTERNAL: 500,
}
"""A library error's code → its HTTP status (the one place)."""


def _library(request: web.Request) -> Library:
    library = request.app[STATE].catalog.library
    if library is None:
        raise LibraryError(Code.LIBRARY_OFF, "the voice library is off (--no-library)", "library")
    return library


def _mapped(handler: Handler) -> Handler:
    async def run(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except LibraryError as exc:
            raise ApiError(STATUS[exc.code], exc.code.value, exc.message, exc.field) from None

    return run


async def listing(request: web.Request) -> web.Response:
    library = _library(request)
    if request.query.get("check", "").lower() in ("1", "true", "yes"):
        await library.check_updates(wait=CHECK_WAIT_S, page=True)
    return web.json_response(library.listing())


async def install(request: web.Request) -> web.Response:
    library = _library(request)
    if request.content_type == "multipart/form-data":
        return await _upload(request, library)
    data = await read_json_object(request)
    job = library.install(data.get("source"), data.get("name") or None)
    return web.json_response({"job": job.id}, status=202)


async def _name_part(part: BodyPartReader) -> str | None:
    """A form's ``name`` part, read no further than a name can be long."""
    raw = await part.read_chunk(4 * MAX_NAME + 1)
    if len(raw) > 4 * MAX_NAME or await part.read_chunk(1):
        raise LibraryError(
            Code.NAME_INVALID, f"name: at most {MAX_NAME} characters are taken", "name"
        )
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise LibraryError(Code.NAME_INVALID, "name: not UTF-8 text", "name") from None
    return check_name(text) if text else None


async def _stream(part: BodyPartReader, path: Path, filename: str, room: Reservation) -> int:
    size = 0
    with path.open("wb") as f:
        while chunk := await part.read_chunk(_CHUNK):
            room.take(len(chunk))  # too_large past the room all uploads share
            size += len(chunk)
            f.write(chunk)
    if size == 0:
        raise LibraryError(Code.FILE_INVALID, f"{filename}: the file is empty", "file")
    return size


async def _upload(request: web.Request, library: Library) -> web.Response:
    reader = await read_form(request)  # an unreadable part a 400 naming it
    name: str | None = None
    upload: tuple[Path, str] | None = None
    room: Reservation | None = None
    try:
        while (part := await reader.next()) is not None:
            if isinstance(part, MultipartReader):
                continue
            if part.name == "name":
                name = await _name_part(part)
            elif part.name == "file" and upload is None:
                filename = Path(part.filename or "upload.aivmx").name
                room = library.upload_room(filename)
                path = library.upload_path(filename)
                upload = (path, filename)  # removed below if anything fails from here on
                await _stream(part, path, filename, room)
        if upload is None:
            raise LibraryError(Code.FILE_INVALID, "file: no file in the form", "file")
        job = library.install_upload(upload[0], upload[1], name)
    except BaseException:
        if upload is not None:
            upload[0].unlink(missing_ok=True)
        raise
    finally:  # the queued job counts its file from here on
        if room is not None:
            room.release()
    return web.json_response({"job": job.id}, status=202)


async def job(request: web.Request) -> web.Response:
    return web.json_response(_library(request).job(request.match_info["id"]))


async def cancel(request: web.Request) -> web.Response:
    return web.json_response(_library(request).cancel(request.match_info["id"]))


async def dismiss(request: web.Request) -> web.Response:
    _library(request).dismiss(request.match_info["id"])
    return web.json_response({"dismissed": request.match_info["id"]})


async def remove(request: web.Request) -> web.Response:
    library = _library(request)
    data = await read_json_object(request)
    removed = await library.remove(data.get("name"))
    return web.json_response({"removed": removed})


async def update(request: web.Request) -> web.Response:
    library = _library(request)
    data = await read_json_object(request)
    job = library.update(data.get("name"))
    return web.json_response({"job": job.id}, status=202)


def add_library_routes(app: web.Application) -> None:
    app.router.add_get("/api/library", _mapped(listing))
    app.router.add_post("/api/library/install", _mapped(install))
    app.router.add_get("/api/library/jobs/{id}", _mapped(job))
    app.router.add_post("/api/library/jobs/{id}/cancel", _mapped(cancel))
    app.router.add_post("/api/library/jobs/{id}/dismiss", _mapped(dismiss))
    app.router.add_post("/api/library/remove", _mapped(remove))
    app.router.add_post("/api/library/update", _mapped(update))
