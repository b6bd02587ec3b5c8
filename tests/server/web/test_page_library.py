"""The Library tab's page (and the Voices tab's style IDs) in a real browser against a
stand-in of the page's API: the page's own files (`wyoming_hayakoe/web/static`, under the
real Content-Security-Policy) served by a small aiohttp app on loopback whose answers each
test sets, so what the page does with a Markdown license, an error code, a failed job, a
style ID to copy with or without the Clipboard API and a phone's width is checked by events,
in seconds, without a voice. Debian's chromium and chromium-driver, headless (skipped without
them): the shared `browser` fixture and its waits (`tests.helpers.browser`).

The tab draws itself twice on each load, the listing, then the listing after AivisHub was
asked (``?check=1``); here the second tells of a newer version, so a test waits for the
Update button (`_open`) before it acts: nothing it clicks is redrawn under it after that.

``HAYAKOE_SCREENSHOTS=DIR`` saves the Library tab in both languages at 390 and 1280 px there.
"""

from __future__ import annotations

import asyncio
import copy
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web

from tests.helpers.browser import (
    WAIT_S,
    attribute,
    click,
    click_until,
    screenshot,
    set_width,
    shown,
    skip_without_browser,
    text,
    wait,
)
from tests.helpers.net import free_port
from tests.helpers.paths import REPO_ROOT
from wyoming_hayakoe.web.security import add_security_headers

skip_without_browser()
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

pytestmark = pytest.mark.slow

STATIC_DIR = REPO_ROOT / "wyoming_hayakoe" / "web" / "static"
UUID = "0f3c6a52-3f1e-4c55-9a41-5b2c1e0d9a77"
LICENSE = (
    "# テスト用ライセンス\n\n"
    "## 利用条件 ##\n\n"
    "- **商用利用**：可\n"
    "- *クレジット* 表記：`必要`\n"
    "- 詳しくは [AivisHub](https://hub.aivis-project.com/) へ\n\n"
    '<img src="x" alt="no"> ---\n'
)
SOURCE_SENTENCE = "source: not a source the library takes"
BERT_SENTENCE = "the shared BERT model is not in the cache and the server is offline"
READING_SENTENCE = "reading: at most 64 characters"
STYLE_IDS = {"Neutral": 5013, "Happy": 888753760}  # a small ID and an AivisSpeech-sized one
ENGINE_API_ON = {"on": True, "host": "0.0.0.0", "port": 10101, "token": True}


def _listing() -> dict[str, Any]:
    return {
        "configured": [{"name": "openjtalk-mei", "configured": True, "precision": None}],
        "installed": [
            {
                "name": "tsukuyomi-test-with-a-rather-long-name",
                "voices": ["tsukuyomi-test-with-a-rather-long-name"],
                "source": "https://hub.aivis-project.com/aivm-models/" + UUID,
                "kind": "aivishub",
                "file": "x.aivmx",
                "uuid": UUID,
                "version": "1.0.0",
                "size": 262_144_000,
                "license": LICENSE,
                "creators": ["Test Creator", "Another Creator"],
                "int8": {"tsukuyomi-test-with-a-rather-long-name": "int8"},
                "latest_version": "1.1.0",
                "update_available": True,
                "configured": False,
            }
        ],
        "jobs": [
            {
                "id": "7",
                "action": "install",
                "source": "upload:carol.aivm",
                "name": None,
                "state": "failed",
                "bytes": 0,
                "total": None,
                "error": BERT_SENTENCE,
                "error_code": "bert_missing",
                "voices": [],
                "int8": None,
            }
        ],
        "official": ["jvnv-F1-jp", "jvnv-F2-jp", "jvnv-M1-jp", "jvnv-M2-jp"],
        "max_upload": 2 << 30,
    }


