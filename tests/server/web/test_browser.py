"""The web page in a real browser, as a person uses it: Debian's chromium, headless, driven by
Selenium through Debian's chromium-driver (nothing is downloaded), against the real program
(``python -m wyoming_hayakoe --http ...``) on the embedded voice.

Skipped, saying why, where chromium, chromium-driver or selenium is missing (`.ci/run`
installs them). The shared `browser` fixture and its waits (`tests.helpers.browser`): no
element is kept across a wait or an action, the page redraws what its answers change.
``HAYAKOE_SCREENSHOTS=DIR`` saves the main views there (the pictures of the README and
docs/web.md come from ``HAYAKOE_SCREENSHOTS=docs/images``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.helpers.aivishub import HubModel, StandInHub, later_version
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
from tests.helpers.program import program_env

skip_without_browser()
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions

pytestmark = pytest.mark.slow

HUB_PAGE = "https://hub.aivis-project.com/aivm-models/"
SURNAME = "葦簀野"  # a made-up family name: OpenJTalk guesses ヨシズノ
READING = "アシズノ"


class Server:
    """The real program with the page on, started and restarted on the same ports."""

    def __init__(
        self, dictionary: Path, readonly: Path | None, extra: tuple[str, ...] = ()
    ) -> None:
        self.dictionary = dictionary
        self.readonly = readonly
        self.extra = extra
        self.port = free_port()
        self.http_port = free_port()
        self.proc: subprocess.Popen[str] | None = None
        self.log: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/"

    def start(self) -> None:
        ready = threading.Event()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "wyoming_hayakoe",
                "--uri",
                f"tcp://127.0.0.1:{self.port}",
                "--http",
                f"127.0.0.1:{self.http_port}",
                "--http-dict",
                str(self.dictionary),
                *(("--user-dict", str(self.readonly)) if self.readonly else ()),
                "--preset",
                "alarm=openjtalk-mei:High,speed=1.2",
                *self.extra,
            ],
            cwd=REPO_ROOT,
            env=program_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        proc = self.proc

        def read() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                self.log.append(line)
                if "Ready" in line:
                    ready.set()
            ready.set()  # it ended: stop waiting

        threading.Thread(target=read, daemon=True).start()
        ready.wait(WAIT_S)
        assert proc.poll() is None and any("Ready" in x for x in self.log), "".join(self.log)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                assert self.proc.wait(30) == 0, "".join(self.log)
            finally:
                if self.proc.poll() is None:
                    self.proc.kill()
                    self.proc.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("page")
    words = folder / "user_words.json"  # as the add-on writes its user_words option
    words.write_text(
        '{"words": [{"surface": "鯖江", "reading": "サバエ", "accent": 1},\n'
        '{"surface": "SwitchBot", "reading": "スイッチボット", "accent": 4}]}\n',
        encoding="utf-8",
    )
    s = Server(folder / "page.csv", words)
    s.start()
    yield s
    s.stop()


def _open(driver: WebDriver, server: Server, view: str) -> None:
    driver.get(server.url + "?lang=en")
    wait(driver, lambda d: text(d, "#tab-voices") == "Voices", "page loaded")
    _tab(driver, view)


def _tab(driver: WebDriver, view: str) -> None:
    click(driver, f"#tab-{view}")
    wait(driver, lambda d: shown(d, f"#view-{view}"), f"{view} shown")


def _reading(driver: WebDriver) -> str:
    return attribute(driver, "#phrases", "data-reading") or ""


def _buttons(driver: WebDriver, css: str) -> int:
    """How many buttons the element `css` selects holds (0 without the element)."""
    found: int = driver.execute_script(
        "const el = document.querySelector(arguments[0]);"
        "return el ? el.querySelectorAll('button').length : 0;",
        css,
    )
    return found


def test_voice_sample_plays_to_its_end(browser: WebDriver, server: Server):
    _open(browser, server, "voices")
    play = 'button.play[data-style="Neutral"]'
    wait(browser, lambda d: shown(d, play), "a play button")
    assert (text(browser, "article.voice h2") or "").startswith("openjtalk-mei")
    assert "48000 Hz" in (text(browser, "article.voice .facts") or "")
    click(browser, play)
    wait(
        browser,
        lambda d: d.execute_script("return document.getElementById('sample-player').ended"),
        "the sample played to its end",
    )
    duration = browser.execute_script("return document.getElementById('sample-player').duration")
    assert duration > 1.0
    screenshot(browser, "voices")


def _morae(driver: WebDriver) -> list[str]:
    found: list[str] = driver.execute_script(
        "return [...document.querySelectorAll('#dict-accent-picker button')]"
        ".map((b) => b.innerText)"
    )
    return found


def test_fix_a_family_name_hear_it_and_keep_it_after_a_restart(browser: WebDriver, server: Server):
    _open(browser, server, "try")
    box = browser.find_element(By.ID, "text")  # the form's fields are never redrawn
    box.clear()
    box.send_keys(f"{SURNAME}さんが、10時にWiFiを直しに来ました。")
    wait(browser, lambda d: "ワイファイ" in _reading(d), "the reading of the sentence")
    rewritten = text(browser, "#rewritten") or ""
    assert "10時" in rewritten and "ワイファイ" in rewritten  # the rewriting is shown
    before = _reading(browser)
    assert READING not in before
    # the dictionary: surface, reading, accent by clicking the second mora
    _tab(browser, "dictionary")
    browser.find_element(By.ID, "dict-surface").send_keys(SURNAME)
    wait(
        browser,
        lambda d: "ヨシズノ" in (text(d, "#dict-now") or ""),
        "the reading before the word",
    )
    browser.find_element(By.ID, "dict-reading").send_keys("あしずの")
    # the picker drawn for the whole reading (it is drawn again as the reading grows)
    wait(browser, lambda d: _morae(d) == ["ア", "シ", "ズ", "ノ"], "the accent picker")
    click_until(
        browser,
        '#dict-accent-picker button[data-index="2"]',
        lambda d: attribute(d, "#dict-accent-value", "data-accent") == "2",
        "the accent on the second mora",
    )
    screenshot(browser, "dictionary")
    click(browser, "#dict-save")
    row = f'#dict-table tr[data-surface="{SURNAME}"]'
    said = wait(browser, lambda d: text(d, row), "the new word in the table")
    assert READING in said
    assert _buttons(browser, row)  # edit, delete
    fixed = '#dict-table tr.readonly[data-surface="鯖江"]'
    assert "read-only · user_words.json" in (text(browser, fixed) or "")
    assert not _buttons(browser, fixed)
    assert f"{SURNAME},{READING},2,5" in server.dictionary.read_text("utf-8")
    preview = wait(
        browser,
        lambda d: attribute(d, "#dict-preview", "data-after"),
        "the reading after the word",
    )
    assert preview.startswith(READING)
    assert "ヨシズノ" in (text(browser, "#dict-preview") or "")  # before → after
    # see and hear the new reading
    _tab(browser, "try")
    wait(browser, lambda d: READING in _reading(d), "the new reading")
    click(browser, "#speak")
    samples = wait(
        browser,
        lambda d: attribute(d, "#speak-stats", "data-samples"),
        "speech streamed",
    )
    assert int(samples) > 48000 // 2
    stats = text(browser, "#speak-stats") or ""
    assert "first audio" in stats and "RTF" in stats
    wait(browser, lambda d: text(d, "#speak") == "▶ Speak", "played to the end")
    screenshot(browser, "try")
    # a restart: the word is still there, and still read
    server.stop()
    server.start()
    _open(browser, server, "dictionary")
    said = wait(browser, lambda d: text(d, row), "the word after a restart")
    assert READING in said
    _tab(browser, "try")
    box = browser.find_element(By.ID, "text")
    box.clear()
    box.send_keys(f"{SURNAME}さん")
    wait(browser, lambda d: _reading(d).startswith(READING), "the reading after a restart")


def test_import_a_csv_with_one_bad_line(browser: WebDriver, server: Server, tmp_path: Path):
    csv_file = tmp_path / "words.csv"
    csv_file.write_text("surface,reading,accent,priority\n森山,モリヤマ,1,5\n林田,hayashida,1,5\n")
    before = server.dictionary.read_bytes()
    _open(browser, server, "dictionary")
    upload = browser.find_element(By.ID, "dict-import")
    browser.execute_script("arguments[0].hidden = false", upload)
    upload.send_keys(str(csv_file))
    item = wait(
        browser,
        lambda d: text(d, '#import-result li[data-line="3"]'),
        "the bad line's error",
    )
    assert "line 3" in item and "reading" in item and "hayashida" in item
    assert len(browser.find_elements(By.CSS_SELECTOR, "#import-result li")) == 1
    assert server.dictionary.read_bytes() == before  # nothing imported
    assert not browser.find_elements(By.CSS_SELECTOR, '#dict-table tr[data-surface="森山"]')


def _held_hub() -> Any:
    """A `HeldHub` and `HubModel`."""

    class HeldHub(StandInHub):
        """The stand-in AivisHub whose download stops at each of `stops` (fractions of the file)
        until the test lets it go on: the page's progress bar is seen at two values between 0 and
        100 by events, however fast the machine."""

        def hold(self, stops: tuple[float, ...]) -> None:
            self.stops = stops
            self.gates = [asyncio.Event() for _ in stops]

        async def _file(self, request: web.Request) -> web.StreamResponse:
            data = self.models[request.match_info["uuid"]].file.read_bytes()
            response = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
            response.content_length = len(data)
            await response.prepare(request)
            start = 0
            with contextlib.suppress(ConnectionResetError):  # the server stopped (a failed test)
                for stop, gate in zip(self.stops, self.gates, strict=True):
                    end = int(len(data) * stop)
                    await response.write(data[start:end])
                    start = end
                    await gate.wait()
                await response.write(data[start:])
                await response.write_eof()
            return response

    return HeldHub(), HubModel


@contextlib.contextmanager
def _running(hub: Any) -> Iterator[asyncio.AbstractEventLoop]:
    """The hub on a thread of its own (the browser test is synchronous)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(hub.start(), loop).result(WAIT_S)
        yield loop
    finally:
        for gate in hub.gates:
            loop.call_soon_threadsafe(gate.set)
        asyncio.run_coroutine_threadsafe(hub.stop(), loop).result(WAIT_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(WAIT_S)
        loop.close()


def _job_percent(driver: WebDriver) -> float | None:
    """The download's percentage on the newest job's bar, None while it has none (read in
    one script: the page redraws the jobs at each poll)."""
    value = driver.execute_script(
        "const bar = document.querySelector("
        "'#lib-jobs li.job[data-state=\"downloading\"] progress');"
        "return bar ? bar.dataset.percent : '';"
    )
    return float(value) if value else None


def _library_row(driver: WebDriver, voice: str) -> dict[str, str] | None:
    """An installed voice's row on the Library tab: its version cell and its Update button's
    text ("" without one), None while it is not listed (read in one script: the page redraws
    the table)."""
    row: dict[str, str] | None = driver.execute_script(
        "const r = document.querySelector("
        '`#lib-table tr.installed[data-voice="${arguments[0]}"]`);'
        "if (!r) return null;"
        "const b = r.querySelector('button.lib-update');"
        "return {version: r.cells[1].textContent, update: b ? b.textContent : ''};",
        voice,
    )
    return row


def test_library_install_from_an_aivishub_page_with_progress_then_remove(
    browser: WebDriver, aivm_files, layout_root: Path, tmp_path: Path
):
    hub, hub_model = _held_hub()
    hub.hold((0.3, 0.7))
    model = hub.add(hub_model(aivm_files.one))
    library = tmp_path / "library"
    with _running(hub) as loop:
        server = Server(
            tmp_path / "page.csv",
            None,
            (
                "--library-dir",
                str(library),
                "--aivishub-api",
                hub.api,
                "--cache-dir",
                str(tmp_path / "cache"),
                "--bert-source",
                str(layout_root),
                "--threads",
                "1",
                "--no-warmup",
                "--precision",
                "fp32",
            ),
        )
        server.start()
        try:
            _open(browser, server, "library")
            mei = '#lib-table tr[data-voice="openjtalk-mei"]'
            said = wait(browser, lambda d: text(d, mei), "the configured voice")
            assert "configured" in said
            assert not _buttons(browser, mei)  # not removable
            official = browser.execute_script(
                "return [...document.querySelectorAll('#lib-official button')]"
                ".map((b) => b.dataset.voice)"
            )
            assert official == ["jvnv-F1-jp", "jvnv-F2-jp", "jvnv-M1-jp", "jvnv-M2-jp"]
            browser.find_element(By.ID, "lib-source").send_keys(HUB_PAGE + model.uuid)
            click(browser, "#lib-install")
            # the bar moves: held at 30 %, then at 70 % of the file
            seen: list[float] = []
            for gate in hub.gates:
                percent = wait(
                    browser,
                    lambda d: (
                        (p := _job_percent(d)) is not None and p not in seen and 0 < p < 100 and p
                    ),
                    f"the bar past {seen}",
                )
                seen.append(percent)
                if len(seen) == 1:
                    screenshot(browser, "library-progress")
                loop.call_soon_threadsafe(gate.set)
            assert seen == sorted(seen) and len(seen) == 2, seen
            assert abs(seen[0] - 30) < 1 and abs(seen[1] - 70) < 1, seen
            row = '#lib-table tr.installed[data-voice="tsukuyomi-test"]'
            wait(browser, lambda d: shown(d, row), "the voice listed once ready")
            job = browser.execute_script(
                "const j = document.querySelector('#lib-jobs li.job');"
                "return [j.dataset.state, j.querySelector('progress').dataset.percent];"
            )
            assert job == ["ready", "100.0"], job
            said = text(browser, row) or ""
            assert model.version in said and "ACML 1.0" in said and "AivisHub" in said
            assert "fp32" in said  # its precision: --precision fp32
            assert shown(browser, f"{row} button.lib-remove")
            assert not shown(browser, f"{row} button.lib-update")  # no newer version
            screenshot(browser, "library-installed")
            # the other tabs see it
            _tab(browser, "voices")
            wait(
                browser,
                lambda d: shown(d, 'article.voice[data-voice="tsukuyomi-test"]'),
                "the new voice on the Voices tab",
            )
            # a newer version on the hub: the tab, opened again, offers it; Update swaps it in
            hub.add(hub_model(later_version(aivm_files, tmp_path / "v2.aivmx", "1.1.0")))
            _open(browser, server, "library")
            offered = wait(
                browser,
                lambda d: (r := _library_row(d, "tsukuyomi-test")) and r["update"] and r,
                "the Update button",
            )
            assert offered["version"] == "1.0.0" and "1.1.0" in offered["update"], offered
            click(browser, f"{row} button.lib-update", "Update")
            wait(
                browser,
                lambda d: (
                    (r := _library_row(d, "tsukuyomi-test"))
                    and r["version"] == "1.1.0"
                    and not r["update"]
                ),
                "the new version listed, no update offered",
            )
            from wyoming_hayakoe.library.naming import library_file_name

            assert [p.name for p in library.glob("*.aivmx")] == [
                library_file_name(model.uuid, "1.1.0", "tsukuyomi-test", ".aivmx")
            ]  # the new version's file only (named from the model's UUID, version and name)
            # remove: gone from the page and from the folder
            wait(browser, lambda d: shown(d, f"{row} button.lib-remove"), "the voice again")
            click(browser, f"{row} button.lib-remove")
            wait(browser, expected_conditions.alert_is_present(), "the confirmation").accept()
            wait(
                browser,
                lambda d: (
                    not d.find_elements(
                        By.CSS_SELECTOR, '#lib-table tr[data-voice="tsukuyomi-test"]'
                    )
                ),
                "the voice gone",
            )
            assert not list(library.glob("*.aivmx"))
            assert attribute(browser, "#lib-error", "hidden") is not None
        finally:
            server.stop()


def _failed_jobs(driver: WebDriver) -> list[str]:
    ids: list[str] = driver.execute_script(
        "return [...document.querySelectorAll('#lib-jobs li.job[data-state=\"failed\"]')]"
        ".map((j) => j.dataset.job)"
    )
    return ids


def test_a_failed_upload_stays_after_a_reload_until_dismissed(browser: WebDriver, tmp_path: Path):
    broken = tmp_path / "broken.aivmx"
    broken.write_bytes(b"not an AivisHub file " * 64)
    server = Server(
        tmp_path / "page.csv",
        None,
        ("--library-dir", str(tmp_path / "library"), "--cache-dir", str(tmp_path / "cache")),
    )
    server.start()
    try:
        mei = '#lib-table tr[data-voice="openjtalk-mei"]'
        browser.get(server.url + "?lang=ja#library")
        wait(browser, lambda d: text(d, "#tab-library") == "ライブラリ", "ja")
        wait(browser, lambda d: shown(d, mei), "the library listed")
        browser.execute_script("localStorage.clear()")  # nothing dismissed here before
        upload = browser.find_element(By.ID, "lib-file")  # the form is never redrawn
        browser.execute_script("arguments[0].hidden = false", upload)
        upload.send_keys(str(broken))
        job_id = wait(browser, lambda d: (ids := _failed_jobs(d)) and ids[0], "the job failed")
        job = f'#lib-jobs li.job[data-job="{job_id}"]'
        assert "失敗" in (text(browser, f"{job} .job-state") or "")
        said = text(browser, f"{job} .job-error .error-text")
        assert said
        listed = {j["id"]: j for j in _listing(server)["jobs"]}
        code = listed[job_id].get("error_code")
        if code:  # the page's words for the server's code, its sentence behind 詳細
            assert attribute(browser, f"{job} .job-error", "data-code") == code
            assert said != listed[job_id]["error"]
        # a reload: the failed job is still there, until dismissed
        browser.refresh()
        wait(browser, lambda d: job_id in _failed_jobs(d), "the failed job after a reload")
        click(browser, f"{job} .job-dismiss")
        wait(browser, lambda d: job_id not in _failed_jobs(d), "the job dismissed")
        assert job_id not in {j["id"] for j in _listing(server)["jobs"]}  # the server forgot it
        browser.refresh()
        wait(browser, lambda d: shown(d, mei), "the library listed again")
        assert job_id not in _failed_jobs(browser)
        assert not shown(browser, "#lib-jobs-card")
        assert not list((tmp_path / "library").glob("*.aivmx"))
    finally:
        server.stop()


def _listing(server: Server) -> Any:
    """``GET /api/library`` of `server`, as the page reads it."""
    with urllib.request.urlopen(server.url + "api/library", timeout=WAIT_S) as answer:
        return json.load(answer)


def _style_ids_shown(driver: WebDriver) -> dict[tuple[str, str], int]:
    rows: list[list[str]] = driver.execute_script(
        "return [...document.querySelectorAll('article.voice .style-ids code.style-id')].map("
        "(c) => [c.closest('article').dataset.voice, c.dataset.style, c.textContent])"
    )
    return {(voice, style): int(sid) for voice, style, sid in rows}


def _voices_with_ids(driver: WebDriver, url: str, lang: str) -> None:
    driver.get("about:blank")  # a load, not a jump within the page at the same address
    driver.get(url + f"?lang={lang}#voices")
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "code.style-id"), "the style IDs")


