"""``GET /``: the engine APIs' portal page, as VOICEVOX Engine and AivisSpeech Engine serve
one: the engine's name and version, and links to what this port serves.

Home Assistant's VOICEVOX TTS integration (HACS ``voicevox_tts`` 1.1.0) sends ``GET /`` with
no token and calls ``raise_for_status()`` when it sets up and when it is reconfigured; a 404
leaves it never set up (``ConfigEntryNotReady``). So the page answers 200 to anyone the
`security` middleware lets through, and, with a token set, also to a request without the
token (`PUBLIC_PATHS`): it then names the engine and its endpoints only, never the version or
the voices, and says that the endpoints want the token. The ``Host`` checks stay as they are.
"""

from __future__ import annotations

import html

from aiohttp import web

from engine import __version__

from .state import API_STATE

__all__ = ["ENGINE_NAME", "PUBLIC_PATHS", "TOKEN_GIVEN", "add_portal_route", "portal"]

ENGINE_NAME = "wyoming-hayakoe"
PUBLIC_PATHS = frozenset({"/"})
"""Answered (``GET``/``HEAD``) without the token: the portal page, as a health check."""
TOKEN_GIVEN = web.RequestKey("engine_api_token_given", bool)
"""Set by the `security` middleware on a request that carried the token."""

# (path, what it answers): the page's links, read by people
_ENDPOINTS: tuple[tuple[str, str], ...] = (
    ("/version", "the engine's version (VOICEVOX / AivisSpeech engine API)"),
    ("/engine_manifest", "name and features"),
    ("/speakers", "the voices and their style IDs"),
    ("/v1/audio/voices", "the voices for OpenAI's speech API"),
    ("/v1/audio/models", "the model names (Open WebUI's list)"),
    ("/v1/models", "the model names (OpenAI's list)"),
)
_POSTS: tuple[tuple[str, str], ...] = (
    ("/audio_query?speaker=ID&text=…", "an AudioQuery of a text"),
    ("/synthesis?speaker=ID", "a WAV of an AudioQuery"),
    ("/v1/audio/speech", "OpenAI's speech API (base_url: this address + /v1)"),
)
_DOCS = "https://github.com/wyoming-hayakoe/wyoming-hayakoe/blob/main/docs/engine-api.md"


def _page(authorized: bool, token_set: bool) -> str:
    name = html.escape(ENGINE_NAME)
    version = f" {html.escape(__version__)}" if authorized else ""
    links = "".join(
        f'<li><a href="{html.escape(path)}"><code>GET {html.escape(path)}</code></a>: '
        f"{html.escape(said)}</li>"
        for path, said in _ENDPOINTS
    )
    posts = "".join(
        f"<li><code>POST {html.escape(path)}</code>: {html.escape(said)}</li>"
        for path, said in _POSTS
    )
    token = (
        "<p>The endpoints want the token: <code>Authorization: Bearer TOKEN</code>.</p>"
        if token_set
        else ""
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{name}</title></head>\n<body>\n"
        f"<h1>{name}{version}</h1>\n"
        "<p>A VOICEVOX / AivisSpeech engine API and OpenAI's speech API "
        "(Japanese text-to-speech).</p>\n"
        f"{token}<ul>{links}</ul>\n<ul>{posts}</ul>\n"
        f'<p><a href="{_DOCS}">Documentation</a></p>\n'
        "</body></html>\n"
    )


async def portal(request: web.Request) -> web.Response:
    settings = request.app[API_STATE].settings
    authorized = settings.token is None or request.get(TOKEN_GIVEN, False)
    response = web.Response(
        text=_page(authorized, settings.token is not None), content_type="text/html"
    )
    response.headers["Cache-Control"] = "no-store"
    return response


def add_portal_route(app: web.Application) -> None:
    app.router.add_get("/", portal)
