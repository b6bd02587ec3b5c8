"""The web page's API with aiohttp's test client: every endpoint, and every refusal.

The application is built from a real `HayakoeServer`'s context (the embedded voice, real
synthesis, the real user dictionary compiled into OpenJTalk), with the page's dictionary in a
temporary CSV watched like ``--user-dict``.
"""

from __future__ import annotations

import asyncio
import io
import logging
import wave
from pathlib import Path

import pytest

pytest.importorskip("aiohttp")
from aiohttp.test_utils import TestClient, TestServer

from engine import EMBEDDED_VOICE_NAME
from engine.text import clear_user_dictionary, unwatch_user_dictionaries, watch_user_dictionaries
from wyoming_hayakoe.presets import parse_presets
from wyoming_hayakoe.server import HayakoeServer
from wyoming_hayakoe.settings import Settings, SettingsError, parse_settings
from wyoming_hayakoe.web.api import MAX_BODY
from wyoming_hayakoe.web.app import build_app, state_for
from wyoming_hayakoe.web.dictionary import ensure_dictionary_file
from wyoming_hayakoe.web.options import HttpSettings, add_http_arguments, http_settings_from_args

VOICE = EMBEDDED_VOICE_NAME
ORIGIN = "http://127.0.0.1"
SURNAME = "葦簀野"  # a made-up family name OpenJTalk does not know


@pytest.fixture(autouse=True)
def _clean_dictionary():
    clear_user_dictionary()
    yield
    unwatch_user_dictionaries()
    clear_user_dictionary()


@pytest.fixture
def dict_path(tmp_path: Path) -> Path:
    path = tmp_path / "page.csv"
    ensure_dictionary_file(path)
    return path


@pytest.fixture
async def page(embedded_speakers, dict_path: Path, tmp_path: Path):
    """`await page(**http_fields)` → (TestClient, state) for an app on the embedded voice."""
    clients: list[TestClient] = []

    async def make(readonly: tuple[Path, ...] = (), **fields):
        fields.setdefault("dictionary", dict_path)
        http = HttpSettings(port=0, **fields)
        user_dicts = (dict_path, *readonly)
        watch_user_dictionaries(user_dicts)
        settings = Settings(
            uri="tcp://127.0.0.1:0",
            http=http,
            user_dicts=user_dicts,
            presets=parse_presets([f"alarm={VOICE},speed=1.2"]),
        )
        server = HayakoeServer(settings, embedded_speakers)
        state = state_for(settings, http, server.context)
        client = TestClient(TestServer(build_app(state)))
        await client.start_server()
        clients.append(client)
        return client, state

    yield make
    for client in clients:
        await client.close()


async def _post(client: TestClient, path: str, data: object, **kw):
    origin = f"http://{client.host}:{client.port}"
    return await client.post(path, json=data, headers={"Origin": origin, **kw})


def _wav(data: bytes) -> tuple[int, int]:
    with wave.open(io.BytesIO(data)) as w:
        return w.getframerate(), w.getnframes()


# -- page and static files -----------------------------------------------------------------


async def test_page_and_static_files(page):
    client, _ = await page()
    r = await client.get("/")
    assert r.status == 200
    html = await r.text()
    assert '<script src="static/app.js"' in html and "<base" not in html
    assert "default-src 'self'" in r.headers["Content-Security-Policy"]
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    for name in ("app.js", "style.css"):
        r = await client.get(f"/static/{name}")
        assert r.status == 200, name
    assert (await client.get("/static/../app.py")).status in (403, 404)
    assert (await client.get("/static/%2e%2e/app.py")).status in (403, 404)
    assert (await client.get("/static/")).status in (403, 404)  # no listing


async def test_an_unknown_api_path_or_method_is_answered_in_json(page):
    client, _ = await page()
    r = await client.get("/api/no-such-thing")
    assert r.status == 404 and r.content_type == "application/json"
    body = await r.json()
    assert body["field"] == "path" and "/api/no-such-thing" in body["error"]
    r = await client.get("/api/speak")  # POST only
    assert r.status == 405 and (await r.json())["field"] == "path"
    assert (await client.get("/no-such-page")).content_type != "application/json"


# -- voices, samples, speech -----------------------------------------------------------------


