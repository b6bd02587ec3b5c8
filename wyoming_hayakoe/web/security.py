"""Who may use the page, and how: one aiohttp middleware, checked in this order.

1. Ingress mode: only the Supervisor's ingress proxy (`HttpSettings.allowed_peers`) is served
   (403 for any other peer); Home Assistant has checked the user's login before proxying.
2. Token (when configured): ``Authorization: Bearer T``, the cookie a first ``?token=T``
   visit sets, compared with `hmac.compare_digest` (401 otherwise).
3. Every POST is same-origin: an ``Origin`` header must name this page's origin, a
   ``Sec-Fetch-Site`` header must be ``same-origin``, and the body must be JSON or CSV
   (403/415 otherwise) — a form on another site cannot post here.
4. Every answer carries a strict Content-Security-Policy (nothing from elsewhere).

Body sizes are bounded by the application's ``client_max_size`` (413).
"""

from __future__ import annotations

import hmac
import logging
import re
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware

from .options import HttpSettings

__all__ = ["TOKEN_COOKIE", "add_security_headers", "ingress_base", "security_middleware"]

_LOGGER = logging.getLogger(__name__)

TOKEN_COOKIE = "hayakoe_token"
_INGRESS_PATH = re.compile(r"^/api/hassio_ingress/[A-Za-z0-9_\-]+$")
_WRITE_TYPES = ("application/json", "text/csv")
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "media-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'self'"
)
_UPLOAD_PATH = "/api/library/install"
"""The one endpoint that takes a multipart form (a voice file, `web.library`), same-origin
like every write."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def ingress_base(request: web.Request, http: HttpSettings) -> str:
    """The ``X-Ingress-Path`` prefix in ingress mode (checked), else ''."""
    if not http.ingress:
        return ""
    path = request.headers.get("X-Ingress-Path", "").rstrip("/")
    return path if _INGRESS_PATH.match(path) else ""


def _same_token(given: str | None, token: str) -> bool:
    if not given:
        return False
    return hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8"))


def _refuse(request: web.Request, status: int, message: str) -> web.Response:
    if request.path.startswith("/api/"):
        return web.json_response({"error": message}, status=status)
    return web.Response(status=status, text=message, content_type="text/plain")


def _origin_ok(request: web.Request, http: HttpSettings) -> bool:
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site != "same-origin":
        return False
    origin = request.headers.get("Origin")
    if origin is None:
        return True  # not a browser (or a same-origin GET-like request): no cross-site risk
    netloc = urlsplit(origin).netloc.lower()
    hosts = {request.host.lower()}
    if http.ingress:  # Home Assistant forwards the browser's host; only it reaches us here
        forwarded = request.headers.get("X-Forwarded-Host", "")
        hosts.add(forwarded.split(",", 1)[0].strip().lower())
    return bool(netloc) and netloc in hosts


def security_middleware(http: HttpSettings) -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if http.ingress and request.remote not in http.allowed_peers:
            _LOGGER.warning("Web page: refused %s (not the ingress proxy)", request.remote)
            return _refuse(request, 403, "only Home Assistant's ingress proxy is served")
        if http.token is not None:
            bearer = request.headers.get("Authorization", "")
            given = bearer[7:] if bearer.startswith("Bearer ") else None
            query = request.query.get("token")
            if query is not None and request.method == "GET" and _same_token(query, http.token):
                # first visit with ?token=: keep it in a cookie, drop it from the address
                response = web.HTTPFound(request.path.rsplit("/", 1)[-1] or "./")
                response.set_cookie(
                    TOKEN_COOKIE, http.token, httponly=True, samesite="Strict", path="/"
                )
                raise response
            if not (
                _same_token(given, http.token)
                or _same_token(request.cookies.get(TOKEN_COOKIE), http.token)
            ):
                return _refuse(request, 401, "token required (open the page with ?token=...)")
        if request.method not in ("GET", "HEAD"):
            if request.method != "POST":
                return _refuse(request, 405, "only GET and POST")
            if not _origin_ok(request, http):
                _LOGGER.warning(
                    "Web page: refused a cross-site %s from origin %s",
                    request.path,
                    request.headers.get("Origin"),
                )
                return _refuse(request, 403, "cross-site request refused")
            upload = request.path == _UPLOAD_PATH and request.content_type == "multipart/form-data"
            if request.content_type not in _WRITE_TYPES and not upload:
                return _refuse(request, 415, "send application/json (or text/csv to import)")
        return await handler(request)

    return middleware


async def add_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare`: every answer, streamed ones included."""
    response.headers.setdefault("Content-Security-Policy", _CSP)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
