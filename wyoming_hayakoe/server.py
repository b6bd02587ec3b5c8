"""The server's life: serve the voices `voices` builds from `Settings`, listen, advertise,
shut down cleanly.

`HayakoeServer` runs in any event loop (tests start it in-process on port 0);
`run_server` is what the command line runs (signals, logging).

Graceful shutdown (SIGTERM/SIGINT): withdraw from zeroconf, stop accepting connections,
refuse new requests on open ones (``error`` code ``shutting-down``), let the requests in
flight finish (each gets its ``audio-stop``) for up to ``--drain-timeout`` seconds, then
close every connection and exit 0. A second signal skips the rest of the wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from wyoming.error import Error
from wyoming.event import async_write_event

from engine import Speaker, __version__
from engine.heap import limit_malloc_arenas
from engine.text.userdict_watch import reload_user_dictionary

from .admission import Admission
from .context import ServerContext
from .events import EventLimits
from .handler import HayakoeHandler
from .info import InfoAnswer
from .memory import IdleHeapTrim
from .net.ratelog import RateLimitedLog
from .settings import Settings
from .voices import attach_library, build_catalog, prepare_tts
from .zeroconf import ZeroconfAdvertiser

if TYPE_CHECKING:
    from .apis.app import EngineApiServer
    from .web.api import WebState
    from .web.app import WebServer
    from .web.dictionary import PageDictionary
    from .web.options import HttpSettings

__all__ = ["HayakoeServer", "run_server"]

_LOGGER = logging.getLogger(__name__)

_STOP_GRACE_S = 5.0
_REFUSE_WRITE_S = 1.0  # the most a refused connection is given to take its error


class HayakoeServer:
    """Listens on `settings.uri` and serves Wyoming TTS with the given speakers."""

    def __init__(self, settings: Settings, speakers: Mapping[str, Speaker]) -> None:
        self.settings = settings
        catalog = build_catalog(settings, speakers)  # raises PresetError, naming the preset
        self.context = ServerContext(
            catalog=catalog,
            info=InfoAnswer(catalog, streaming=settings.streaming),
            samples_per_chunk=settings.samples_per_chunk,
            bounds=settings.bounds,
            stream_quiet=settings.stream_quiet,
            limits=EventLimits(
                max_data=settings.max_event_data_bytes,
                max_payload=settings.max_event_payload_bytes,
                max_header=settings.connections.max_event_header_bytes,
                event_timeout=settings.connections.event_timeout,
                write_timeout=settings.connections.write_timeout,
            ),
            admission=Admission(settings.max_queue),
        )
        admission = self.context.admission
        self._heap_trim = IdleHeapTrim(  # the voices served now (the library changes them)
            lambda: (
                admission.in_flight == 0
                and not any(s.lock.locked() for s in catalog.speakers.values())
            )
        )
        admission.on_idle = self._heap_trim
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._refusals = RateLimitedLog(_LOGGER)
        self._zeroconf: ZeroconfAdvertiser | None = None
        self._stdio_task: asyncio.Task[None] | None = None
        self.web: WebServer | None = None
        """The web page (``--http``), started with the server."""
        self.engine_api: EngineApiServer | None = None
        """The VOICEVOX / AivisSpeech and OpenAI APIs (``--engine-api-port``)."""
        self.host: str | None = None
        self.port: int | None = None

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Bind and start serving (returns at once), then advertise with zeroconf."""
        uri = urlparse(self.settings.uri)
        limit = self.context.limits.max_line
        if uri.scheme == "tcp":
            self._server = await asyncio.start_server(
                self._on_connection, host=uri.hostname, port=uri.port, limit=limit
            )
            sockname = self._server.sockets[0].getsockname()
            self.host, self.port = uri.hostname, int(sockname[1])
            _LOGGER.info("Listening on tcp://%s:%s", uri.hostname, self.port)
        elif uri.scheme == "unix":
            path = uri.path
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            self._server = await asyncio.start_unix_server(
                self._on_connection, path=path, limit=limit
            )
            _LOGGER.info("Listening on unix://%s", path)
        elif uri.scheme == "stdio":
            self._stdio_task = asyncio.create_task(self._serve_stdio(limit))
        else:
            raise ValueError(f"unsupported URI {self.settings.uri!r}")
        if self.settings.http is not None:
            from .web.app import WebServer  # aiohttp only when the page is on

            self.web = WebServer(self._web_state(self.settings.http), self.settings.connections)
            await self.web.start()
        if self.settings.engine_api is not None:
            from .apis.app import EngineApiServer, api_state_for  # aiohttp only when on

            self.engine_api = EngineApiServer(
                api_state_for(
                    self.settings.engine_api,
                    self.context,
                    self._dictionary(),
                    self.settings.rewrite,
                ),
                self.settings.connections,
                query_text=self.settings.max_text_length,
            )
            await self.engine_api.start()
        if self.settings.zeroconf_name and self.port is not None and self.host is not None:
            self._zeroconf = ZeroconfAdvertiser(
                self.settings.zeroconf_name,
                self.port,
                self.host,
                interfaces=self.settings.zeroconf_interfaces,
                properties={"version": __version__},
            )
            try:
                await self._zeroconf.start()
            except Exception as exc:  # noqa: BLE001 - serving matters more than discovery
                _LOGGER.error("Zeroconf registration failed: %s", exc)
                self._zeroconf = None

    def _web_state(self, http: HttpSettings) -> WebState:
        """The page's state; the page shows the engine APIs' style IDs, from their one source,
        and the port they are bound to (the page's part imports nothing of the APIs')."""
        from .apis.style_ids import style_table
        from .web.app import state_for

        return state_for(
            self.settings,
            http,
            self.context,
            style_ids=style_table,
            engine_api_port=lambda: None if self.engine_api is None else self.engine_api.port,
        )

    def _dictionary(self) -> PageDictionary:
        """The page's dictionary (the one the engine APIs edit too): the page's own object
        when it runs, else one on ``--http-dict`` (none: read-only, no file to edit)."""
        if self.web is not None:
            return self.web.state.dictionary
        from .web.dictionary import PageDictionary

        http = self.settings.http
        path = http.dictionary if http is not None else None
        return PageDictionary(path, [p for p in self.settings.user_dicts if p != path])

    async def wait_closed(self) -> None:
        """Block until the stdio peer leaves (stdio) or forever (tcp/unix)."""
        if self._stdio_task is not None:
            await self._stdio_task
        else:
            await asyncio.Event().wait()

    async def drain(self, timeout: float | None = None) -> bool:
        """The graceful part of stopping: withdraw from zeroconf, stop accepting, refuse new
        requests, and wait up to `timeout` seconds (default ``--drain-timeout``) for the
        requests in flight. True when none was left; `stop` ends the connections after."""
        timeout = self.settings.drain_timeout if timeout is None else timeout
        await self._withdraw()
        if self._server is not None:
            self._server.close()
        admission = self.context.admission
        admission.start_draining()
        if admission.in_flight:
            _LOGGER.info(
                "Draining: waiting up to %g s for %d request(s) in flight",
                timeout,
                admission.in_flight,
            )
        if await admission.wait_idle(timeout):
            return True
        _LOGGER.warning(
            "Drain timeout (%g s): %d request(s) still in flight are cut off",
            timeout,
            admission.in_flight,
        )
        return False

    async def _withdraw(self) -> None:
        if self._zeroconf is not None:
            with contextlib.suppress(Exception):
                await self._zeroconf.stop()
            self._zeroconf = None

    async def stop(self) -> None:
        """Withdraw from zeroconf, stop listening, end every connection (at once: call
        `drain` first for a graceful stop)."""
        self._heap_trim.cancel()
        if self.web is not None:
            await self.web.stop()
            self.web = None
        if self.engine_api is not None:
            await self.engine_api.stop()
            self.engine_api = None
        await self._withdraw()
        if self._server is not None:
            self._server.close()
        tasks = list(self._connections)
        if self._stdio_task is not None:
            tasks.append(self._stdio_task)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=_STOP_GRACE_S)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), timeout=_STOP_GRACE_S)
            self._server = None
        if urlparse(self.settings.uri).scheme == "unix":
            with contextlib.suppress(FileNotFoundError):
                os.unlink(urlparse(self.settings.uri).path)

    @property
    def zeroconf_service_name(self) -> str | None:
        return self._zeroconf.service_name if self._zeroconf is not None else None

    # -- connections -----------------------------------------------------------------------
    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        cap = self.settings.connections.max_connections
        if len(self._connections) >= cap:
            await self._refuse(writer, cap)
            return
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            await HayakoeHandler(reader, writer, self.context).run()
        except asyncio.CancelledError:
            pass
        except Exception:  # a bug: log once, the server goes on
            _LOGGER.exception("Connection handler failed")
        finally:
            if task is not None:
                self._connections.discard(task)

    async def _refuse(self, writer: asyncio.StreamWriter, cap: int) -> None:
        """A connection past ``--max-connections``: an ``error`` and closed at once."""
        peer = writer.get_extra_info("peername")
        self._refusals.warning(
            "Refusing a connection from %s: %d connections are open (--max-connections)",
            f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "client",
            cap,
        )
        text = f"too many connections: {cap} are open; try again later"
        with contextlib.suppress(Exception):
            await asyncio.wait_for(
                async_write_event(Error(text=text, code="too-many-connections").event(), writer),
                _REFUSE_WRITE_S,
            )
        if writer.transport.get_write_buffer_size():
            writer.transport.abort()  # it reads nothing: nothing more is owed
        else:
            writer.close()

    async def _serve_stdio(self, limit: int) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=limit)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, sys.stdout.buffer
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        await HayakoeHandler(reader, writer, self.context).run()