async def test_voices_lists_voices_styles_and_presets(page, embedded_speakers):
    client, _ = await page()
    data = await (await client.get("/api/voices")).json()
    (voice,) = data["voices"]
    speaker = embedded_speakers[VOICE]
    assert voice["name"] == VOICE
    assert voice["sample_rate"] == speaker.sample_rate
    assert voice["styles"] == speaker.styles
    assert voice["attribution"]["name"] == speaker.attribution_name
    assert voice["description"] == speaker.description
    assert voice["precision"] is None  # the embedded voice has no int8/fp32 choice
    rtf = speaker.real_time_factor
    assert voice["real_time_factor"] == (None if rtf is None else round(rtf, 3))
    assert (
        data["presets"]
        == [{"name": "alarm", "voice": VOICE, "style": speaker.default_style, "description": ""}]
        or data["presets"][0]["name"] == "alarm"
    )
    assert data["default_voice"] == VOICE


async def test_sample_is_a_cached_wav(page, embedded_speakers):
    client, state = await page()
    style = embedded_speakers[VOICE].styles[-1]
    r = await client.get("/api/sample", params={"voice": VOICE, "style": style})
    assert r.status == 200 and r.content_type == "audio/wav"
    first = await r.read()
    rate, frames = _wav(first)
    assert rate == embedded_speakers[VOICE].sample_rate and frames / rate > 1.0
    admitted = state.admission.admitted
    again = await (await client.get("/api/sample", params={"voice": VOICE, "style": style})).read()
    assert again == first and state.admission.admitted == admitted  # from the cache
    same = await client.get("/api/sample", params={"voice": f"{VOICE.upper()}:{style.lower()}"})
    assert await same.read() == first  # the Wyoming rule: case-insensitive, VOICE:STYLE


async def test_unknown_voice_or_style_is_refused_listing_what_exists(page, embedded_speakers):
    """Unlike Wyoming (which falls back to the default voice), the page says what is wrong."""
    client, state = await page()
    styles = embedded_speakers[VOICE].styles
    r = await client.get("/api/sample", params={"voice": "nobody"})
    assert r.status == 400
    data = await r.json()
    assert data["field"] == "voice" and data["available"] == state.catalog.voice_names()
    assert data["available"] == [VOICE, *(f"{VOICE}:{s}" for s in styles), "alarm"]
    assert data["error"] == f"unknown voice 'nobody'; available: {', '.join(data['available'])}"
    r = await _post(client, "/api/speak", {"text": "あ", "voice": f"{VOICE}:Nope"})
    assert r.status == 400
    data = await r.json()
    assert data["field"] == "style" and data["available"] == styles
    assert data["error"].startswith(f"unknown style 'Nope' of voice {VOICE}; available: ")
    r = await client.get("/api/sample", params={"voice": "alarm", "style": "Nope"})
    assert r.status == 400 and (await r.json())["field"] == "style"
    assert state.admission.admitted == 0  # nothing was spoken


async def test_speak_streams_pcm_equal_to_the_engine(page, embedded_speakers):
    client, state = await page()
    speaker = embedded_speakers[VOICE]
    text = "今日は晴れです。明日は雨でしょう。"
    r = await _post(client, "/api/speak", {"text": text, "voice": VOICE})
    assert r.status == 200
    assert int(r.headers["X-Sample-Rate"]) == speaker.sample_rate
    pieces = [chunk async for chunk in r.content.iter_any()]
    pcm = b"".join(pieces)
    expected = b"".join(c.pcm_bytes() for c in speaker.stream(text))
    assert pcm == expected
    assert state.admission.admitted == 1 and state.admission.in_flight == 0


async def test_speak_controls_change_the_audio(page):
    client, _ = await page()
    text = "こんにちは。"
    plain = await (await _post(client, "/api/speak", {"text": text})).read()
    fast = await (await _post(client, "/api/speak", {"text": text, "speed": 2.0})).read()
    quiet = await (await _post(client, "/api/speak", {"text": text, "volume": 0.25})).read()
    assert len(fast) < 0.75 * len(plain)
    assert len(quiet) == len(plain) and quiet != plain
    preset = await (await _post(client, "/api/speak", {"text": text, "voice": "alarm"})).read()
    assert len(preset) < len(plain)  # speed=1.2