class StandInPage:
    """The page's files and a stand-in of its API on a loopback port, on a thread of its own.
    `listing` is what ``GET /api/library`` answers; `dismiss_endpoint` False answers the
    dismiss call 404 as a server without it does; `dismissed` records the calls."""

    def __init__(self) -> None:
        self.port = free_port()
        self.listing = _listing()
        self.dismiss_endpoint = True
        self.dismissed: list[str] = []
        self.engine_api: dict[str, Any] = dict(ENGINE_API_ON)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def reset(self) -> None:
        self.listing = _listing()
        self.dismiss_endpoint = True
        self.dismissed.clear()
        self.engine_api = dict(ENGINE_API_ON)

    def _app(self) -> web.Application:
        app = web.Application()
        app.on_response_prepare.append(add_security_headers)

        async def index(request: web.Request) -> web.Response:
            page = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
            return web.Response(
                text=page.replace("<!--BASE-->", ""), content_type="text/html", charset="utf-8"
            )

        async def voices(request: web.Request) -> web.Response:
            voice = {
                "name": "openjtalk-mei",
                "description": "HTS voice",
                "styles": ["Neutral", "Happy"],
                "default_style": "Neutral",
                "sample_rate": 48000,
                "precision": None,
                "attribution": {"name": "MMDAgent 'Mei'", "url": None},
                "style_ids": STYLE_IDS,
                "speaker_uuid": UUID,
            }
            return web.json_response(
                {
                    "voices": [voice],
                    "presets": [],
                    "default_voice": "openjtalk-mei",
                    "engine_api": self.engine_api,
                }
            )

        async def reading(request: web.Request) -> web.Response:
            text = (await request.json())["text"]
            return web.json_response({"rewritten": text, "phrases": []})

        async def dictionary(request: web.Request) -> web.Response:
            word = {"surface": "葦簀野", "reading": "アシズノ", "accent": 2, "priority": 5}
            return web.json_response(
                {
                    "file": "/data/page.csv",
                    "editable": True,
                    "words": [word],
                    "readonly": [
                        {**word, "surface": "鯖江", "reading": "サバエ", "source": "words.json"}
                    ],
                }
            )

        async def save_word(request: web.Request) -> web.Response:
            body = {"error": READING_SENTENCE, "code": "bad_request", "field": "reading"}
            return web.json_response(body, status=400)

        async def status(request: web.Request) -> web.Response:
            return web.json_response(
                {
                    "version": "0.0.0",
                    "uptime_s": 61,
                    "memory": {"rss_bytes": 300 << 20},
                    "requests": 3,
                    "in_flight": 0,
                    "max_queue": 8,
                    "draining": False,
                    "voices": [{"name": "openjtalk-mei", "in_flight": 0}],
                    "warnings": [],
                }
            )

        async def library(request: web.Request) -> web.Response:
            listing = copy.deepcopy(self.listing)
            if request.query.get("check") != "1":  # AivisHub not asked yet: no newer version
                for entry in listing["installed"]:
                    entry.update(latest_version=None, update_available=False)
            return web.json_response(listing)

        async def install(request: web.Request) -> web.Response:
            source = (await request.json()).get("source", "")
            if source == "unknown-code":
                body = {"error": "a new refusal", "code": "a_code_of_the_future", "field": "source"}
                return web.json_response(body, status=400)
            body = {"error": SOURCE_SENTENCE, "code": "source_invalid", "field": "source"}
            return web.json_response(body, status=400)

        async def job(request: web.Request) -> web.Response:
            for j in self.listing["jobs"]:
                if j["id"] == request.match_info["id"]:
                    return web.json_response(j)
            body = {"error": "no such job", "code": "job_not_found", "field": "job"}
            return web.json_response(body, status=404)

        async def dismiss(request: web.Request) -> web.Response:
            if not self.dismiss_endpoint:  # as an older server answers an unknown /api path
                return web.json_response({"error": f"not found: {request.path}"}, status=404)
            job_id = request.match_info["id"]
            self.dismissed.append(job_id)
            self.listing["jobs"] = [j for j in self.listing["jobs"] if j["id"] != job_id]
            return web.json_response({"dismissed": job_id})

        app.router.add_get("/", index)
        app.router.add_static("/static/", STATIC_DIR)
        app.router.add_get("/api/voices", voices)
        app.router.add_post("/api/reading", reading)
        app.router.add_get("/api/dictionary", dictionary)
        app.router.add_post("/api/dictionary", save_word)
        app.router.add_get("/api/status", status)
        app.router.add_get("/api/library", library)
        app.router.add_post("/api/library/install", install)
        app.router.add_get("/api/library/jobs/{id}", job)
        app.router.add_post("/api/library/jobs/{id}/dismiss", dismiss)
        return app

    def start(self) -> None:
        self.thread.start()

        async def serve() -> None:
            self.runner = web.AppRunner(self._app())
            await self.runner.setup()
            await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

        asyncio.run_coroutine_threadsafe(serve(), self.loop).result(WAIT_S)

    def stop(self) -> None:
        if self.runner is not None:
            asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(WAIT_S)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(WAIT_S)
        self.loop.close()


