"""The Library tab's page (and the Voices tab's style IDs) in a real browser against a
stand-in of the page's API: the page's own files (`wyoming_hayakoe/web/static`, under the
real Content-Security-Policy) served by a small aiohttp app on loopback whose answers each
test sets, so what the page does with a Markdown license, an error code, a failed job, a
style ID to copy with or without the Clipboard API and a phone's width is checked by events,
in seconds, without a voice. Debian's chromium and chromium-driver, headless (skipped without
them, as `test_browser.py`).

``HAYAKOE_SCREENSHOTS=DIR`` saves the Library tab in both languages at 390 and 1280 px there.
"""

from __future__ import annotations

import asyncio
import copy
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.helpers.net import free_port
from tests.helpers.paths import REPO_ROOT
from wyoming_hayakoe.web.security import add_security_headers

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
if CHROMIUM is None or DRIVER is None:
    pytest.skip(
        "chromium and chromium-driver are not installed "
        "(apt-get install chromium chromium-driver; .ci/run does)",
        allow_module_level=True,
    )
pytest.importorskip("selenium", reason="selenium (the test extra) is not installed")
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

pytestmark = pytest.mark.slow

WAIT_S = 30
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
            return web.json_response(copy.deepcopy(self.listing))

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


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    options = Options()
    options.binary_location = CHROMIUM
    profile = tmp_path_factory.mktemp("chromium-profile")
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1280,900",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


def _wait(driver: WebDriver, condition: Any, message: str) -> Any:
    return WebDriverWait(driver, WAIT_S, poll_frequency=0.05).until(condition, message)