async def test_a_listener_who_leaves_mid_speech_frees_the_voice(page, embedded_speakers):
    from tests.helpers.speakers import until_unlocked

    client, state = await page()
    text = "今日は晴れです。" * 40
    r = await _post(client, "/api/speak", {"text": text})
    assert r.status == 200
    assert await r.content.readany()  # the first audio arrived
    r.close()  # the browser tab is closed
    await until_unlocked(embedded_speakers[VOICE], timeout=30)
    after = await _post(client, "/api/speak", {"text": "はい。"})  # the voice is free again
    assert after.status == 200 and await after.read()
    for _ in range(500):  # the first request's ticket goes right after the lock
        if state.admission.in_flight == 0:
            break
        await asyncio.sleep(0.01)
    assert state.admission.in_flight == 0 and state.admission.admitted == 2


async def test_speak_wav_download(page, embedded_speakers):
    client, _ = await page()
    r = await _post(client, "/api/speak", {"text": "こんにちは。", "format": "wav"})
    assert r.status == 200 and r.content_type == "audio/wav"
    assert "attachment" in r.headers["Content-Disposition"]
    rate, frames = _wav(await r.read())
    assert rate == embedded_speakers[VOICE].sample_rate and frames > 0


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"text": ""}, 400, "text"),
        ({"text": 5}, 400, "text"),
        ({"text": "あ" * 4097}, 413, "text"),
        ({"text": "あ", "voice": "nobody"}, 400, "voice"),
        ({"text": "あ", "voice": 5}, 400, "voice"),
        ({"text": "あ", "style": "Nope"}, 400, "style"),
        ({"text": "あ", "style": ["Calm"]}, 400, "style"),
        ({"text": "あ", "speed": 9}, 400, "speed"),
        ({"text": "あ", "pitch": "high"}, 400, "pitch"),
        ({"text": "あ", "intonation": -1}, 400, "intonation"),
        ({"text": "あ", "volume": 5}, 400, "volume"),
        ({"text": "あ", "format": "mp3"}, 400, "format"),
        ([1, 2], 400, "body"),
    ],
)
async def test_speak_refuses_bad_requests(page, body, status, field):
    client, state = await page()
    r = await _post(client, "/api/speak", body)
    assert r.status == status
    assert (await r.json())["field"] == field
    assert state.admission.admitted == 0


async def test_speak_busy_voice_is_503(page):
    client, state = await page()
    state.admission.max_queue = 0
    ticket = state.admission.enter(VOICE)
    try:
        r = await _post(client, "/api/speak", {"text": "こんにちは。"})
        assert r.status == 503 and "busy" in (await r.json())["error"]
    finally:
        ticket.release()


async def test_reading_rewritten_text_and_accent_phrases(page):
    client, _ = await page()
    r = await _post(client, "/api/reading", {"text": "東京都に行きました、雨です。"})
    data = await r.json()
    assert [("".join(p["morae"]), p["accent"], p["pause_after"]) for p in data["phrases"]] == [
        ("トオキョオトニ", 4, False),
        ("イキマシタ", 3, True),
        ("アメデス", 1, False),
    ]
    assert data["phrases"][2]["pitches"] == [True, False, False, False]
    data = await (await _post(client, "/api/reading", {"text": "10:30にWiFiを"})).json()
    assert data["rewritten"] != data["text"]  # times and Latin words are rewritten
    assert data["rewritten"] == "10時30分にワイファイを"
    r = await _post(client, "/api/reading", {"text": "あ" * 4097})
    assert r.status == 413


# -- dictionary ------------------------------------------------------------------------------


async def _reading_of(client: TestClient, text: str) -> str:
    data = await (await _post(client, "/api/reading", {"text": text})).json()
    return "".join("".join(p["morae"]) for p in data["phrases"])