@pytest.fixture(scope="module")
def stand_in() -> Iterator[StandInPage]:
    page = StandInPage()
    page.start()
    yield page
    page.stop()


@pytest.fixture
def page(stand_in: StandInPage) -> StandInPage:
    stand_in.reset()
    return stand_in


ROW = "#lib-table tr.installed"
LICENSE_CELL = f"{ROW} td.lib-license"


def _open(driver: WebDriver, page: StandInPage, lang: str, *, clear: bool = True) -> None:
    """The Library tab in `lang`, drawn the second time, after AivisHub was asked (its
    Update button shown; a fresh origin's storage when `clear`: no job dismissed here by an
    earlier test)."""
    driver.get("about:blank")  # a load, not a jump within the page at the same address
    driver.get(page.url + f"?lang={lang}#library")
    if clear:
        driver.execute_script("localStorage.clear()")
        driver.refresh()
    wait(driver, lambda d: shown(d, f"{ROW} button.lib-update"), "the library listed, checked")


def _tab(driver: WebDriver, view: str) -> None:
    click(driver, f"#tab-{view}")
    wait(driver, lambda d: shown(d, f"#view-{view}"), view)


def _job_ids(driver: WebDriver) -> list[str]:
    ids: list[str] = driver.execute_script(
        "return [...document.querySelectorAll('#lib-jobs li.job')].map((j) => j.dataset.job)"
    )
    return ids


def test_a_markdown_license_is_shown_as_text(browser: WebDriver, page: StandInPage):
    set_width(browser, 1280)
    _open(browser, page, "ja")
    cell_text, lines, made = browser.execute_script(
        "const cell = document.querySelector(arguments[0]);"
        "return [cell.textContent,"
        " cell.querySelector('.license-text').textContent.split('\\n'),"
        " cell.querySelectorAll('img, h1, h2, strong, em, code, ul, a').length];",
        LICENSE_CELL,
    )
    assert "テスト用ライセンス" in cell_text and "利用条件" in cell_text and "商用利用" in cell_text
    assert not [line for line in [cell_text, *lines] if line.lstrip().startswith("#")], cell_text
    assert "**" not in cell_text and "`" not in cell_text and "](" not in cell_text
    assert "AivisHub (https://hub.aivis-project.com/)" in cell_text
    assert made == 0  # the server's text is never HTML: no element made from it
    assert text(browser, f"{LICENSE_CELL} summary") == "テスト用ライセンス"
    whole = f"{LICENSE_CELL} .license-text"
    click_until(browser, f"{LICENSE_CELL} summary", lambda d: shown(d, whole), "the whole license")
    body = text(browser, whole) or ""
    assert "• 商用利用：可" in body.splitlines()


