"""`HttpGuard`: what a slow, stuck or greedy client may hold on one HTTP port.

aiohttp bounds a request's line and headers in size but not in time, and a body not at all
in time; its keep-alive timeout is an hour. The guard sits between the listening socket and
aiohttp's protocol (`web.Server`, the documented protocol factory) and, per port:

- counts the open connections; one past ``http_max_connections`` gets ``503`` and is closed;
- closes a connection whose request line and headers have not all arrived
  ``http_header_timeout`` seconds after it opened, or after the next request's first byte
  (``408`` if part of them came; nothing when none did, as for a browser's spare socket);
- closes one whose body has not all arrived ``http_body_timeout`` seconds after its
  headers, plus a second per ``http_body_min_rate`` bytes received (an upload on a slow
  link goes on; a body dribbled a byte at a time does not);
- drops one that has read nothing of an answer for ``write_timeout`` seconds while the
  answer waits (the transport's write buffer full): the door's write fails as for a client
  that left, so its synthesis stops and its voice is free;
- hands aiohttp ``http_idle_timeout`` as its keep-alive timeout.

A door that streams its answer writes each piece with `write_bounded`, which fails at once
when the client has read nothing for the port's write timeout (`write_timeout_of`).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import streams, web

from ..errors import HayakoeError
from .options import ConnectionLimits
from .ratelog import RateLimitedLog

__all__ = [
    "GUARD",
    "ClientStalled",
    "GuardedSite",
    "HttpGuard",
    "client_left",
    "write_bounded",
    "write_timeout_of",
]

_LOGGER = logging.getLogger(__name__)

_REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: text/plain\r\n"
    b"Retry-After: 1\r\nContent-Length: 26\r\n\r\ntoo many open connections\n"
)
_TOO_SLOW = (
    b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 24\r\n\r\nthe request came slowly\n"
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ClientStalled(HayakoeError, ConnectionResetError):
    """The client read nothing of a streamed answer for the write timeout; the connection
    is dropped. A `ConnectionResetError`, so that a door stops as for a client that left."""


class _Phase(enum.Enum):
    HEAD = "head"
    """Waiting for a request's line and headers (timed from the start or the first byte)."""
    REQUEST = "request"
    """A request is handled (its body timed until it has all arrived)."""
    IDLE = "idle"
    """Between requests: aiohttp's keep-alive timeout applies."""


def _peer(transport: asyncio.BaseTransport) -> str:
    peer = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer or "client")


