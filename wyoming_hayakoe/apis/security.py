"""Who may use the engine APIs: the page's rules (`wyoming_hayakoe.web.security`).

1. No token: the ``Host`` header names the bound address, ``localhost``, a loopback address
   or an allowed name (a name rebound to 127.0.0.1 by a web page reaches nothing): 403.
2. A token: ``Authorization: Bearer T`` (OpenAI clients send their API key so): 401; but a
   ``GET``/``HEAD`` of the portal page (`portal.PUBLIC_PATHS`) is answered without it (Home
   Assistant's VOICEVOX integration checks ``GET /``; the page then shows no version).
3. A write from a browser is same-origin: ``Origin`` (when sent) names an allowed host on
   the port asked, ``Sec-Fetch-Site`` (when sent) is ``same-origin``: 403 otherwise. Clients
   that are not browsers send neither.
4. Local apps, as AivisSpeech Engine's default CORS mode allows them: a page served from
   this machine (``http://localhost:3000``, ``http://127.0.0.1:…``, an ``app://`` Electron
   page, e.g. an AITuber app) may call the APIs from the browser: its writes pass 3., its
   preflight ``OPTIONS`` is answered without the token, and answers carry
   ``Access-Control-Allow-Origin`` for it (`add_cors_headers`). A page from elsewhere gets
   no such header, so the browser keeps the answer from it.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware

from ..web.options import HttpSettings, is_loopback
from ..web.security import host_allowed, origin_on_allowed_host, split_host
from .errors import Refused
from .options import EngineApiSettings
from .portal import PUBLIC_PATHS, TOKEN_GIVEN

__all__ = ["add_cors_headers", "local_app", "security_middleware"]

_LOGGER = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _token_ok(request: web.Request, token: str) -> bool:
    given = request.headers.get("Authorization", "")
    if not given.startswith("Bearer "):
        return False
    return hmac.compare_digest(given[7:].strip().encode(), token.encode())


def local_app(origin: str | None) -> bool:
    """Whether `origin` is a page of this machine (see the module text, 4.)."""
    if not origin:
        return False
    parts = urlsplit(origin)
    if parts.scheme == "app":
        return True
    if parts.scheme not in ("http", "https"):
        return False
    return is_loopback((parts.hostname or "").rstrip("."))


def _origin_ok(request: web.Request, names: HttpSettings, token: str | None) -> bool:
    if local_app(request.headers.get("Origin")):
        return True
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    parts = urlsplit(origin)
    if token is not None:
        return parts.netloc.lower() == request.host.lower()
    return origin_on_allowed_host(request, origin, names)


def security_middleware(api: EngineApiSettings) -> Middleware:
    names = HttpSettings(host=api.host, port=api.port, allowed_hosts=api.allowed_hosts)

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method == "OPTIONS" and local_app(request.headers.get("Origin")):
            return web.Response(status=204)  # a local app's preflight (headers: add_cors_headers)
        if api.token is None:
            found = split_host(request.headers.get("Host", ""))
            if found is None or not host_allowed(found[0], names):
                _LOGGER.warning(
                    "Engine API: refused %s %s for host %r",
                    request.method,
                    request.path,
                    request.headers.get("Host", "")[:100],
                )
                raise Refused(403, "this API answers only to its own address or localhost")
        elif _token_ok(request, api.token):
            request[TOKEN_GIVEN] = True
        elif request.method not in ("GET", "HEAD") or request.path not in PUBLIC_PATHS:
            raise Refused(401, "token required (Authorization: Bearer TOKEN)")
        if request.method not in ("GET", "HEAD", "OPTIONS") and not _origin_ok(
            request, names, api.token
        ):
            _LOGGER.warning("Engine API: refused a cross-site %s", request.path)
            raise Refused(403, "cross-site request refused")
        return await handler(request)

    return middleware


async def add_cors_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare`: a local app's page may read the answer (module text, 4.)."""
    origin = request.headers.get("Origin")
    if not local_app(origin):
        return
    assert origin is not None
    response.headers["Access-Control-Allow-Origin"] = origin
    response.headers["Vary"] = "Origin"
    if request.method == "OPTIONS":
        response.headers["Access-Control-Allow-Methods"] = "GET, POST, PUT, DELETE, OPTIONS"
        response.headers["Access-Control-Allow-Headers"] = "Authorization, Content-Type"
        response.headers["Access-Control-Max-Age"] = "600"