def test_errors_are_shown_in_the_pages_language(browser: WebDriver, page: StandInPage):
    set_width(browser, 1280)
    _open(browser, page, "ja")
    # a refusal: the page's words for its code, the field named, the server's sentence behind
    browser.find_element(By.ID, "lib-source").send_keys("ftp://example.com/x.aivmx")
    click(browser, "#lib-install")
    wait(browser, lambda d: shown(d, "#lib-error .error-text"), "the refusal")
    assert attribute(browser, "#lib-error", "data-code") == "source_invalid"
    said = text(browser, "#lib-error .error-text") or ""
    assert said.startswith("入手元：") and "ボイスライブラリに追加できない入手元です" in said
    assert SOURCE_SENTENCE not in (text(browser, "#lib-error") or "")  # behind "詳細", closed
    click(browser, "#lib-error summary")
    wait(
        browser,
        lambda d: SOURCE_SENTENCE in (text(d, "#lib-error") or ""),
        "the server's sentence on demand",
    )
    # a failed job: its state and its code's words in Japanese
    job = '#lib-jobs li.job[data-job="7"]'
    assert "失敗" in (text(browser, f"{job} .job-state") or "")
    words = text(browser, f"{job} .job-error .error-text") or ""
    assert "BERT" in words and "約 500 MB" in words and "オフライン" in words
    assert BERT_SENTENCE not in (text(browser, job) or "")
    # a code the page does not know: the server's own sentence, with its field
    source = browser.find_element(By.ID, "lib-source")  # the form is never redrawn
    source.clear()
    source.send_keys("unknown-code")
    click(browser, "#lib-install")
    wait(
        browser,
        lambda d: text(d, "#lib-error") == "入手元：a new refusal",
        "the server's sentence for an unknown code",
    )
    # a word refused: the words for its field beside it, the server's sentence as its title
    _tab(browser, "dictionary")
    browser.find_element(By.ID, "dict-surface").send_keys("葦簀野")
    browser.find_element(By.ID, "dict-reading").send_keys("アシズノ")
    click(browser, "#dict-save")
    beside = wait(browser, lambda d: text(d, "#err-reading"), "the reading's error")
    assert beside == "読みをカタカナかひらがなで、64 文字以内で入力してください。"
    assert attribute(browser, "#err-reading", "title") == READING_SENTENCE
    # the same page in English
    _open(browser, page, "en")
    said = text(browser, job) or ""
    assert "Failed" in said and "shared BERT model (about 500 MB)" in said


@pytest.mark.parametrize("endpoint", [True, False], ids=["dismissed-by-the-server", "404"])
def test_a_failed_job_stays_until_dismissed(browser: WebDriver, page: StandInPage, endpoint: bool):
    page.dismiss_endpoint = endpoint
    if not endpoint:  # an older server lists its failed job on and on
        page.listing["jobs"].append({**page.listing["jobs"][0], "id": "8", "error": "other"})
    set_width(browser, 1280)
    _open(browser, page, "ja")
    assert "7" in _job_ids(browser)
    _open(browser, page, "ja", clear=False)  # still there after a reload
    assert "7" in _job_ids(browser)
    dismiss = '#lib-jobs li.job[data-job="7"] .job-dismiss'
    assert text(browser, dismiss) == "閉じる"
    click(browser, dismiss)
    wait(browser, lambda d: "7" not in _job_ids(d), "the job dismissed")
    assert attribute(browser, "#lib-error", "hidden") is not None
    assert page.dismissed == (["7"] if endpoint else [])
    _open(browser, page, "ja", clear=False)
    assert "7" not in _job_ids(browser)  # gone after a reload too
    if not endpoint:
        assert _job_ids(browser) == ["8"]  # only the one dismissed is hidden
        assert shown(browser, "#lib-jobs-card")
    else:
        assert not shown(browser, "#lib-jobs-card")


def _no_horizontal_scroll(driver: WebDriver) -> tuple[int, int]:
    sizes: list[int] = driver.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth]"
    )
    return sizes[0], sizes[1]


@pytest.mark.parametrize("lang", ["ja", "en"])
def test_usable_at_a_phones_width(browser: WebDriver, page: StandInPage, lang: str):
    set_width(browser, 390, 844)
    try:
        _open(browser, page, lang)
        right, width = browser.execute_script(
            "const b = document.querySelector(arguments[0]);"
            "b.scrollIntoView({block: 'center'});"
            "return [b.getBoundingClientRect().right, window.innerWidth]",
            f"{ROW} .lib-remove",
        )
        assert width == 390
        assert 0 < right <= width, (right, width)
        scroll, inner = _no_horizontal_scroll(browser)
        assert scroll <= inner, f"the Library tab scrolls sideways: {scroll} > {inner}"
        # the license's whole text, opened, still fits
        click_until(
            browser,
            f"{LICENSE_CELL} summary",
            lambda d: shown(d, f"{LICENSE_CELL} .license-text"),
            "the whole license",
        )
        scroll, inner = _no_horizontal_scroll(browser)
        assert scroll <= inner, f"an opened license scrolls sideways: {scroll} > {inner}"
        for view in ("voices", "try", "dictionary", "status"):
            _tab(browser, view)
            scroll, inner = _no_horizontal_scroll(browser)
            assert scroll <= inner, f"{view} scrolls sideways: {scroll} > {inner}"
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


