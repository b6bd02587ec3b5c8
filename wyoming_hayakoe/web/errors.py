"""The `/api` error seam: one JSON shape for every error, one JSON body reader.

Every error answered under ``/api/`` is ``{"error": message, "code": code, "field": field}``
(``field`` only when one field is at fault; some errors add keys, e.g. ``available``). The
codes are stable and the page words them in its own language (docs/web.md lists them):

| code | status | when |
| --- | --- | --- |
| ``bad_json`` | 400 | the body is not JSON, not an object, not UTF-8, or nests too deep |
| ``bad_request`` | 400 | a field's value is wrong (``field`` names it) |
| ``too_large`` | 413 | the body (or an upload) is larger than allowed |
| ``disk_full`` | 507 | the disk (or the quota) is full |
| ``not_found`` | 404 | no such ``/api`` path |
| ``method_not_allowed`` | 405 | the path exists, the method does not |
| ``internal`` | 500 | a bug: the traceback is logged once |

`security` adds ``forbidden`` (403 cross-site or not the ingress proxy, 401 no token) and
``forbidden_host`` (403: a ``Host`` that is not the page's); the endpoints their own
(``unknown_voice``, ``busy``, ...), raised as `ApiError`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from engine.sources import is_disk_full

from ..errors import HayakoeError
from ..json_depth import MAX_JSON_DEPTH, JsonDepthError, loads_bounded
from .dictionary import FieldError

__all__ = [
    "API_PREFIX",
    "MAX_JSON_BODY",
    "ApiError",
    "Handler",
    "api_errors_middleware",
    "error_response",
    "mark_started",
    "read_json_object",
]

_LOGGER = logging.getLogger(__name__)

API_PREFIX = "/api/"
MAX_JSON_BODY = 512 * 1024
"""Largest JSON body `read_json_object` takes (bytes); the app's ``client_max_size`` too."""

_STARTED = web.RequestKey("response_started", bool)
_STATUS_CODES = {
    400: "bad_request",
    401: "forbidden",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "bad_request",
    507: "disk_full",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiError(HayakoeError):
    """An answer other than success: `status`, a stable `code`, a sentence, the field at
    fault (if one is), and any further keys of the JSON body (`extra`)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.extra: dict[str, Any] = dict(extra or {})

    def response(self) -> web.Response:
        return error_response(self.status, self.code, self.message, self.field, self.extra)


def error_response(
    status: int,
    code: str,
    message: str,
    field: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> web.Response:
    """``{"error": message, "code": code, "field": field}`` (no ``field`` when None)."""
    body: dict[str, Any] = {"error": message, "code": code}
    if field is not None:
        body["field"] = field
    if extra:
        body.update({k: v for k, v in extra.items() if k not in body})
    return web.json_response(body, status=status, headers={"Cache-Control": "no-store"})


async def read_json_object(
    request: web.Request, max_bytes: int = MAX_JSON_BODY, max_depth: int = MAX_JSON_DEPTH
) -> dict[str, Any]:
    """The request's body as a JSON object: at most `max_bytes` (413 ``too_large``),
    UTF-8, nested at most `max_depth` levels, an object (400 ``bad_json`` otherwise)."""
    if request.content_length is not None and request.content_length > max_bytes:
        raise ApiError(413, "too_large", f"the body is larger than {max_bytes} bytes")
    raw = await request.read()  # bounded by the app's client_max_size too (413)
    if len(raw) > max_bytes:
        raise ApiError(413, "too_large", f"the body is larger than {max_bytes} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(400, "bad_json", "the body is not UTF-8", "body") from None
    try:
        data = loads_bounded(text, max_depth)
    except JsonDepthError:
        raise ApiError(
            400, "bad_json", f"the body nests deeper than {max_depth} levels", "body"
        ) from None
    except ValueError:
        raise ApiError(400, "bad_json", "the body is not JSON", "body") from None
    if not isinstance(data, dict):
        raise ApiError(400, "bad_json", "the body must be a JSON object", "body")
    return data


async def mark_started(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare`: the answer's head is sent; an error after it cannot be
    answered as JSON any more (the connection is closed instead)."""
    request[_STARTED] = True


def _http_error(request: web.Request, exc: web.HTTPException) -> web.Response:
    status = exc.status
    code = _STATUS_CODES.get(status, "bad_request" if status < 500 else "internal")
    if status == 404:
        message = f"no such API path: {request.path}"
    elif status == 405:
        message = f"{request.method} not allowed here: {request.path}"
    elif status == 413:
        message = f"the body is larger than {request.client_max_size} bytes"
    else:
        text = exc.text if exc.content_type == "text/plain" else None
        message = (text or exc.reason).removeprefix(f"{status}: ")
    field = "path" if status in (404, 405) else None
    response = error_response(status, code, message, field)
    for name in ("Allow", "Retry-After"):
        if name in exc.headers:
            response.headers[name] = exc.headers[name]
    return response


@web.middleware
async def api_errors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error under ``/api/`` answered as JSON (see the module's table); other paths
    are left to aiohttp."""
    if not request.path.startswith(API_PREFIX):
        return await handler(request)
    try:
        return await handler(request)
    except ApiError as exc:
        return exc.response()
    except FieldError as exc:
        return error_response(400, "bad_request", str(exc), exc.field)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _http_error(request, exc)
    except (asyncio.CancelledError, ConnectionError):
        raise  # the client left (or the server stops): nobody to answer
    except Exception as exc:
        if request.get(_STARTED, False):
            raise  # the head is sent: aiohttp closes the connection
        if is_disk_full(exc):
            _LOGGER.warning(
                "Web page: %s %s: the disk is full (%s)", request.method, request.path, exc
            )
            return error_response(507, "disk_full", f"the disk is full: {exc}")
        _LOGGER.exception("Web page: %s %s failed", request.method, request.path)
        return error_response(500, "internal", "internal error (the server's log has the details)")