class _GuardedConnection(asyncio.Protocol):
    """One connection: aiohttp's protocol (`inner`) behind timers that close it when the
    client is too slow."""

    def __init__(self, guard: HttpGuard, inner: asyncio.Protocol) -> None:
        self._guard = guard
        self._inner = inner
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._phase = _Phase.HEAD
        self._head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._write_timer: asyncio.TimerHandle | None = None
        self._body: streams.StreamReader | None = None
        self._body_started = 0.0
        self._next_head_pending = False

    # -- asyncio.Protocol, each passed on to aiohttp ----------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._guard._opened(transport, self)
        self._await_head()
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._phase is _Phase.IDLE:
            self._await_head()
        if self._phase is _Phase.HEAD:
            self._head_bytes += len(data)
        elif self._body is None or self._body.is_eof():
            self._next_head_pending = True  # a pipelined request's first bytes
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._head_timer, self._body_timer, self._write_timer):
            if timer is not None:
                timer.cancel()
        if self._transport is not None:
            self._guard._closed(self._transport)
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._write_timer is None:
            self._write_timer = self._loop.call_later(
                self._guard.limits.write_timeout, self.stalled
            )
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None
        self._inner.resume_writing()

    # -- what the guard's middleware says ---------------------------------------------------
    def request_started(self, body: streams.StreamReader) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self._phase = _Phase.REQUEST
        self._next_head_pending = False
        self._body = body
        self._body_started = self._loop.time()
        if not body.is_eof():
            self._body_timer = self._loop.call_later(
                self._guard.limits.http_body_timeout, self._check_body
            )

    def request_finished(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        self._body = None
        self._phase = _Phase.IDLE
        if self._next_head_pending:  # the next request has begun to arrive
            self._await_head()

    # -- timers ------------------------------------------------------------------------------
    def _await_head(self) -> None:
        self._phase = _Phase.HEAD
        self._head_bytes = 0
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self._loop.call_later(
            self._guard.limits.http_header_timeout, self._head_late
        )

    def _head_late(self) -> None:
        self._head_timer = None
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        if self._head_bytes:
            self._guard.timeouts.warning(
                "Closing an HTTP connection from %s on port %s: its request's headers did "
                "not arrive within %g s",
                _peer(transport),
                self._guard.name,
                self._guard.limits.http_header_timeout,
            )
            transport.write(_TOO_SLOW)
        self._close(transport)

    def _check_body(self) -> None:
        self._body_timer = None
        body, transport = self._body, self._transport
        if body is None or body.is_eof() or transport is None or transport.is_closing():
            return
        limits = self._guard.limits
        deadline = (
            self._body_started
            + limits.http_body_timeout
            + body.total_bytes / limits.http_body_min_rate
        )
        if self._loop.time() < deadline:
            self._body_timer = self._loop.call_at(deadline, self._check_body)
            return
        self._guard.timeouts.warning(
            "Closing an HTTP connection from %s on port %s: its request body did not arrive "
            "in time (%d bytes in %.0f s)",
            _peer(transport),
            self._guard.name,
            body.total_bytes,
            self._loop.time() - self._body_started,
        )
        transport.abort()

    def stalled(self) -> None:
        """The client has read nothing for the write timeout: one line, dropped."""
        if self._write_timer is not None:
            self._write_timer.cancel()
        self._write_timer = None
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        self._guard.timeouts.warning(
            "Closing an HTTP connection from %s on port %s: the client read nothing for %g s",
            _peer(transport),
            self._guard.name,
            self._guard.limits.write_timeout,
        )
        transport.abort()

    @staticmethod
    def _close(transport: asyncio.Transport) -> None:
        """Close, the little written first sent; at once if even that cannot go."""
        if transport.get_write_buffer_size():
            transport.abort()
        else:
            transport.close()


class _Refused(asyncio.Protocol):
    """A connection past the cap: ``503`` and closed."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.write(_REFUSED)
        _GuardedConnection._close(transport)


class HttpGuard:
    """One HTTP port's connections, counted and timed (`ConnectionLimits`); `name` says
    which port in log lines."""

    def __init__(self, limits: ConnectionLimits, name: str) -> None:
        self.limits = limits
        self.name = name
        self._open: dict[asyncio.BaseTransport, _GuardedConnection] = {}
        self._refusals = RateLimitedLog(_LOGGER)
        self.timeouts = RateLimitedLog(_LOGGER)
        """Where the timers' lines go (at most one per interval)."""

    @property
    def open_connections(self) -> int:
        return len(self._open)

    def handler_args(self) -> dict[str, Any]:
        """aiohttp's own limits to hand `web.AppRunner`: the keep-alive (idle) timeout."""
        return {"keepalive_timeout": self.limits.http_idle_timeout}

    def install(self, app: web.Application) -> None:
        """Before the app's runner is set up: the middleware that tells each connection when
        its request's headers have come and when it is answered (outermost, so that every
        answer counts), and the guard where `write_timeout_of` finds it."""
        app.middlewares.insert(0, self._middleware)
        app[GUARD] = self

    def protocol_factory(self, server: web.Server) -> Callable[[], asyncio.Protocol]:
        """The listening socket's protocol factory: aiohttp's `server` behind the guard."""

        def make() -> asyncio.Protocol:
            if len(self._open) >= self.limits.http_max_connections:
                self._refusals.warning(
                    "Refusing an HTTP connection on port %s: %d connections are open "
                    "(--http-max-connections)",
                    self.name,
                    len(self._open),
                )
                return _Refused()
            return _GuardedConnection(self, server())

        return make

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        connection = self._open.get(request.transport) if request.transport else None
        if connection is None:
            return await handler(request)
        connection.request_started(request.content)
        try:
            return await handler(request)
        except ClientStalled:  # `write_bounded` timed out: drop it now, if the timer has not
            connection.stalled()
            return web.Response(status=408)
        except ConnectionError:
            transport = request.transport
            if transport is not None and not transport.is_closing():
                raise
            # the client left, or the guard dropped it (its one line written): nothing can
            # be answered, and aiohttp would log it as an error with a traceback
            _LOGGER.debug("HTTP client on port %s gone mid-request", self.name)
            return web.Response(status=408)
        finally:
            connection.request_finished()

    def _opened(self, transport: asyncio.BaseTransport, connection: _GuardedConnection) -> None:
        self._open[transport] = connection

    def _closed(self, transport: asyncio.BaseTransport) -> None:
        self._open.pop(transport, None)


GUARD = web.AppKey("http_guard", HttpGuard)
"""The app's guard (set by `HttpGuard.install`)."""


class GuardedSite(web.BaseSite):
    """A TCP site whose connections pass through `guard` (aiohttp's `TCPSite` otherwise)."""

    def __init__(self, runner: web.AppRunner, host: str, port: int, guard: HttpGuard) -> None:
        super().__init__(runner)
        self._host = host
        self._port = port
        self._guard = guard
        self._listening: asyncio.Server | None = None

    @property
    def name(self) -> str:
        return f"http://{self._host}:{self.port}"

    @property
    def port(self) -> int:
        """The port bound (the one asked, or the one the system gave for 0)."""
        if self._listening is not None and self._listening.sockets:
            return int(self._listening.sockets[0].getsockname()[1])
        return self._port

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None  # set up before any site is made
        self._server = self._listening = await asyncio.get_running_loop().create_server(
            self._guard.protocol_factory(server),
            self._host,
            self._port,
            backlog=self._backlog,
            reuse_address=True,
        )


def client_left(request: web.BaseRequest) -> bool:
    """Whether the client of `request` has closed its connection (a whole answer's work
    stops then: nobody will read it)."""
    transport = request.transport
    return transport is None or transport.is_closing()


def write_timeout_of(request: web.BaseRequest) -> float:
    """The write timeout of the port `request` came on (the default without a guard)."""
    guard = request.app.get(GUARD) if isinstance(request, web.Request) else None
    return (guard.limits if guard is not None else ConnectionLimits()).write_timeout


async def write_bounded(response: web.StreamResponse, data: bytes, timeout: float) -> None:
    """Write `data` to a prepared streamed answer; `ClientStalled` when the client has read
    too little for it to go within `timeout` seconds (the guard drops the connection at the
    same moment). A door stops its work on it as on any `ConnectionResetError`."""
    try:
        await asyncio.wait_for(response.write(data), timeout)
    except asyncio.TimeoutError:
        response.force_close()
        raise ClientStalled(f"the client read nothing for {timeout:g} s") from None