async def test_dictionary_add_edit_delete_is_live_and_on_disk(page, dict_path):
    client, _ = await page()
    assert "アシズノ" not in await _reading_of(client, f"{SURNAME}さん")
    before_audio = await (await _post(client, "/api/speak", {"text": f"{SURNAME}さん"})).read()
    entry = {"surface": SURNAME, "reading": "あしずの", "accent": 2, "priority": 7}
    r = await _post(client, "/api/dictionary", entry)
    assert r.status == 200, await r.text()
    data = await r.json()
    assert data["word"] == {
        "surface": SURNAME,
        "reading": "アシズノ",
        "accent": 2,
        "priority": 7,
        "pos": "proper_noun",
    }
    assert f"{SURNAME},アシズノ,2,7" in dict_path.read_text("utf-8")
    assert (await _reading_of(client, f"{SURNAME}さん")).startswith("アシズノ")
    after_audio = await (await _post(client, "/api/speak", {"text": f"{SURNAME}さん"})).read()
    assert after_audio != before_audio  # the next request already hears it
    # edit: a new surface replaces the old one
    edit = {"surface": "葦簀野家", "reading": "アシズノケ", "accent": 0, "original": SURNAME}
    assert (await _post(client, "/api/dictionary", edit)).status == 200
    words = (await (await client.get("/api/dictionary")).json())["words"]
    assert [w["surface"] for w in words] == ["葦簀野家"]
    # delete, and deleting what is not there
    r = await _post(client, "/api/dictionary/delete", {"surface": "葦簀野家"})
    assert r.status == 200 and (await r.json())["words"] == []
    r = await _post(client, "/api/dictionary/delete", {"surface": "葦簀野家"})
    assert r.status == 404 and (await r.json())["field"] == "surface"
    assert "アシズノ" not in await _reading_of(client, f"{SURNAME}さん")


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"surface": "", "reading": "ア"}, "surface"),
        ({"surface": "x" * 65, "reading": "ア"}, "surface"),
        ({"surface": "山", "reading": ""}, "reading"),
        ({"surface": "山", "reading": "yama"}, "reading"),
        ({"surface": "山", "reading": "ア" * 65}, "reading"),
        ({"surface": "山", "reading": "ヤマ", "accent": 3}, "accent"),
        ({"surface": "山", "reading": "ヤマ", "accent": "1"}, "accent"),
        ({"surface": "山", "reading": "ヤマ", "priority": 11}, "priority"),
        ({"surface": "山", "reading": "ヤマ", "pos": "verb"}, "pos"),
        ("山,ヤマ", "body"),
        ({"surface": "山", "reading": "ヤマ", "path": "/tmp/elsewhere.csv"}, "path"),
    ],
)
async def test_dictionary_bad_entry_is_400_naming_the_field_and_writes_nothing(
    page, dict_path, entry, field
):
    client, _ = await page()
    assert (await _post(client, "/api/dictionary", {"surface": "森", "reading": "モリ"})).ok
    before = dict_path.read_bytes()
    r = await _post(client, "/api/dictionary", entry)
    assert r.status == 400
    assert (await r.json())["field"] == field
    assert dict_path.read_bytes() == before
    assert not Path("/tmp/elsewhere.csv").exists()


async def test_dictionary_refuses_what_openjtalk_cannot_read(page, dict_path):
    """The engine's one check (issue 54): a surface of 68 characters once normalised, an
    escape character, a reading past 64 characters are 400s naming the field; a CSV import
    names the line."""
    client, _ = await page()
    before = dict_path.read_bytes()
    for entry, field in [
        ({"surface": "㍿" * 17, "reading": "カブ"}, "surface"),
        ({"surface": "森\x1b[31m", "reading": "モリ"}, "surface"),
        ({"surface": "森", "reading": "モ" * 65}, "reading"),
    ]:
        r = await _post(client, "/api/dictionary", entry)
        assert r.status == 400, await r.text()
        assert (await r.json())["field"] == field
    assert dict_path.read_bytes() == before
    origin = f"http://{client.host}:{client.port}"
    headers = {"Origin": origin, "Content-Type": "text/csv"}
    bad = "surface,reading\n森,モリ\n" + "a" * 2048 + ",エー\n"
    r = await client.post("/api/dictionary/import", data=bad.encode(), headers=headers)
    assert r.status == 400
    lines = (await r.json())["lines"]
    assert [(e["line"], e["field"]) for e in lines] == [(3, "surface")]
    assert "at most 64 characters, got 2048" in lines[0]["message"]
    assert dict_path.read_bytes() == before


async def test_two_concurrent_edits_never_lose_an_entry(page, dict_path):
    client, _ = await page()
    words = [(f"試験語{i}", "シケンゴ" + "アイウエオカキクケコ"[i]) for i in range(10)]
    answers = await asyncio.gather(
        *(_post(client, "/api/dictionary", {"surface": s, "reading": r}) for s, r in words)
    )
    assert all(a.status == 200 for a in answers)
    on_disk = dict_path.read_text("utf-8")
    assert all(s in on_disk for s, _ in words)
    listed = (await (await client.get("/api/dictionary")).json())["words"]
    assert {w["surface"] for w in listed} == {s for s, _ in words}


