"""The page's guards and error answers through the real program on loopback (issue 46):
DNS rebinding refused by the ``Host`` check (defect 7), deep JSON a 400 on every `/api`
write (defect 11), every `/api` error JSON with a code (413, 404, 405, a full disk)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.helpers.net import free_port
from tests.helpers.program import Program
from wyoming_hayakoe.json_depth import MAX_JSON_DEPTH

pytestmark = pytest.mark.timeout(300)

EVIL = "evil.example"
CONFIGURED = "hayakoe.lan"
DEEP = b"[" * 100_000 + b"]" * 100_000
API_WRITES = [
    "/api/speak",
    "/api/reading",
    "/api/dictionary",
    "/api/dictionary/delete",
    "/api/library/install",
    "/api/library/remove",
    "/api/library/update",
]


@contextlib.contextmanager
def _small_disk(folder: Path, size: int) -> Iterator[bool]:
    """`folder` on a tmpfs of `size` bytes when this process may mount one (root)."""
    folder.mkdir(parents=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        yield False
        return
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        yield False
        return
    try:
        yield True
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


class Page:
    def __init__(self, port: int) -> None:
        self.port = port
        self.base = f"http://127.0.0.1:{port}"

    async def call(
        self,
        method: str,
        path: str,
        *,
        host: str | None = None,
        origin: str | None = None,
        json: Any = None,
        data: Any = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, str, Any]:
        sent = dict(headers or {})
        if host is not None:
            sent["Host"] = host
        if origin is not None:
            sent["Origin"] = origin
        async with (
            aiohttp.ClientSession() as s,
            s.request(method, self.base + path, json=json, data=data, headers=sent) as r,
        ):
            body = await r.read()
            kind = r.content_type
            return r.status, kind, (await r.json()) if kind == "application/json" else body


@pytest.fixture
async def page(tmp_path: Path):
    library = tmp_path / "library"
    with _small_disk(library, 256 * 1024) as small:
        port, http = free_port(), free_port()
        args = ["--uri", f"tcp://127.0.0.1:{port}", "--http", f"127.0.0.1:{http}"]
        args += ["--voice", "openjtalk-mei", "--library-dir", str(library)]
        args += ["--http-dict", str(tmp_path / "page.csv"), "--http-allowed-host", CONFIGURED]
        args += ["--cache-dir", str(tmp_path / "cache"), "--no-warmup"]
        async with Program(*args) as prog:
            await prog.wait_ready(timeout=120)
            p = Page(http)
            p.small_disk = small  # type: ignore[attr-defined]
            p.program = prog  # type: ignore[attr-defined]
            yield p


async def test_a_rebound_host_reaches_nothing(page: Page) -> None:
    rebound = f"{EVIL}:{page.port}"
    origin = f"http://{rebound}"
    word = {"surface": "早声", "reading": "ハヤコエ", "accent": 0}
    calls: list[tuple[str, str, Any]] = [
        ("GET", "/api/library", None),
        ("POST", "/api/library/install", {"source": "jvnv-F1-jp"}),
        ("POST", "/api/library/remove", {"name": "x"}),
        ("GET", "/api/dictionary", None),
        ("POST", "/api/dictionary", word),
        ("POST", "/api/dictionary/delete", {"surface": "早声"}),
        ("GET", "/api/voices", None),
    ]
    for method, path, body in calls:
        status, kind, answer = await page.call(method, path, host=rebound, origin=origin, json=body)
        assert (status, kind) == (403, "application/json"), (path, answer)
        assert answer["code"] == "forbidden_host", answer
    # the page itself too (plain text), and the name without a port, and a trailing dot
    for host in (rebound, EVIL, f"{EVIL}.:{page.port}", f"127.0.0.1.{EVIL}:{page.port}"):
        status, _, _ = await page.call("GET", "/", host=host)
        assert status == 403, host
    # nothing was written by the refused requests
    status, _, answer = await page.call("GET", "/api/dictionary")
    assert status == 200 and answer["words"] == [], answer
    assert "refused" in page.program.log  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "host",
    [
        None,  # aiohttp's own: 127.0.0.1:PORT
        "localhost:{port}",
        "localhost",
        "LOCALHOST.:{port}",
        "[::1]:{port}",
        "127.0.0.2:{port}",
        f"{CONFIGURED}:{{port}}",
    ],
)
async def test_the_page_answers_its_own_names(page: Page, host: str | None) -> None:
    name = None if host is None else host.format(port=page.port)
    origin = f"http://{name or f'127.0.0.1:{page.port}'}"  # a Host without a port: 80
    word = {"surface": "早声", "reading": "ハヤコエ", "accent": 0}
    status, _, answer = await page.call("GET", "/api/library", host=name)
    assert status == 200, answer
    status, _, answer = await page.call(
        "POST", "/api/library/remove", host=name, origin=origin, json={"name": "absent"}
    )
    assert status == 404 and answer.get("code") != "forbidden_host", answer  # past the guards
    status, _, answer = await page.call(
        "POST", "/api/library/install", host=name, origin=origin, json={"source": "ftp://x"}
    )
    assert status == 400 and answer["field"] == "source", answer
    status, _, answer = await page.call(
        "POST", "/api/dictionary", host=name, origin=origin, json=word
    )
    assert status == 200, answer


async def test_the_origin_must_be_an_allowed_host_on_this_port(page: Page) -> None:
    own = f"127.0.0.1:{page.port}"
    body = {"text": "こんにちは"}
    for origin, expected in [
        (f"http://localhost:{page.port}", 200),  # another of the page's own names
        (f"http://{CONFIGURED}:{page.port}", 200),
        (f"http://{EVIL}:{page.port}", 403),  # the old check compared with the Host only
        (f"http://127.0.0.1:{page.port + 1 if page.port < 65535 else 1}", 403),
        ("null", 403),
    ]:
        status, _, answer = await page.call(
            "POST", "/api/reading", host=own, origin=origin, json=body
        )
        assert status == expected, (origin, answer)
        if expected == 403:
            assert answer["code"] == "forbidden", answer


async def test_deep_json_is_a_400_on_every_write(page: Page) -> None:
    origin = f"http://127.0.0.1:{page.port}"
    json_type = {"Content-Type": "application/json"}
    for path in API_WRITES:
        status, kind, answer = await page.call(
            "POST", path, origin=origin, data=DEEP, headers=json_type
        )
        assert (status, kind) == (400, "application/json"), (path, answer)
        assert answer["code"] == "bad_json" and answer["field"] == "body", answer
    # the bound itself: 64 levels are read, 65 are not
    ok = (
        b'{"text": "\xe3\x81\x82", "x": '
        + b"[" * (MAX_JSON_DEPTH - 1)
        + b"]" * (MAX_JSON_DEPTH - 1)
        + b"}"
    )
    status, _, answer = await page.call(
        "POST", "/api/reading", origin=origin, data=ok, headers=json_type
    )
    assert status == 200, answer
    too_deep = ok.replace(b"[", b"[[", 1).replace(b"]", b"]]", 1)
    status, _, answer = await page.call(
        "POST", "/api/reading", origin=origin, data=too_deep, headers=json_type
    )
    assert status == 400 and answer["code"] == "bad_json", answer
    # brackets inside strings are text, not nesting
    text = '{"text": "' + "[" * 1000 + '"}'
    status, _, answer = await page.call(
        "POST", "/api/reading", origin=origin, data=text.encode(), headers=json_type
    )
    assert status != 400 or answer["code"] != "bad_json", answer
    for body, why in [(b"[1, 2]", "object"), (b"\xff\xfe{}", "UTF-8"), (b"{", "JSON")]:
        status, _, answer = await page.call(
            "POST", "/api/reading", origin=origin, data=body, headers=json_type
        )
        assert (status, answer["code"]) == (400, "bad_json") and why in answer["error"], answer


async def test_every_api_error_is_json_with_a_code(page: Page) -> None:
    origin = f"http://127.0.0.1:{page.port}"
    big = b'{"text": "' + b"a" * (600 * 1024) + b'"}'
    status, kind, answer = await page.call(
        "POST",
        "/api/dictionary",
        origin=origin,
        data=big,
        headers={"Content-Type": "application/json"},
    )
    assert (status, kind, answer["code"]) == (413, "application/json", "too_large"), answer
    status, kind, answer = await page.call("GET", "/api/no-such-thing")
    assert (status, kind, answer["code"]) == (404, "application/json", "not_found"), answer
    status, kind, answer = await page.call("GET", "/api/speak")
    assert (status, kind, answer["code"]) == (405, "application/json", "method_not_allowed")
    status, kind, answer = await page.call("POST", "/api/speak", origin=origin, json={"text": ""})
    assert (status, answer["code"], answer["field"]) == (400, "bad_request", "text"), answer
    status, kind, answer = await page.call(
        "POST", "/api/speak", origin=origin, json={"text": "あ", "voice": "nobody"}
    )
    assert (status, answer["code"], answer["field"]) == (400, "unknown_voice", "voice")
    assert "openjtalk-mei" in answer["available"]
    status, kind, answer = await page.call(
        "POST", "/api/dictionary/delete", origin=origin, json={"surface": "無い"}
    )
    assert (status, answer["code"]) == (404, "unknown_word"), answer


def _peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


async def test_a_huge_form_part_is_refused_without_being_held(page: Page) -> None:
    """A 64 MiB ``name`` part: aiohttp >= 3.14 bounds a part read whole by the app's
    512 KiB (the library reads a name with a smaller bound of its own); the answer is a
    JSON refusal about the name's size and the server's peak memory does not grow by it
    (aiohttp 3.13 read it whole and answered 400 "no file in the form")."""
    pid = page.program.proc.pid  # type: ignore[attr-defined]
    before = _peak_rss(pid)
    boundary = "hayakoe-test-boundary"
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\n').encode()
    size = 64 << 20
    tail = f"\r\n--{boundary}--\r\n".encode()
    request = (
        f"POST /api/library/install HTTP/1.1\r\nHost: 127.0.0.1:{page.port}\r\n"
        f"Origin: http://127.0.0.1:{page.port}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
        f"Content-Length: {len(head) + size + len(tail)}\r\nConnection: close\r\n\r\n"
    ).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", page.port)

    async def send() -> int:
        sent = 0
        chunk = b"a" * (1 << 20)
        with contextlib.suppress(ConnectionError):
            writer.write(request + head)
            while sent < size:
                writer.write(chunk)
                await writer.drain()
                sent += len(chunk)
            writer.write(tail)
            await writer.drain()
        return sent

    sender = asyncio.create_task(send())
    answer = await asyncio.wait_for(reader.read(), 60)
    sender.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await sender
    writer.close()
    status_line, _, rest = answer.partition(b"\r\n")
    body = json.loads(rest.partition(b"\r\n\r\n")[2])
    # refused as too large (aiohttp's bound), or as too long a name (the library's own,
    # smaller bound): never read whole and then answered about something else
    too_large = b" 413 " in status_line and body["code"] == "too_large"
    assert too_large or (b" 400 " in status_line and body.get("field") == "name"), answer[:600]
    grown = _peak_rss(pid) - before
    assert grown < 24 << 20, f"peak RSS grew by {grown >> 20} MiB for a 64 MiB part"


async def test_an_upload_on_a_full_disk_is_a_507(page: Page) -> None:
    if not page.small_disk:  # type: ignore[attr-defined]
        pytest.skip("needs root to mount a small tmpfs")
    form = aiohttp.FormData()
    form.add_field("file", b"\0" * (1 << 20), filename="big.aivmx")  # 1 MiB on 256 KiB
    origin = f"http://127.0.0.1:{page.port}"
    status, kind, answer = await page.call("POST", "/api/library/install", origin=origin, data=form)
    assert (status, kind) == (507, "application/json"), answer
    assert answer["code"] == "disk_full", answer
    status, _, answer = await page.call("GET", "/api/library")
    assert status == 200, answer  # the server goes on


def _parse(*argv: str) -> Any:
    import argparse

    from wyoming_hayakoe.web.options import add_http_arguments, http_settings_from_args

    parser = argparse.ArgumentParser()
    add_http_arguments(parser)
    return http_settings_from_args(parser.parse_args(argv))


def test_allowed_hosts_flow_from_the_flag_to_the_settings() -> None:
    from wyoming_hayakoe.flags import SettingsError

    http = _parse("--http", "8123", "--http-allowed-host", "Hayakoe.LAN.")
    assert http.allowed_hosts == ("hayakoe.lan",)
    http = _parse(
        "--http", "8123", "--http-allowed-host", "[::1]", "--http-allowed-host", "10.0.0.2"
    )
    assert http.allowed_hosts == ("::1", "10.0.0.2")
    assert _parse("--http", "8123").allowed_hosts == ()
    for bad in ("hayakoe.lan:8080", "http://hayakoe.lan", "a/b", "", "-x.lan"):
        with pytest.raises(SettingsError, match="--http-allowed-host"):
            _parse("--http", "8123", f"--http-allowed-host={bad}")
    with pytest.raises(SettingsError, match="need"):
        _parse("--http-allowed-host", "hayakoe.lan")


def test_host_headers_are_split_and_judged() -> None:
    from wyoming_hayakoe.web.options import HttpSettings
    from wyoming_hayakoe.web.security import host_allowed, split_host

    assert split_host("LocalHost:8080") == ("localhost", 8080)
    assert split_host("[::1]:8080") == ("::1", 8080)
    assert split_host("[::1]") == ("::1", None)
    assert split_host("localhost.") == ("localhost", None)
    for bad in ("::1", "[::1", "[::1]x", "host:port", "host:123456", ":80", ""):
        assert split_host(bad) is None, bad
    http = HttpSettings(host="127.0.0.1", allowed_hosts=("hayakoe.lan",))
    for ok in ("127.0.0.1", "localhost", "::1", "127.0.0.2", "hayakoe.lan"):
        assert host_allowed(ok, http), ok
    for no in ("evil.example", "127.0.0.1.evil.example", "localhost.evil.example", "10.0.0.2"):
        assert not host_allowed(no, http), no


BOUNDARY = "hayakoe-form"
NAME_PART = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="name"\r\n\r\nmine\r\n'
BROKEN_FORMS = {
    # a raw line break inside a header value: the rest of the value is no header line
    "line break in a header": (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="a\r\nb.aivmx"\r\n\r\ndata\r\n--{BOUNDARY}--\r\n',
        f"multipart/form-data; boundary={BOUNDARY}",
        "form",
        "form part 1:",
    ),
    "line break in the second part": (
        NAME_PART + f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="a\r\n b.aivmx"\r\n\r\ndata\r\n--{BOUNDARY}--\r\n',
        f"multipart/form-data; boundary={BOUNDARY}",
        "form",
        "form part 2:",
    ),
    "control character in a header name": (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.aivmx"'
        f"\r\nX-Bad\x00: y\r\n\r\ndata\r\n--{BOUNDARY}--\r\n",
        f"multipart/form-data; boundary={BOUNDARY}",
        "form",
        "form part 1:",
    ),
    "no boundary": (NAME_PART, "multipart/form-data", "form", "boundary"),
    "no starting boundary": (
        "not a form\r\n",
        f"multipart/form-data; boundary={BOUNDARY}",
        "form",
        "form part 1:",
    ),
    "the file cut short": (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.aivmx"'
        "\r\n\r\nno closing boundary after this",
        f"multipart/form-data; boundary={BOUNDARY}",
        "file",
        "form part 1 ('file'):",
    ),
}


@pytest.mark.parametrize("case", BROKEN_FORMS.values(), ids=BROKEN_FORMS.keys())
async def test_an_unreadable_form_is_a_400_naming_the_part(
    page: Page, case: Any, tmp_path: Path
) -> None:
    """aiohttp's parse errors of a form (a 500 before) are a 400 naming the part; no
    upload is left behind and the server goes on."""
    body, content_type, field, said = case
    origin = f"http://127.0.0.1:{page.port}"
    status, kind, answer = await page.call(
        "POST",
        "/api/library/install",
        origin=origin,
        data=body.encode(),
        headers={"Content-Type": content_type},
    )
    assert (status, kind) == (400, "application/json"), answer
    assert answer["code"] == "bad_request" and answer["field"] == field, answer
    assert answer["error"].startswith(said) or said in answer["error"], answer
    status, _, answer = await page.call("GET", "/api/library")
    assert status == 200 and answer["jobs"] == [], answer
    assert not [p for p in (tmp_path / "library").rglob("*") if "aivmx" in p.name]
    assert "Traceback" not in page.program.log  # type: ignore[attr-defined]
