"""Who may use the page, and how: one aiohttp middleware, checked in this order.

1. Ingress mode: only the Supervisor's ingress proxy (`HttpSettings.allowed_peers`) is served
   (403 ``forbidden`` for any other peer); Home Assistant has checked the user's login.
2. No token (the page on loopback): the ``Host`` header must name the bound address,
   ``localhost``, a loopback address or a name of `HttpSettings.allowed_hosts`, with any port
   (403 ``forbidden_host`` otherwise). A web page whose own name an attacker rebinds to
   127.0.0.1 (DNS rebinding) sends its own name as ``Host`` and reaches nothing.
3. Token (when configured): ``Authorization: Bearer T``, the cookie a first ``?token=T``
   visit sets, compared with `hmac.compare_digest` (401 ``forbidden`` otherwise).
4. Every POST is same-origin: an ``Origin`` header must name an allowed host (no token: the
   names of 2., on the port the request was sent to; with a token: the request's host; in
   ingress mode also the browser's host that Home Assistant forwards), a ``Sec-Fetch-Site``
   header must be ``same-origin``, and the body must be JSON or CSV (403 ``forbidden``,
   415 ``bad_request`` otherwise): a form on another site cannot post here.
5. Every answer carries a strict Content-Security-Policy (nothing from elsewhere).

Refusals under ``/api/`` are JSON (`errors.error_response`); body sizes are bounded by the
application's ``client_max_size`` (413 ``too_large``).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import re
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware

from .errors import API_PREFIX, error_response
from .options import HttpSettings

__all__ = [
    "TOKEN_COOKIE",
    "add_security_headers",
    "host_allowed",
    "ingress_base",
    "origin_on_allowed_host",
    "security_middleware",
    "split_host",
]

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


def _refuse(request: web.Request, status: int, code: str, message: str) -> web.Response:
    if request.path.startswith(API_PREFIX):
        return error_response(status, code, message)
    return web.Response(status=status, text=message, content_type="text/plain")


def split_host(value: str) -> tuple[str, int | None] | None:
    """A ``Host`` header's name (lower case, IPv6 without brackets, no trailing dot) and
    port (None when absent); None when it is malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host, rest = value[1:end], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:]
    else:
        host, _, port_text = value.partition(":")
        if ":" in port_text:
            return None  # an IPv6 address without brackets
    if port_text and not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5):
        return None
    port = int(port_text) if port_text else None
    host = host.rstrip(".")
    return (host, port) if host else None


def host_allowed(host: str, http: HttpSettings) -> bool:
    """Whether `host` (as `split_host` gives it) is one the page answers to without a
    token: the bound address, ``localhost``, a loopback address, `http.allowed_hosts`."""
    if host in ("localhost", http.host.lower()) or host in http.allowed_hosts:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.compressed in http.allowed_hosts


def _host_ok(request: web.Request, http: HttpSettings) -> bool:
    given = request.headers.get("Host")
    found = split_host(given) if given is not None else None
    return found is not None and host_allowed(found[0], http)


def _origin_ok(request: web.Request, http: HttpSettings) -> bool:
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site != "same-origin":
        return False
    origin = request.headers.get("Origin")
    if origin is None:
        return True  # not a browser (or a same-origin GET-like request): no cross-site risk
    parts = urlsplit(origin)
    if http.token is None and not http.ingress:
        return origin_on_allowed_host(request, origin, http)
    netloc = parts.netloc.lower()
    hosts = {request.host.lower()}
    if http.ingress:  # Home Assistant forwards the browser's host; only it reaches us here
        forwarded = request.headers.get("X-Forwarded-Host", "")
        hosts.add(forwarded.split(",", 1)[0].strip().lower())
    return bool(netloc) and netloc in hosts


def origin_on_allowed_host(request: web.Request, origin: str, names: HttpSettings) -> bool:
    """Whether `origin` is one of the allowed names (the Host header was checked against
    them) on the port the request was sent to."""
    parts = urlsplit(origin)
    try:
        origin_port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return False
    given = split_host(request.headers.get("Host", ""))
    port = given[1] if given is not None and given[1] is not None else 80
    origin_host = (parts.hostname or "").rstrip(".")
    return bool(origin_host) and host_allowed(origin_host, names) and origin_port == port


def security_middleware(http: HttpSettings) -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        for check in (_peer_refusal, _token_refusal, _write_refusal):
            refusal = check(request, http)
            if refusal is not None:
                return refusal
        return await handler(request)

    return middleware


def _peer_refusal(request: web.Request, http: HttpSettings) -> web.Response | None:
    """Ingress: a peer that is not the proxy; no token: a `Host` that is not this page's."""
    if http.ingress and request.remote not in http.allowed_peers:
        _LOGGER.warning("Web page: refused %s (not the ingress proxy)", request.remote)
        return _refuse(request, 403, "forbidden", "only Home Assistant's ingress proxy is served")
    if http.token is None and not http.ingress and not _host_ok(request, http):
        _LOGGER.warning(
            "Web page: refused %s %s for host %r (not this page's address; "
            "--http-allowed-host adds a name)",
            request.method,
            request.path,
            request.headers.get("Host", "")[:100],
        )
        return _refuse(
            request,
            403,
            "forbidden_host",
            "this page answers only to its own address, localhost or a name given with "
            "--http-allowed-host",
        )
    return None


def _token_refusal(request: web.Request, http: HttpSettings) -> web.Response | None:
    """With a token: a request without it (a first visit with ``?token=`` is sent on to
    the page with the token in a cookie)."""
    if http.token is None:
        return None
    bearer = request.headers.get("Authorization", "")
    given = bearer[7:] if bearer.startswith("Bearer ") else None
    query = request.query.get("token")
    if query is not None and request.method == "GET" and _same_token(query, http.token):
        # first visit with ?token=: keep it in a cookie, drop it from the address
        response = web.HTTPFound(request.path.rsplit("/", 1)[-1] or "./")
        response.set_cookie(TOKEN_COOKIE, http.token, httponly=True, samesite="Strict", path="/")
        raise response
    if _same_token(given, http.token) or _same_token(request.cookies.get(TOKEN_COOKIE), http.token):
        return None
    return _refuse(request, 401, "forbidden", "token required (open the page with ?token=...)")


def _write_refusal(request: web.Request, http: HttpSettings) -> web.Response | None:
    """A write: only POST, from this page's origin, with a body type the page sends."""
    if request.method in ("GET", "HEAD"):
        return None
    if request.method != "POST":
        return _refuse(request, 405, "method_not_allowed", "only GET and POST")
    if not _origin_ok(request, http):
        _LOGGER.warning(
            "Web page: refused a cross-site %s from origin %s",
            request.path,
            request.headers.get("Origin"),
        )
        return _refuse(request, 403, "forbidden", "cross-site request refused")
    upload = request.path == _UPLOAD_PATH and request.content_type == "multipart/form-data"
    if request.content_type not in _WRITE_TYPES and not upload:
        return _refuse(request, 415, "bad_request", "send application/json (or text/csv to import)")
    return None


async def add_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare`: every answer, streamed ones included."""
    response.headers.setdefault("Content-Security-Policy", _CSP)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