@pytest.mark.skipif(not os.environ.get("HAYAKOE_SCREENSHOTS"), reason="HAYAKOE_SCREENSHOTS unset")
@pytest.mark.parametrize("lang", ["ja", "en"])
@pytest.mark.parametrize("width", [390, 1280])
def test_screenshots(browser: WebDriver, page: StandInPage, lang: str, width: int):
    """The Library tab whole (a refusal, a failed job, a voice with its license open)."""
    set_width(browser, width)
    try:
        _open(browser, page, lang)
        browser.find_element(By.ID, "lib-source").send_keys("ftp://example.com/x.aivmx")
        click(browser, "#lib-install")
        wait(browser, lambda d: shown(d, "#lib-error"), "refusal")
        click_until(
            browser,
            f"{LICENSE_CELL} summary",
            lambda d: shown(d, f"{LICENSE_CELL} .license-text"),
            "the whole license",
        )
        height = browser.execute_script("return document.documentElement.scrollHeight")
        set_width(browser, width, int(height))
        screenshot(browser, f"library-{lang}-{width}")
        for view in ("voices", "try", "dictionary", "status"):
            set_width(browser, width, 900)
            _tab(browser, view)
            screenshot(browser, f"{view}-{lang}-{width}")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


# -- the Voices tab: the engine API's style IDs, selectable and copyable -----------------------


def _open_voices(driver: WebDriver, page: StandInPage, lang: str) -> None:
    driver.get("about:blank")  # a load, not a jump within the page at the same address
    driver.get(page.url + f"?lang={lang}#voices")
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "code.style-id"), "the style IDs")


def _shown_ids(driver: WebDriver) -> list[list[str]]:
    rows: list[list[str]] = driver.execute_script(
        "return [...document.querySelectorAll('article.voice .style-ids li')].map((li) =>"
        " [li.dataset.style, li.querySelector('.style-name').textContent,"
        "  li.querySelector('code.style-id').textContent])"
    )
    return rows


def _copy(driver: WebDriver, style: str) -> tuple[str, str]:
    """Click the Copy button of `style`'s ID; once it has said how it copied, how (its
    ``data-copied``) and its text, read together (the text turns back after 2.5 s)."""
    button = f'.style-ids li[data-style="{style}"] .copy'
    driver.execute_script("delete document.querySelector(arguments[0]).dataset.copied", button)
    click(driver, button)
    how, said = wait(
        driver,
        lambda d: d.execute_script(
            "const b = document.querySelector(arguments[0]);"
            "return b && b.dataset.copied ? [b.dataset.copied, b.textContent] : null;",
            button,
        ),
        "copied",
    )
    return how, said


def _selection(driver: WebDriver) -> str:
    text: str = driver.execute_script("return window.getSelection().toString()")
    return text


# the Clipboard API as a page served over plain http on a LAN has it: not at all
_NO_CLIPBOARD = (
    "Object.defineProperty(navigator, 'clipboard', {value: undefined, configurable: true})"
)
# a Clipboard API that records what it was given (the real one needs a permission prompt)
_RECORDING_CLIPBOARD = (
    "window.copied = [];"
    "Object.defineProperty(navigator, 'clipboard', {configurable: true, value: {"
    " writeText: (text) => { window.copied.push(text); return Promise.resolve(); }}})"
)
_REFUSING_CLIPBOARD = (
    "Object.defineProperty(navigator, 'clipboard', {configurable: true, value: {"
    " writeText: () => Promise.reject(new DOMException('denied', 'NotAllowedError'))}})"
)


