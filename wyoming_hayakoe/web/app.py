"""The aiohttp application and its life beside the Wyoming server (same process and loop)."""

from __future__ import annotations

import html
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import web

from engine import Speaker

from ..context import ServerContext
from ..net.http_guard import GuardedSite, HttpGuard
from ..net.options import ConnectionLimits
from .api import MAX_BODY, STATE, WebState, add_routes
from .dictionary import PageDictionary
from .errors import api_errors_middleware, mark_started
from .library import add_library_routes
from .options import HttpSettings
from .security import add_security_headers, ingress_base, security_middleware
from .warnings import WarningLog

if TYPE_CHECKING:  # the settings import the page's options: a type only, no cycle
    from ..apis.style_ids import StyleTable
    from ..settings import Settings

__all__ = ["STATIC_DIR", "WebServer", "build_app", "state_for"]

_LOGGER = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).resolve().parent / "static"
_BASE_MARK = "<!--BASE-->"


async def index(request: web.Request) -> web.Response:
    state = request.app[STATE]
    page = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    base = ingress_base(request, state.http)
    tag = f'<base href="{html.escape(base, quote=True)}/">' if base else ""
    return web.Response(
        text=page.replace(_BASE_MARK, tag),
        content_type="text/html",
        charset="utf-8",
        headers={"Cache-Control": "no-store"},
    )


def build_app(state: WebState) -> web.Application:
    """The page's application: security first, then JSON errors, then the routes."""
    app = web.Application(
        middlewares=[security_middleware(state.http), api_errors_middleware],
        client_max_size=MAX_BODY,
    )
    app[STATE] = state
    app.on_response_prepare.append(add_security_headers)
    app.on_response_prepare.append(mark_started)
    app.router.add_get("/", index)
    app.router.add_static("/static/", STATIC_DIR, show_index=False, follow_symlinks=False)
    add_routes(app)
    add_library_routes(app)
    return app


def state_for(
    settings: Settings,
    http: HttpSettings,
    context: ServerContext,
    *,
    style_ids: Callable[[Mapping[str, Speaker]], StyleTable] | None = None,
    engine_api_port: Callable[[], int | None] | None = None,
) -> WebState:
    """The page's state from the settings and the Wyoming server's `ServerContext`;
    `style_ids` is the engine APIs' one source of style IDs and `engine_api_port` the port
    they are bound to now, both handed in by the server (this part imports nothing of theirs).
    """
    readonly = [p for p in settings.user_dicts if p != http.dictionary]
    return WebState(
        http=http,
        catalog=context.catalog,
        admission=context.admission,
        service=context.service,
        dictionary=PageDictionary(http.dictionary, readonly),
        rewrite=settings.rewrite,
        warnings=WarningLog(),
        measurer=context.measurer,
        style_ids=style_ids,
        engine_api=settings.engine_api,
        engine_api_port=engine_api_port,
    )


class WebServer:
    """Serves the page on `http.host`:`http.port` until `stop`; keeps the last warnings."""

    def __init__(self, state: WebState, limits: ConnectionLimits | None = None) -> None:
        self.state = state
        self.guard = HttpGuard(limits or ConnectionLimits(), "page")
        """The port's connection cap and timeouts (`wyoming_hayakoe.net.http_guard`)."""
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    async def start(self) -> None:
        http = self.state.http
        from engine.sources.redact import register_secret

        register_secret(http.token)  # never in a log line (a URL with ?token=, say)
        logging.getLogger().addHandler(self.state.warnings)
        app = build_app(self.state)
        self.guard.install(app)
        self._runner = web.AppRunner(app, access_log=None, **self.guard.handler_args())
        await self._runner.setup()
        site = GuardedSite(self._runner, http.host, http.port, self.guard)
        await site.start()
        self.port = site.port
        mode = " (Home Assistant ingress)" if http.ingress else ""
        _LOGGER.info("Web page on http://%s:%s/%s", http.host, self.port, mode)

    async def stop(self) -> None:
        logging.getLogger().removeHandler(self.state.warnings)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