def _width(driver: WebDriver, width: int, height: int = 900) -> None:
    """The viewport as a phone's (`mobile`: the page's viewport meta applies) or a desktop's."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )


def _open(driver: WebDriver, page: StandInPage, lang: str, *, clear: bool = True) -> None:
    """The Library tab in `lang`, once its table is drawn (a fresh origin's storage when
    `clear`: no job dismissed here by an earlier test)."""
    driver.get(page.url + f"?lang={lang}#library")
    if clear:
        driver.execute_script("localStorage.clear()")
        driver.refresh()
    _wait(
        driver,
        lambda d: d.find_elements(By.CSS_SELECTOR, "#lib-table tr.installed"),
        "the library listed",
    )


def _tab(driver: WebDriver, view: str) -> None:
    driver.find_element(By.ID, f"tab-{view}").click()
    _wait(driver, lambda d: d.find_element(By.ID, f"view-{view}").is_displayed(), view)


def _job_ids(driver: WebDriver) -> list[str]:
    ids: list[str] = driver.execute_script(
        "return [...document.querySelectorAll('#lib-jobs li.job')].map((j) => j.dataset.job)"
    )
    return ids


def _shot(driver: WebDriver, name: str) -> None:
    folder = os.environ.get("HAYAKOE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(Path(folder) / f"page-{name}.png"))


def test_a_markdown_license_is_shown_as_text(browser: WebDriver, page: StandInPage):
    _width(browser, 1280)
    _open(browser, page, "ja")
    cell = browser.find_element(By.CSS_SELECTOR, "#lib-table tr.installed td.lib-license")
    text: str = browser.execute_script("return arguments[0].textContent", cell)
    assert "テスト用ライセンス" in text and "利用条件" in text and "商用利用" in text
    lines = browser.execute_script(
        "return arguments[0].querySelector('.license-text').textContent.split('\\n')", cell
    )
    assert not [line for line in [text, *lines] if line.lstrip().startswith("#")], text
    assert "**" not in text and "`" not in text and "](" not in text
    assert "AivisHub (https://hub.aivis-project.com/)" in text
    # the server's text is never HTML: no element made from it
    assert not cell.find_elements(By.CSS_SELECTOR, "img, h1, h2, strong, em, code, ul, a")
    summary = cell.find_element(By.CSS_SELECTOR, "summary")
    assert summary.text == "テスト用ライセンス"
    summary.click()  # the whole text, as text
    body = _wait(
        browser,
        lambda d: (b := cell.find_element(By.CSS_SELECTOR, ".license-text")).is_displayed() and b,
        "the whole license",
    )
    assert "• 商用利用：可" in body.text.splitlines()


def test_errors_are_shown_in_the_pages_language(browser: WebDriver, page: StandInPage):
    _width(browser, 1280)
    _open(browser, page, "ja")
    # a refusal: the page's words for its code, the field named, the server's sentence behind
    browser.find_element(By.ID, "lib-source").send_keys("ftp://example.com/x.aivmx")
    browser.find_element(By.ID, "lib-install").click()
    error = _wait(
        browser,
        lambda d: (e := d.find_element(By.ID, "lib-error")).is_displayed() and e,
        "the refusal",
    )
    assert error.get_attribute("data-code") == "source_invalid"
    shown = error.find_element(By.CSS_SELECTOR, ".error-text").text
    assert shown.startswith("入手元：") and "ボイスライブラリに追加できない入手元です" in shown
    assert SOURCE_SENTENCE not in error.text  # behind "詳細", closed
    error.find_element(By.CSS_SELECTOR, "summary").click()
    _wait(browser, lambda d: SOURCE_SENTENCE in error.text, "the server's sentence on demand")
    # a failed job: its state and its code's words in Japanese
    job = browser.find_element(By.CSS_SELECTOR, '#lib-jobs li.job[data-job="7"]')
    assert "失敗" in job.find_element(By.CSS_SELECTOR, ".job-state").text
    words = job.find_element(By.CSS_SELECTOR, ".job-error .error-text").text
    assert "BERT" in words and "約 500 MB" in words and "オフライン" in words
    assert BERT_SENTENCE not in job.text
    # a code the page does not know: the server's own sentence, with its field
    source = browser.find_element(By.ID, "lib-source")
    source.clear()
    source.send_keys("unknown-code")
    browser.find_element(By.ID, "lib-install").click()
    _wait(
        browser,
        lambda d: d.find_element(By.ID, "lib-error").text == "入手元：a new refusal",
        "the server's sentence for an unknown code",
    )
    # a word refused: the words for its field beside it, the server's sentence as its title
    _tab(browser, "dictionary")
    browser.find_element(By.ID, "dict-surface").send_keys("葦簀野")
    browser.find_element(By.ID, "dict-reading").send_keys("アシズノ")
    browser.find_element(By.ID, "dict-save").click()
    beside = _wait(
        browser,
        lambda d: (e := d.find_element(By.ID, "err-reading")).text and e,
        "the reading's error",
    )
    assert beside.text == "読みをカタカナかひらがなで、64 文字以内で入力してください。"
    assert beside.get_attribute("title") == READING_SENTENCE
    # the same page in English
    _open(browser, page, "en")
    job = browser.find_element(By.CSS_SELECTOR, '#lib-jobs li.job[data-job="7"]')
    assert "Failed" in job.text and "shared BERT model (about 500 MB)" in job.text


@pytest.mark.parametrize("endpoint", [True, False], ids=["dismissed-by-the-server", "404"])
def test_a_failed_job_stays_until_dismissed(browser: WebDriver, page: StandInPage, endpoint: bool):
    page.dismiss_endpoint = endpoint
    if not endpoint:  # an older server lists its failed job on and on
        page.listing["jobs"].append({**page.listing["jobs"][0], "id": "8", "error": "other"})
    _width(browser, 1280)
    _open(browser, page, "ja")
    assert "7" in _job_ids(browser)
    browser.refresh()  # still there after a reload
    _wait(browser, lambda d: "7" in _job_ids(d), "the failed job after a reload")
    dismiss = browser.find_element(By.CSS_SELECTOR, '#lib-jobs li.job[data-job="7"] .job-dismiss')
    assert dismiss.text == "閉じる"
    dismiss.click()
    _wait(browser, lambda d: "7" not in _job_ids(d), "the job dismissed")
    assert browser.find_element(By.ID, "lib-error").get_attribute("hidden") is not None
    assert page.dismissed == (["7"] if endpoint else [])
    _open(browser, page, "ja", clear=False)
    assert "7" not in _job_ids(browser)  # gone after a reload too
    if not endpoint:
        assert _job_ids(browser) == ["8"]  # only the one dismissed is hidden
        assert browser.find_element(By.ID, "lib-jobs-card").is_displayed()
    else:
        assert not browser.find_element(By.ID, "lib-jobs-card").is_displayed()


def _no_horizontal_scroll(driver: WebDriver) -> tuple[int, int]:
    sizes: list[int] = driver.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth]"
    )
    return sizes[0], sizes[1]


@pytest.mark.parametrize("lang", ["ja", "en"])
def test_usable_at_a_phones_width(browser: WebDriver, page: StandInPage, lang: str):
    _width(browser, 390, 844)
    try:
        _open(browser, page, lang)
        remove = browser.find_element(By.CSS_SELECTOR, "#lib-table tr.installed .lib-remove")
        right, width = browser.execute_script(
            "arguments[0].scrollIntoView({block: 'center'});"
            "return [arguments[0].getBoundingClientRect().right, window.innerWidth]",
            remove,
        )
        assert width == 390
        assert 0 < right <= width, (right, width)
        scroll, inner = _no_horizontal_scroll(browser)
        assert scroll <= inner, f"the Library tab scrolls sideways: {scroll} > {inner}"
        # the license's whole text, opened, still fits
        browser.find_element(By.CSS_SELECTOR, "td.lib-license summary").click()
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
    _width(browser, width)
    try:
        _open(browser, page, lang)
        browser.find_element(By.ID, "lib-source").send_keys("ftp://example.com/x.aivmx")
        browser.find_element(By.ID, "lib-install").click()
        _wait(browser, lambda d: d.find_element(By.ID, "lib-error").is_displayed(), "refusal")
        browser.find_element(By.CSS_SELECTOR, "td.lib-license summary").click()
        height = browser.execute_script("return document.documentElement.scrollHeight")
        _width(browser, width, int(height))
        _shot(browser, f"library-{lang}-{width}")
        for view in ("voices", "try", "dictionary", "status"):
            _width(browser, width, 900)
            _tab(browser, view)
            _shot(browser, f"{view}-{lang}-{width}")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


# -- the Voices tab: the engine API's style IDs, selectable and copyable -----------------------


def _open_voices(driver: WebDriver, page: StandInPage, lang: str) -> None:
    driver.get("about:blank")  # a load, not a jump within the page at the same address
    driver.get(page.url + f"?lang={lang}#voices")
    _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "code.style-id"), "the style IDs")


def _shown_ids(driver: WebDriver) -> list[list[str]]:
    rows: list[list[str]] = driver.execute_script(
        "return [...document.querySelectorAll('article.voice .style-ids li')].map((li) =>"
        " [li.dataset.style, li.querySelector('.style-name').textContent,"
        "  li.querySelector('code.style-id').textContent])"
    )
    return rows


def _copy(driver: WebDriver, style: str) -> Any:
    """Click the Copy button of `style`'s ID; its button once it has said how it copied."""
    button = driver.find_element(By.CSS_SELECTOR, f'.style-ids li[data-style="{style}"] .copy')
    button.click()
    return _wait(driver, lambda d: button.get_attribute("data-copied") and button, "copied")


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
    _width(browser, 1280)
    _open_voices(browser, page, "en")
    assert _shown_ids(browser) == [
        ["Neutral", "Neutral", "5013"],
        ["Happy", "Happy", "888753760"],
    ]
    heading = browser.find_element(By.CSS_SELECTOR, "article.voice .style-ids").find_element(
        By.XPATH, "preceding-sibling::h3[1]"
    )
    assert heading.text.lower() == "style ids (engine api)"
    # where the API listens: a wildcard bind is reached by the page's own host name
    box = browser.find_element(By.ID, "engine-api")
    assert box.get_attribute("data-on") == "true"
    assert browser.find_element(By.ID, "engine-api-url").text == "http://127.0.0.1:10101"
    assert browser.find_element(By.ID, "openai-api-url").text == "http://127.0.0.1:10101/v1"
    assert "Authorization: Bearer TOKEN" in box.text  # the API asks for a token
    assert "own machine only" not in box.text  # not bound to loopback
    # the Clipboard API: given the ID, the button says so
    browser.execute_script(_RECORDING_CLIPBOARD)
    button = _copy(browser, "Happy")
    assert button.get_attribute("data-copied") == "clipboard"
    assert button.text == "Copied"
    assert browser.execute_script("return window.copied") == ["888753760"]
    note = browser.find_element(By.CSS_SELECTOR, "article.voice .copy-note")
    assert not note.is_displayed()
    # no Clipboard API (plain http on a LAN): the ID selected, copied by the browser's own
    # command where it can, else the note says how to copy it by hand
    browser.execute_script(_NO_CLIPBOARD + "; window.getSelection().removeAllRanges()")
    button = _copy(browser, "Neutral")
    assert _selection(browser) == "5013"
    assert button.get_attribute("data-copied") in ("command", "selected")
    browser.execute_script(_NO_CLIPBOARD + "; document.execCommand = () => false")
    button = _copy(browser, "Happy")
    assert button.get_attribute("data-copied") == "selected" and button.text == "Selected"
    assert _selection(browser) == "888753760"
    assert note.is_displayed() and "Ctrl+C" in note.text
    # a Clipboard API that refuses (no permission): the same fallback
    browser.execute_script(_REFUSING_CLIPBOARD + "; window.getSelection().removeAllRanges()")
    button = _copy(browser, "Neutral")
    assert button.get_attribute("data-copied") == "selected"
    assert _selection(browser) == "5013"
    # the address is copied the same way
    browser.execute_script(_RECORDING_CLIPBOARD)
    box.find_element(By.CSS_SELECTOR, ".copy").click()
    _wait(browser, lambda d: d.execute_script("return window.copied.length"), "address copied")
    assert browser.execute_script("return window.copied") == ["http://127.0.0.1:10101"]