def test_style_ids_are_shown_as_text_and_copied(browser: WebDriver, page: StandInPage):
    set_width(browser, 1280)
    _open_voices(browser, page, "en")
    assert _shown_ids(browser) == [
        ["Neutral", "Neutral", "5013"],
        ["Happy", "Happy", "888753760"],
    ]
    heading = browser.execute_script(
        "const ids = document.querySelector('article.voice .style-ids');"
        "let h = ids.previousElementSibling;"
        "while (h && h.tagName !== 'H3') h = h.previousElementSibling;"
        "return h ? h.innerText : null;"
    )
    assert heading.lower() == "style ids (engine api)"
    # where the API listens: a wildcard bind is reached by the page's own host name
    assert attribute(browser, "#engine-api", "data-on") == "true"
    assert text(browser, "#engine-api-url") == "http://127.0.0.1:10101"
    assert text(browser, "#openai-api-url") == "http://127.0.0.1:10101/v1"
    box = text(browser, "#engine-api") or ""
    assert "Authorization: Bearer TOKEN" in box  # the API asks for a token
    assert "own machine only" not in box  # not bound to loopback
    # the Clipboard API: given the ID, the button says so
    note = "article.voice .copy-note"
    browser.execute_script(_RECORDING_CLIPBOARD)
    assert _copy(browser, "Happy") == ("clipboard", "Copied")
    assert browser.execute_script("return window.copied") == ["888753760"]
    assert not shown(browser, note)
    # no Clipboard API (plain http on a LAN): the ID selected, copied by the browser's own
    # command where it can, else the note says how to copy it by hand
    browser.execute_script(_NO_CLIPBOARD + "; window.getSelection().removeAllRanges()")
    how, _ = _copy(browser, "Neutral")
    assert _selection(browser) == "5013"
    assert how in ("command", "selected")
    browser.execute_script(_NO_CLIPBOARD + "; document.execCommand = () => false")
    assert _copy(browser, "Happy") == ("selected", "Selected")
    assert _selection(browser) == "888753760"
    assert shown(browser, note) and "Ctrl+C" in (text(browser, note) or "")
    # a Clipboard API that refuses (no permission): the same fallback
    browser.execute_script(_REFUSING_CLIPBOARD + "; window.getSelection().removeAllRanges()")
    how, _ = _copy(browser, "Neutral")
    assert how == "selected"
    assert _selection(browser) == "5013"
    # the address is copied the same way
    browser.execute_script(_RECORDING_CLIPBOARD)
    click(browser, "#engine-api .copy")
    wait(browser, lambda d: d.execute_script("return window.copied.length"), "address copied")
    assert browser.execute_script("return window.copied") == ["http://127.0.0.1:10101"]


def test_style_ids_while_the_engine_api_is_off(browser: WebDriver, page: StandInPage):
    """Off: the IDs it will serve are listed, the card says it is off and how to turn it on,
    in Japanese; the IDs and their buttons stay within a phone's width."""
    page.engine_api = {"on": False}
    set_width(browser, 390, 844)
    try:
        _open_voices(browser, page, "ja")
        assert attribute(browser, "#engine-api", "data-on") == "false"
        assert text(browser, "#engine-api h2 .tag") == "無効"
        box = text(browser, "#engine-api") or ""
        assert "エンジン API" in box and "無効です" in box
        flags = browser.execute_script(
            "return [...document.querySelectorAll('#engine-api code.flag')].map((c) => c.innerText)"
        )
        assert flags == ["--engine-api-port 10101", "engine_api_token"]
        assert not browser.find_elements(By.ID, "engine-api-url")
        assert [row[2] for row in _shown_ids(browser)] == ["5013", "888753760"]
        buttons = browser.execute_script(
            "return [...document.querySelectorAll('.style-ids .copy')]"
            ".map((b) => [b.innerText, b.getBoundingClientRect().right])"
        )
        assert [said for said, _ in buttons] == ["コピー", "コピー"]
        for _, right in buttons:
            assert 0 < right <= 390, right
        scroll, inner = _no_horizontal_scroll(browser)
        assert scroll <= inner, f"the Voices tab scrolls sideways: {scroll} > {inner}"
        browser.execute_script(_NO_CLIPBOARD + "; document.execCommand = () => false")
        assert _copy(browser, "Happy") == ("selected", "選択済み")
        assert _selection(browser) == "888753760"
        note = "article.voice .copy-note"
        assert shown(browser, note) and "長押し" in (text(browser, note) or "")
        screenshot(browser, "voices-off-ja-390")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
