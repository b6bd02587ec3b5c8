"""The engine APIs' aiohttp application and its life beside the Wyoming server (same
process and loop, a port of its own)."""

from __future__ import annotations

import logging

from aiohttp import web

from ..context import ServerContext
from ..net.http_guard import GuardedSite, HttpGuard
from ..net.options import ConnectionLimits
from ..web.dictionary import PageDictionary
from .errors import HANDLER_ARGS, MAX_BODY, errors_middleware
from .openai import add_openai_routes
from .options import EngineApiSettings
from .portal import add_portal_route
from .security import add_cors_headers, security_middleware
from .state import API_STATE, ApiState
from .voicevox import add_voicevox_routes

__all__ = ["EngineApiServer", "api_state_for", "build_api_app"]

_LOGGER = logging.getLogger(__name__)

DEFAULT_QUERY_TEXT = 4096
"""Characters of ``?text=`` the request line has room for unless told otherwise."""
_URL_BYTES_PER_CHAR = 9
"""A Japanese character in a URL: three UTF-8 bytes, each ``%XX``."""
_LINE_MARGIN = 2048
"""The rest of a request line: method, path, the other parameters, the version."""


def max_request_line(query_text: int = DEFAULT_QUERY_TEXT) -> int:
    """aiohttp's ``max_line_size`` (8190 by default, about 900 Japanese characters) with
    room for `query_text` URL-encoded Japanese characters in ``/audio_query?text=``."""
    return query_text * _URL_BYTES_PER_CHAR + _LINE_MARGIN


def build_api_app(state: ApiState) -> web.Application:
    """JSON errors outermost, then who may ask, then the routes."""
    app = web.Application(
        middlewares=[errors_middleware, security_middleware(state.settings)],
        client_max_size=MAX_BODY,
        handler_args=HANDLER_ARGS,
    )
    app[API_STATE] = state
    app.on_response_prepare.append(add_cors_headers)
    add_portal_route(app)
    add_voicevox_routes(app)
    add_openai_routes(app)
    return app


def api_state_for(
    settings: EngineApiSettings,
    context: ServerContext,
    dictionary: PageDictionary,
    rewrite: bool = True,
) -> ApiState:
    return ApiState(
        settings=settings,
        catalog=context.catalog,
        service=context.service,
        dictionary=dictionary,
        rewrite=rewrite,
    )


class EngineApiServer:
    """Serves the engine APIs on `settings.host`:`settings.port` until `stop`."""

    def __init__(
        self,
        state: ApiState,
        limits: ConnectionLimits | None = None,
        query_text: int = DEFAULT_QUERY_TEXT,
    ) -> None:
        self.state = state
        self.guard = HttpGuard(limits or ConnectionLimits(), "engine-api")
        """The port's connection cap and timeouts (`wyoming_hayakoe.net.http_guard`)."""
        self._max_line = max_request_line(query_text)
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    async def start(self) -> None:
        api = self.state.settings
        if api.token:
            from engine.sources.redact import register_secret

            register_secret(api.token)
        app = build_api_app(self.state)
        self.guard.install(app)
        self._runner = web.AppRunner(
            app,
            access_log=None,
            max_line_size=self._max_line,
            **self.guard.handler_args(),
        )
        await self._runner.setup()
        site = GuardedSite(self._runner, api.host, api.port, self.guard)
        await site.start()
        self.port = site.port
        _LOGGER.info(
            "Engine APIs (VOICEVOX / AivisSpeech, OpenAI /v1/audio/speech) on http://%s:%s/",
            api.host,
            self.port,
        )

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
