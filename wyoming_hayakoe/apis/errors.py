"""The one place the engine APIs' errors become HTTP.

VOICEVOX routes answer as FastAPI does: a value a request may not have is 422
``{"detail": [{"loc": [...], "msg": ..., "type": ...}]}`` (`Invalid`), any other refusal
``{"detail": "one sentence"}`` with its status (`Refused`). Routes under ``/v1/`` (OpenAI)
answer ``{"error": {"message", "type", "param", "code"}}``. Every JSON answer has
``Content-Type: application/json`` exactly (some VOICEVOX clients parse a body only then).
A bug is a 500 with one logged traceback; the server goes on.

A request aiohttp cannot even parse (raw UTF-8 in the URL: ``curl "...?text=こんにちは"``
sends the bytes unencoded, and aiohttp's C parser refuses them, "Invalid char in url query")
never reaches a route: aiohttp answers it a plain-text 400 itself. `HANDLER_ARGS` gives the
application's request handlers a logger (`RequestErrorLog`) that writes such a refusal as one
warning line saying how to send the text, where aiohttp would log ``ERROR aiohttp.server`` and
a traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from ..errors import HayakoeError
from ..json_depth import MAX_JSON_DEPTH, JsonDepthError, loads_bounded
from ..speech import SpeechError, UnknownVoice
from ..speech.http import STATUS

__all__ = [
    "HANDLER_ARGS",
    "MAX_BODY",
    "OPENAI_PREFIX",
    "Invalid",
    "Refused",
    "RequestErrorLog",
    "errors_middleware",
    "json_answer",
    "read_json",
]

_LOGGER = logging.getLogger(__name__)

MAX_BODY = 1024 * 1024
"""Largest request body (an AudioQuery of a long text, a dictionary import)."""
OPENAI_PREFIX = "/v1/"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Invalid(HayakoeError):
    """A value the request may not have: where (`loc`, FastAPI's path: ``("query",
    "speaker")``, ``("body", "speedScale")``), one sentence, a type tag."""

    def __init__(self, loc: Sequence[str | int], msg: str, kind: str = "value_error") -> None:
        super().__init__(msg)
        self.loc = tuple(loc)
        self.msg = msg
        self.kind = kind


class Refused(HayakoeError):
    """A refusal other than a bad value: status and one sentence (`extra`: more keys of an
    OpenAI error, e.g. the voices that exist)."""

    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param


def json_answer(data: object, status: int = 200) -> web.Response:
    """JSON with ``Content-Type: application/json`` exactly (no charset parameter)."""
    body = json.dumps(data, ensure_ascii=False).encode("utf-8")
    response = web.Response(body=body, status=status)
    response.headers["Content-Type"] = "application/json"
    return response


async def read_json(request: web.Request) -> object:
    """The body as JSON, bounded in size and depth; `Invalid` (``body``) otherwise."""
    raw = await request.read()
    if len(raw) > MAX_BODY:
        raise Refused(413, f"the body is larger than {MAX_BODY} bytes")
    try:
        return loads_bounded(raw.decode("utf-8"), MAX_JSON_DEPTH)
    except JsonDepthError:
        raise Invalid(
            ("body",), f"nests deeper than {MAX_JSON_DEPTH} levels", "json_invalid"
        ) from None
    except (UnicodeDecodeError, ValueError):
        raise Invalid(("body",), "JSON decode error", "json_invalid") from None


def _openai(status: int, message: str, param: str | None, code: str | None) -> web.Response:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return json_answer(
        {"error": {"message": message, "type": kind, "param": param, "code": code}}, status
    )


def _answer(
    request: web.Request,
    status: int,
    message: str,
    param: str | None = None,
    invalid: Invalid | None = None,
) -> web.Response:
    if request.path.startswith(OPENAI_PREFIX):
        code = invalid.kind if invalid is not None else None
        return _openai(status, message, param, code)
    if invalid is not None:
        detail = [{"loc": list(invalid.loc), "msg": invalid.msg, "type": invalid.kind}]
        return json_answer({"detail": detail}, 422)
    return json_answer({"detail": message}, status)


@web.middleware
async def errors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except Invalid as exc:
        status = 400 if request.path.startswith(OPENAI_PREFIX) else 422
        param = str(exc.loc[-1]) if exc.loc else None
        return _answer(request, status, f"{param}: {exc.msg}", param, exc)
    except Refused as exc:
        return _answer(request, exc.status, exc.message, exc.param)
    except SpeechError as exc:  # the request service's refusals: one status table
        status = STATUS[exc.problem]
        if isinstance(exc, UnknownVoice) and not request.path.startswith(OPENAI_PREFIX):
            status = 404  # a VOICEVOX style ID whose voice left meanwhile: as an unknown ID
        return _answer(request, status, str(exc), exc.field)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        names = {404: "Not Found", 405: "Method Not Allowed", 413: "Request Entity Too Large"}
        return _answer(request, exc.status, names.get(exc.status, exc.reason))
    except (asyncio.CancelledError, ConnectionError):
        raise
    except Exception:
        _LOGGER.exception("Engine API: %s %s failed", request.method, request.path)
        return _answer(request, 500, "internal error (the server's log has the details)")


class RequestErrorLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's ``aiohttp.server`` logger for the engine APIs' connections: a request it
    could not parse (`HttpProcessingError`: a bad request line, raw UTF-8 in the URL) is one
    warning, without a traceback; anything else is logged as aiohttp logs it."""

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        if isinstance(exc_info, HttpProcessingError):
            said = (exc_info.message or type(exc_info).__name__).splitlines()[0].rstrip(": ")
            _LOGGER.warning(
                "Engine API: refused a request that could not be parsed (%s, answered %s); "
                "a text in the URL must be percent-encoded (curl --get --data-urlencode text=...)",
                said[:200],
                exc_info.code or 400,
            )
            return
        self.logger.exception(msg, *args, exc_info=exc_info, **kwargs)

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        return msg, kwargs


HANDLER_ARGS: Mapping[str, Any] = {"logger": RequestErrorLog(logging.getLogger("aiohttp.server"))}
"""`web.Application`'s ``handler_args`` for the engine APIs (`RequestErrorLog`)."""
