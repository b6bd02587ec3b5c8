"""The engine APIs' aiohttp application and its life beside the Wyoming server (same
process and loop, a port of its own)."""

from __future__ import annotations

import logging

from aiohttp import web

from ..handler import ServerContext
from ..web.dictionary import PageDictionary
from .errors import MAX_BODY, errors_middleware
from .openai import add_openai_routes
from .options import EngineApiSettings
from .security import add_cors_headers, security_middleware
from .state import API_STATE, ApiState
from .voicevox import add_voicevox_routes

__all__ = ["EngineApiServer", "api_state_for", "build_api_app"]

_LOGGER = logging.getLogger(__name__)


def build_api_app(state: ApiState) -> web.Application:
    """JSON errors outermost, then who may ask, then the routes."""
    app = web.Application(
        middlewares=[errors_middleware, security_middleware(state.settings)],
        client_max_size=MAX_BODY,
    )
    app[API_STATE] = state
    app.on_response_prepare.append(add_cors_headers)
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
        admission=context.admission,
        dictionary=dictionary,
        rewrite=rewrite,
    )


class EngineApiServer:
    """Serves the engine APIs on `settings.host`:`settings.port` until `stop`."""

    def __init__(self, state: ApiState) -> None:
        self.state = state
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    async def start(self) -> None:
        api = self.state.settings
        if api.token:
            from engine.sources.redact import register_secret

            register_secret(api.token)
        self._runner = web.AppRunner(build_api_app(self.state), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, api.host, api.port)
        await site.start()
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        self.port = int(sockets[0].getsockname()[1]) if sockets else api.port
        _LOGGER.info(
            "Engine APIs (VOICEVOX / AivisSpeech, OpenAI /v1/audio/speech) on http://%s:%s/",
            api.host,
            self.port,
        )

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