async def test_import_export_csv(page, dict_path):
    client, _ = await page()
    origin = f"http://{client.host}:{client.port}"
    headers = {"Origin": origin, "Content-Type": "text/csv"}
    bad = "surface,reading,accent,priority\n森,モリ,0,5\n林,hayashi,1,5\n"
    before = dict_path.read_bytes()
    r = await client.post("/api/dictionary/import", data=bad.encode(), headers=headers)
    assert r.status == 400
    data = await r.json()
    assert [(e["line"], e["field"]) for e in data["lines"]] == [(3, "reading")]
    assert dict_path.read_bytes() == before  # nothing imported
    good = "# comment\n森,モリ,0,5\n林,はやし,1\n"
    r = await client.post("/api/dictionary/import", data=good.encode(), headers=headers)
    assert r.status == 200 and (await r.json())["imported"] == 2
    r = await client.get("/api/dictionary.csv")
    assert r.content_type == "text/csv" and "attachment" in r.headers["Content-Disposition"]
    exported = await r.text()
    assert exported.splitlines()[1:] == ["森,モリ,0,5,proper_noun", "林,ハヤシ,1,5,proper_noun"]
    # what is exported imports again unchanged
    r = await client.post("/api/dictionary/import", data=exported.encode(), headers=headers)
    assert r.status == 200
    assert (await (await client.get("/api/dictionary.csv")).text()) == exported


async def test_words_of_other_files_are_read_only_and_marked(page, tmp_path):
    other = tmp_path / "user_words.json"
    other.write_text('{"words": [{"surface": "鯖江", "reading": "サバエ", "accent": 1}]}')
    client, _ = await page(readonly=(other,))
    data = await (await client.get("/api/dictionary")).json()
    assert data["readonly"] == [
        {
            "surface": "鯖江",
            "reading": "サバエ",
            "accent": 1,
            "priority": 5,
            "pos": "proper_noun",
            "source": "user_words.json",
        }
    ]
    assert data["words"] == [] and data["editable"] is True
    assert (await _reading_of(client, "鯖江")).startswith("サバエ")


async def test_no_dictionary_file_configured(page):
    client, _ = await page(dictionary=None)
    data = await (await client.get("/api/dictionary")).json()
    assert data["editable"] is False
    r = await _post(client, "/api/dictionary", {"surface": "森", "reading": "モリ"})
    assert r.status == 400 and (await r.json())["field"] == "dictionary"


# -- status ----------------------------------------------------------------------------------


async def test_status_counts_requests_and_keeps_warnings(page):
    client, state = await page()
    logging.getLogger().addHandler(state.warnings)
    try:
        logging.getLogger("tests.web").warning("the speaker at %s is gone", "kitchen")
        assert await (await _post(client, "/api/speak", {"text": "はい。"})).read()
        data = await (await client.get("/api/status")).json()
    finally:
        logging.getLogger().removeHandler(state.warnings)
    assert data["requests"] == 1 and data["in_flight"] == 0
    assert [v["name"] for v in data["voices"]] == [VOICE]
    assert data["memory"]["rss_bytes"] > 10_000_000
    assert data["version"]
    assert data["warnings"][0]["message"] == "the speaker at kitchen is gone"


async def test_warnings_are_redacted_and_the_page_token_is_never_logged(
    embedded_speakers, dict_path
):
    import aiohttp

    from engine.sources.redact import redact

    http = HttpSettings(port=0, dictionary=dict_path, token="page-token-4f9a8e7d")
    server = HayakoeServer(Settings(uri="tcp://127.0.0.1:0", http=http), embedded_speakers)
    await server.start()
    try:
        assert "page-token-4f9a8e7d" not in redact("GET /?token=page-token-4f9a8e7d")
        logging.getLogger("tests.web").warning("Hub said no to hf_abcdefghijklmnopqrstuvwx")
        assert server.web is not None
        headers = {"Authorization": "Bearer page-token-4f9a8e7d"}
        url = f"http://127.0.0.1:{server.web.port}/api/status"
        async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as r:
            data = await r.json()
        (warning,) = [w for w in data["warnings"] if w["logger"] == "tests.web"]
        assert "hf_abcdefghijklmnopqrstuvwx" not in warning["message"]
        assert warning["message"].startswith("Hub said no to hf_")
    finally:
        await server.stop()


# -- refusals --------------------------------------------------------------------------------