async def run_server(settings: Settings) -> int:
    """Load the voices, serve until SIGTERM/SIGINT (or stdio EOF), shut down cleanly; SIGHUP
    reloads the user dictionary files."""
    _LOGGER.debug("Settings: %r", settings)
    limit_malloc_arenas()  # before any worker thread allocates (flat memory over months)
    if settings.http is not None and settings.http.dictionary is not None:
        from .web.dictionary import ensure_dictionary_file

        ensure_dictionary_file(settings.http.dictionary)  # read like --user-dict, so it must be
    _LOGGER.info("Loading voices: %s", ", ".join(v.name for v in settings.voices))
    # the log has every progress line (at INFO): none of them also printed bare on stderr
    quiet = dataclasses.replace(settings.engine, progress=False)
    tts = await asyncio.to_thread(prepare_tts, dataclasses.replace(settings, engine=quiet))
    server = HayakoeServer(settings, tts.speakers)
    server.context.measurer = tts  # the page's status can take a speed measurement again
    library = attach_library(settings, tts, server.context.catalog)  # voices come and go
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    reloads: set[asyncio.Task[bool]] = set()

    def reload_dictionary() -> None:  # SIGHUP: off the event loop (compiling takes a while)
        _LOGGER.info("SIGHUP: reloading the user dictionary")
        task = asyncio.ensure_future(asyncio.to_thread(reload_user_dictionary))
        reloads.add(task)
        task.add_done_callback(reloads.discard)

    with contextlib.suppress(NotImplementedError, RuntimeError, AttributeError):
        loop.add_signal_handler(signal.SIGHUP, reload_dictionary)
    await server.start()
    _LOGGER.info("Ready (version %s)", __version__)
    waiter = asyncio.create_task(server.wait_closed())
    stopper = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if stopper.done():
            _LOGGER.info("Shutting down")
            tts.close()  # background int8 work stops; the drain never waits for it
            stop.clear()
            drained = asyncio.create_task(server.drain())
            again = asyncio.create_task(stop.wait())
            await asyncio.wait({drained, again, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if again.done() and not drained.done():
                _LOGGER.info("Second signal: stopping now")
            drained.cancel()
            again.cancel()
    finally:
        if library is not None:
            await library.close()
        tts.close()
        waiter.cancel()
        stopper.cancel()
        await server.stop()
        for name in ("SIGTERM", "SIGINT", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is None:
                continue
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signum)
    _LOGGER.info("Stopped")
    return 0