def test_style_ids_while_the_engine_api_is_off(browser: WebDriver, page: StandInPage):
    """Off: the IDs it will serve are listed, the card says it is off and how to turn it on,
    in Japanese; the IDs and their buttons stay within a phone's width."""
    page.engine_api = {"on": False}
    _width(browser, 390, 844)
    try:
        _open_voices(browser, page, "ja")
        box = browser.find_element(By.ID, "engine-api")
        assert box.get_attribute("data-on") == "false"
        assert box.find_element(By.CSS_SELECTOR, "h2 .tag").text == "無効"
        assert "エンジン API" in box.text and "無効です" in box.text
        flags = [c.text for c in box.find_elements(By.CSS_SELECTOR, "code.flag")]
        assert flags == ["--engine-api-port 10101", "engine_api_token"]
        assert not box.find_elements(By.ID, "engine-api-url")
        assert [row[2] for row in _shown_ids(browser)] == ["5013", "888753760"]
        buttons = browser.find_elements(By.CSS_SELECTOR, ".style-ids .copy")
        assert [b.text for b in buttons] == ["コピー", "コピー"]
        for b in buttons:
            right = browser.execute_script("return arguments[0].getBoundingClientRect().right", b)
            assert 0 < right <= 390, right
        scroll, inner = _no_horizontal_scroll(browser)
        assert scroll <= inner, f"the Voices tab scrolls sideways: {scroll} > {inner}"
        browser.execute_script(_NO_CLIPBOARD + "; document.execCommand = () => false")
        button = _copy(browser, "Happy")
        assert button.text == "選択済み" and _selection(browser) == "888753760"
        note = browser.find_element(By.CSS_SELECTOR, "article.voice .copy-note")
        assert note.is_displayed() and "長押し" in note.text
        _shot(browser, "voices-off-ja-390")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