async def test_cross_site_writes_are_refused(page, dict_path):
    client, _ = await page()
    before = dict_path.read_bytes()
    entry = {"surface": "森", "reading": "モリ"}
    r = await client.post("/api/dictionary", json=entry, headers={"Origin": "http://evil.test"})
    assert r.status == 403
    r = await client.post("/api/dictionary", json=entry, headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status == 403
    r = await client.post("/api/dictionary", data="surface=森&reading=モリ")  # a plain form
    assert r.status == 415
    r = await client.put("/api/dictionary", json=entry)
    assert r.status == 405
    assert dict_path.read_bytes() == before


async def test_oversized_body_is_413(page, dict_path):
    client, _ = await page()
    before = dict_path.read_bytes()
    big = "森,モリ\n" * (MAX_BODY // 8 + 1000)
    r = await client.post(
        "/api/dictionary/import", data=big.encode(), headers={"Content-Type": "text/csv"}
    )
    assert r.status == 413
    assert dict_path.read_bytes() == before


async def test_token_is_required_when_set(page):
    client, _ = await page(token="s3cret-token")
    assert (await client.get("/api/voices")).status == 401
    assert (await client.get("/")).status == 401
    bad = {"Authorization": "Bearer wrong"}
    assert (await client.get("/api/voices", headers=bad)).status == 401
    good = {"Authorization": "Bearer s3cret-token"}
    assert (await client.get("/api/voices", headers=good)).status == 200
    r = await client.post("/api/speak", json={"text": "はい。"})
    assert r.status == 401
    # a first visit with ?token= sets a cookie and drops the token from the address
    r = await client.get("/?token=s3cret-token", allow_redirects=False)
    assert r.status == 302 and "token" not in r.headers["Location"]
    assert "HttpOnly" in r.headers["Set-Cookie"] and "SameSite=Strict" in r.headers["Set-Cookie"]
    assert (await client.get("/api/voices")).status == 200  # the cookie now
    assert (await client.get("/?token=wrong", allow_redirects=False)).status == 200  # cookie


async def test_ingress_serves_only_the_supervisor_proxy(page):
    client, _ = await page(ingress=True)  # the test client connects from 127.0.0.1
    assert (await client.get("/")).status == 403
    assert (await client.get("/api/voices")).status == 403
    r = await _post(client, "/api/dictionary", {"surface": "森", "reading": "モリ"})
    assert r.status == 403


async def test_ingress_page_is_relative_to_the_ingress_path(page):
    client, _ = await page(ingress=True, allowed_peers=("127.0.0.1",))
    r = await client.get("/", headers={"X-Ingress-Path": "/api/hassio_ingress/AbC-123_x"})
    assert '<base href="/api/hassio_ingress/AbC-123_x/">' in await r.text()
    r = await client.get("/", headers={"X-Ingress-Path": '/x"><script>alert(1)</script>'})
    assert "<base" not in await r.text() and "<script>alert" not in await r.text()
    # the Supervisor forwards the browser's host; the origin is checked against it
    r = await client.post(
        "/api/reading",
        json={"text": "はい"},
        headers={"Origin": "http://homeassistant.local:8123", "X-Forwarded-Host": "evil.test"},
    )
    assert r.status == 403
    r = await client.post(
        "/api/reading",
        json={"text": "はい"},
        headers={
            "Origin": "http://homeassistant.local:8123",
            "X-Forwarded-Host": "homeassistant.local:8123",
        },
    )
    assert r.status == 200


# -- settings and the server -----------------------------------------------------------------


def test_http_flags(tmp_path):
    import argparse

    def parse(*argv: str) -> HttpSettings | None:
        p = argparse.ArgumentParser()
        add_http_arguments(p)
        return http_settings_from_args(p.parse_args(argv))

    assert parse() is None
    assert parse("--http", "8123") == HttpSettings(host="127.0.0.1", port=8123)
    assert parse("--http", ":8123").host == "127.0.0.1"
    assert parse("--http", "[::1]:8123").host == "::1"
    with pytest.raises(SettingsError, match="--http-token"):
        parse("--http", "0.0.0.0:8123")
    assert parse("--http", "0.0.0.0:8123", "--http-token", "t" * 16).token == "t" * 16
    token = tmp_path / "token"
    token.write_text("file-token-12345\n")
    assert parse("--http", "0.0.0.0:1", "--http-token-file", str(token)).token == "file-token-12345"
    assert "file-token-12345" not in repr(parse("--http", "1", "--http-token-file", str(token)))
    (tmp_path / "empty").write_text("")
    with pytest.raises(SettingsError, match="empty"):
        parse("--http", "1", "--http-token-file", str(tmp_path / "empty"))
    assert parse("--http", "0.0.0.0:8099", "--http-ingress").ingress  # the proxy is the gate
    with pytest.raises(SettingsError, match="need"):
        parse("--http-dict", "x.csv")
    with pytest.raises(SettingsError, match="CSV"):
        parse("--http", "1", "--http-dict", "x.json")
    with pytest.raises(SettingsError, match="HOST:PORT"):
        parse("--http", "host:port")


def test_page_dictionary_is_read_like_user_dict(tmp_path):
    settings = parse_settings(
        ["--http", "8080", "--http-dict", str(tmp_path / "d.csv"), "--user-dict", "a.csv"]
    )
    assert settings.user_dicts == (tmp_path / "d.csv", Path("a.csv"))  # --user-dict wins
    assert settings.http is not None and settings.http.dictionary == tmp_path / "d.csv"
    assert parse_settings([]).http is None


async def test_server_serves_the_page_beside_wyoming(start_server, wy, dict_path):
    import aiohttp
    from wyoming.info import Describe

    server = await start_server(http=HttpSettings(port=0, dictionary=dict_path))
    assert server.web is not None and server.web.port
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{server.web.port}/api/status") as r:
            assert r.status == 200
            assert (await r.json())["voices"][0]["name"] == VOICE
    async with wy.client(server) as client:  # the Wyoming port is unchanged
        await client.write_event(Describe().event())
        events = await wy.read_until(client, "info")
    assert events[-1].type == "info"
    web = server.web
    await server.stop()
    assert server.web is None and web._runner is None


async def test_a_speed_measurement_is_taken_again_when_asked(page):
    """`POST /api/voices/{name}/measure` (the status tab's button) asks the server's `TTS`
    (`measure_again`, tested with real voices in tests/engine/int8/test_measure.py); here
    the answers: 202, an unknown voice, nothing to measure."""
    client, state = await page()
    path = f"/api/voices/{VOICE}/measure"
    r = await _post(client, path, {})
    assert r.status == 409 and (await r.json())["code"] == "not_measurable"

    class Measurer:
        asked: list[str] = []

        def measure_again(self, name: str) -> object:
            self.asked.append(name)
            if name == VOICE and len(self.asked) > 1:
                raise ValueError(f"voice {name}: no speed measurement to take")
            return object()

    state.measurer = Measurer()
    r = await _post(client, path, {})
    assert r.status == 202 and await r.json() == {"voice": VOICE, "measuring": True}
    r = await _post(client, path, {})
    body = await r.json()
    assert r.status == 409 and body["code"] == "not_measurable" and "no speed" in body["error"]
    r = await _post(client, "/api/voices/nobody/measure", {})
    body = await r.json()
    assert r.status == 404 and body["code"] == "unknown_voice" and VOICE in body["available"]
    assert Measurer.asked == [VOICE, VOICE]
    r = await _post(client, path, {}, Origin="http://evil.example")  # like every write
    assert r.status == 403 and Measurer.asked == [VOICE, VOICE]


# -- the engine APIs' style IDs on the page ------------------------------------------------


async def _page_and_speakers(server) -> tuple[dict, list]:
    """The page's ``GET /api/voices`` and the engine API's ``GET /speakers``, over loopback."""
    import aiohttp

    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{server.web.port}/api/voices") as r:
            assert r.status == 200
            voices = await r.json()
        async with session.get(f"http://127.0.0.1:{server.engine_api.port}/speakers") as r:
            assert r.status == 200
            speakers = await r.json()
    return voices, speakers


def _ids(voices: dict, speakers: list) -> tuple[dict, dict]:
    """(voice, style) → ID as the page lists it, and as the engine API does."""
    shown = {(v["name"], s): i for v in voices["voices"] for s, i in v["style_ids"].items()}
    served = {(sp["name"], st["name"]): st["id"] for sp in speakers for st in sp["styles"]}
    return shown, served


async def test_the_pages_style_ids_are_the_engine_apis(start_server, embedded_speakers, dict_path):
    """The IDs the page shows are those ``GET /speakers`` serves, voice by voice and style by
    style, with the same speaker UUIDs; the page says where the API listens (the port it
    is bound to, not the 0 asked)."""
    from wyoming_hayakoe.apis.options import EngineApiSettings

    speaker = embedded_speakers[VOICE]
    server = await start_server(
        {VOICE: speaker, "mei-too": speaker},  # two voices: the IDs of both, told apart
        http=HttpSettings(port=0, dictionary=dict_path),
        engine_api=EngineApiSettings(port=0),
    )
    assert server.web is not None and server.engine_api is not None and server.engine_api.port
    voices, speakers = await _page_and_speakers(server)
    shown, served = _ids(voices, speakers)
    assert len(served) == 2 * len(speaker.styles) >= 4
    assert shown == served
    assert len(set(shown.values())) == len(shown)  # one ID per voice and style
    for v in voices["voices"]:  # each style named in the page's own order, the UUID the API's
        assert list(v["style_ids"]) == v["styles"]
        (listed,) = [sp for sp in speakers if sp["name"] == v["name"]]
        assert v["speaker_uuid"] == listed["speaker_uuid"]
    openai_voices = voices["engine_api"].pop("openai_voices")
    shown_voices = {v["name"] for v in voices["voices"]}
    assert voices["engine_api"] == {
        "on": True,
        "host": "127.0.0.1",
        "port": server.engine_api.port,
        "token": False,
    }
    assert len(openai_voices) == 13  # OpenAI's names, each speaking with the default voice
    assert len(set(openai_voices.values())) == 1 and openai_voices["alloy"] in shown_voices


async def test_the_style_ids_are_shown_while_the_engine_api_is_off(page, embedded_speakers):
    """Off, the page still lists the IDs the API would serve (the same function of the
    same voices) and says it is off; without a source of IDs it lists none."""
    from wyoming_hayakoe.apis.style_ids import style_table

    client, state = await page()
    data = await (await client.get("/api/voices")).json()
    assert data["engine_api"] == {"on": False}
    assert data["voices"][0]["style_ids"] is None  # state_for was handed no source
    state.style_ids = style_table
    data = await (await client.get("/api/voices")).json()
    (voice,) = data["voices"]
    table = style_table(embedded_speakers)
    assert voice["style_ids"] == {e.style: e.id for e in table.of_voice(VOICE)}
    assert voice["speaker_uuid"] == table.of_voice(VOICE)[0].speaker_uuid
    assert data["engine_api"] == {"on": False}


@pytest.fixture(scope="module")
def aivis_speakers(aivm_files, layout_root: Path, tmp_path_factory: pytest.TempPathFactory):
    """Two AivisHub voices (small random-weight test files): one of a one-speaker file and
    the second speaker of a two-speaker file."""
    from engine import TTS, EngineOptions

    tts = TTS(
        "cpu",
        cache_dir=tmp_path_factory.mktemp("cache"),
        bert_source=str(layout_root),
        options=EngineOptions(threads=1, precision="fp32"),
    )
    tts.load("one", source=str(aivm_files.one))
    tts.load("bob", source=f"{aivm_files.multi}#speaker=1")
    yield dict(tts.prepare().speakers)
    tts.close()


@pytest.mark.timeout(600)
async def test_an_aivishub_voices_ids_on_the_page_are_aivisspeechs(
    start_server, aivis_speakers, embedded_speakers, aivm_files, dict_path
):
    """AivisHub voices beside the embedded one: the page shows AivisSpeech Engine's IDs
    (from each file's speaker UUID and local style IDs), the same as ``GET /speakers``."""
    from engine.aivm import read_metadata
    from wyoming_hayakoe.apis.options import EngineApiSettings
    from wyoming_hayakoe.apis.style_ids import aivis_style_id

    server = await start_server(
        {**aivis_speakers, VOICE: embedded_speakers[VOICE]},
        http=HttpSettings(port=0, dictionary=dict_path),
        engine_api=EngineApiSettings(port=0),
    )
    voices, speakers = await _page_and_speakers(server)
    shown, served = _ids(voices, speakers)
    assert shown == served
    by_name = {v["name"]: v for v in voices["voices"]}
    for name, path, index in (("one", aivm_files.one, 0), ("bob", aivm_files.multi, 1)):
        manifest_speaker = read_metadata(path).manifest.speakers[index]
        assert by_name[name]["speaker_uuid"] == manifest_speaker.uuid
        assert by_name[name]["style_ids"] == {
            st.name: aivis_style_id(manifest_speaker.uuid, st.local_id)
            for st in manifest_speaker.styles
        }