def _whole_page_shot(driver: WebDriver, width: int, name: str) -> None:
    height = driver.execute_script("return document.documentElement.scrollHeight")
    set_width(driver, width, int(height))
    screenshot(driver, name)
    set_width(driver, width)


def test_style_ids_on_the_page_are_the_engine_apis(
    browser: WebDriver, server: Server, embedded_speakers, tmp_path: Path
):
    """The Voices tab lists each style's ID as the engine API serves it (``GET /speakers``),
    in both languages, at a phone's and a desktop's width; the address shown is the API's,
    and its Copy button puts it on the clipboard. With the API off (the module's server) the
    IDs are those it would serve, and the page says it is off."""
    from wyoming_hayakoe.apis.style_ids import style_table

    try:
        # off: the IDs the API would serve for these voices
        set_width(browser, 1280)
        _voices_with_ids(browser, server.url, "en")
        would = {(e.voice, e.style): e.id for e in style_table(embedded_speakers).entries}
        assert _style_ids_shown(browser) == would
        assert attribute(browser, "#engine-api", "data-on") == "false"
        assert "--engine-api-port 10101" in (text(browser, "#engine-api") or "")
        # on: the page's IDs are the API's, voice by voice and style by style
        api_port = free_port()
        on = Server(tmp_path / "page.csv", None, ("--engine-api-port", str(api_port)))
        on.start()
        try:
            api = f"http://127.0.0.1:{api_port}"
            with urllib.request.urlopen(f"{api}/speakers", timeout=WAIT_S) as answer:
                speakers = json.load(answer)
            served = {(sp["name"], st["name"]): st["id"] for sp in speakers for st in sp["styles"]}
            assert len(served) >= 5
            for lang in ("en", "ja"):
                for width in (390, 1280):
                    set_width(browser, width)
                    _voices_with_ids(browser, on.url, lang)
                    assert _style_ids_shown(browser) == served, (lang, width)
                    assert text(browser, "#engine-api-url") == api
                    assert text(browser, "#openai-api-url") == f"{api}/v1"
                    sizes = browser.execute_script(
                        "return [document.documentElement.scrollWidth, window.innerWidth]"
                    )
                    assert sizes[0] <= sizes[1], f"{lang} {width}: scrolls sideways {sizes}"
                    rights = browser.execute_script(
                        "return [...document.querySelectorAll('.style-ids .copy')]"
                        ".map((b) => b.getBoundingClientRect().right)"
                    )
                    assert rights, (lang, width)
                    for right in rights:
                        assert 0 < right <= width, (lang, width, right)
                    _whole_page_shot(browser, width, f"voices-ids-{lang}-{width}")
            # the real Clipboard API (127.0.0.1 is a secure context), permission granted
            browser.execute_cdp_cmd(
                "Browser.grantPermissions",
                {
                    "origin": on.url.rstrip("/"),
                    "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"],
                },
            )
            set_width(browser, 1280)
            _voices_with_ids(browser, on.url, "en")
            click(browser, "#engine-api .copy")
            how = wait(
                browser, lambda d: attribute(d, "#engine-api .copy", "data-copied"), "copied"
            )
            if how == "clipboard":
                pasted = browser.execute_async_script(
                    "const done = arguments[0];"
                    "navigator.clipboard.readText().then(done, (e) => done('!' + e))"
                )
                assert pasted == api
            else:  # a headless browser without a focused window: the address selected
                assert browser.execute_script("return window.getSelection().toString()") == api
        finally:
            on.stop()
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
