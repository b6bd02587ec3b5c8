"""`wyoming_hayakoe.web.errors`, the `/api` error seam, on a small aiohttp app of its own
(real HTTP through aiohttp's test server): every error JSON with a code, a bug a 500 with
one logged traceback, a full disk a 507, an error after the head is sent a cut
connection (never a second answer), paths outside `/api/` left to aiohttp."""

from __future__ import annotations

import errno
import logging

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from wyoming_hayakoe.web.dictionary import FieldError
from wyoming_hayakoe.web.errors import (
    ApiError,
    api_errors_middleware,
    error_response,
    mark_started,
    read_json_object,
)


async def _bug(request: web.Request) -> web.Response:
    raise RuntimeError("a bug")


async def _full(request: web.Request) -> web.Response:
    try:
        raise OSError(errno.ENOSPC, "No space left on device")
    except OSError as exc:
        raise ValueError("writing the upload failed") from exc


async def _refused(request: web.Request) -> web.Response:
    raise ApiError(409, "in_use", "the voice is in use", "name", {"by": ["alarm"]})


async def _field(request: web.Request) -> web.Response:
    raise FieldError("reading", "reading: katakana only")


async def _echo(request: web.Request) -> web.Response:
    return web.json_response(await read_json_object(request, max_bytes=1000))


async def _cut(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()
    await response.prepare(request)
    await response.write(b"partial")
    raise RuntimeError("after the head")


async def _page_bug(request: web.Request) -> web.Response:
    raise RuntimeError("not under /api")


@pytest.fixture
async def client():
    app = web.Application(middlewares=[api_errors_middleware], client_max_size=2000)
    app.on_response_prepare.append(mark_started)
    app.router.add_get("/api/bug", _bug)
    app.router.add_post("/api/full", _full)
    app.router.add_get("/api/refused", _refused)
    app.router.add_get("/api/field", _field)
    app.router.add_post("/api/echo", _echo)
    app.router.add_get("/api/cut", _cut)
    app.router.add_get("/page", _page_bug)
    test_client = TestClient(TestServer(app))
    await test_client.start_server()
    yield test_client
    await test_client.close()


def test_error_response_omits_a_missing_field() -> None:
    import json

    body = json.loads(error_response(400, "bad_json", "no").text or "")
    assert body == {"error": "no", "code": "bad_json"}


async def test_a_bug_is_a_500_with_one_logged_traceback(client, caplog) -> None:
    with caplog.at_level(logging.ERROR):
        r = await client.get("/api/bug")
        assert (r.status, await r.json()) == (
            500,
            {"error": "internal error (the server's log has the details)", "code": "internal"},
        )
    tracebacks = [rec for rec in caplog.records if rec.exc_info]
    assert len(tracebacks) == 1 and "a bug" in str(tracebacks[0].exc_info[1])


async def test_codes_fields_and_extra_keys(client) -> None:
    r = await client.post("/api/full")
    body = await r.json()
    assert (r.status, body["code"]) == (507, "disk_full"), body
    r = await client.get("/api/refused")
    assert (r.status, await r.json()) == (
        409,
        {"error": "the voice is in use", "code": "in_use", "field": "name", "by": ["alarm"]},
    )
    r = await client.get("/api/field")
    body = await r.json()
    assert (r.status, body["code"], body["field"]) == (400, "bad_request", "reading")
    r = await client.get("/api/nothing")
    assert (r.status, (await r.json())["code"]) == (404, "not_found")
    r = await client.post("/api/bug")
    body = await r.json()
    assert (r.status, body["code"]) == (405, "method_not_allowed")
    assert "GET" in r.headers["Allow"].split(",")


async def test_the_json_reader(client) -> None:
    r = await client.post("/api/echo", json={"a": [1, {"b": 2}]})
    assert (r.status, await r.json()) == (200, {"a": [1, {"b": 2}]})
    for data, code, status in [
        (b"[" * 65 + b"]" * 65, "bad_json", 400),
        (b'"a string"', "bad_json", 400),
        (b"\xff", "bad_json", 400),
        (b'{"a": "' + b"x" * 1500 + b'"}', "too_large", 413),  # the reader's own bound
        (b'{"a": "' + b"x" * 2500 + b'"}', "too_large", 413),  # the app's client_max_size
    ]:
        r = await client.post("/api/echo", data=data)
        body = await r.json()
        assert (r.status, body["code"]) == (status, code), (data[:20], body)


async def test_an_error_after_the_head_cuts_the_answer(client) -> None:
    r = await client.get("/api/cut")
    assert r.status == 200  # the head went out before the error
    with pytest.raises(aiohttp.ClientPayloadError):
        await r.read()


async def test_paths_outside_api_are_left_to_aiohttp(client) -> None:
    r = await client.get("/page")
    assert r.status == 500 and r.content_type != "application/json"
    r = await client.get("/elsewhere")
    assert r.status == 404 and r.content_type != "application/json"
