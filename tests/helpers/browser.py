"""The browser tests' one Chromium (Debian's chromium, headless, driven by Selenium through
Debian's chromium-driver: nothing is downloaded) and the one way they wait on the page.

The page redraws parts of itself whenever an answer comes (the Library tab twice on each
load: the listing, then the listing after asking AivisHub; the jobs at each poll), so a
test never keeps an element across a wait or an action: `wait` re-runs its condition until
it holds, finding the elements again at each poll (a redraw between finding and reading is
retried, `StaleElementReferenceException` included); `click` finds and clicks in one try;
`click_until` clicks again what a redraw undid; `text`, `attribute` and `shown` read the
page in one script. No sleeps: every wait is on
the page's state, bounded by `WAIT_S`.

A test module starts with `skip_without_browser()` (the module skipped, saying why, where
chromium, chromium-driver or selenium is missing; `.ci/run` installs them) before it
imports selenium; the `browser` fixture (tests/server/web/conftest.py) is a `start_chromium`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

__all__ = [
    "CHROMIUM",
    "DRIVER",
    "WAIT_S",
    "attribute",
    "click",
    "click_until",
    "screenshot",
    "set_width",
    "shown",
    "skip_without_browser",
    "start_chromium",
    "text",
    "wait",
]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
WAIT_S = 60.0
"""The longest any wait on the page lasts (a loaded 2-core machine starting the program)."""
POLL_S = 0.05

T = TypeVar("T")


def skip_without_browser() -> None:
    """Skip the calling test module, saying why, without chromium, its driver or selenium."""
    if CHROMIUM is None or DRIVER is None:
        pytest.skip(
            "chromium and chromium-driver are not installed "
            "(apt-get install chromium chromium-driver; .ci/run does)",
            allow_module_level=True,
        )
    pytest.importorskip("selenium", reason="selenium (the test extra) is not installed")


def start_chromium(profile: Path, width: int = 1100, height: int = 900) -> WebDriver:
    """Headless chromium with a profile of its own in `profile`, a `width` × `height`
    window, no network of its own (no sync, updates or QUIC), audio allowed to autoplay."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    assert CHROMIUM is not None and DRIVER is not None, "skip_without_browser() first"
    options = Options()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--autoplay-policy=no-user-gesture-required",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_window_size(width, height)
    return driver


def wait(
    driver: WebDriver, condition: Callable[[WebDriver], T], message: str, timeout: float = WAIT_S
) -> T:
    """`condition(driver)` once it is truthy (its value), polled every 50 ms; an element
    not found or redrawn while the condition reads it is another poll, not a failure."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    waiting: WebDriverWait[WebDriver] = WebDriverWait(
        driver,
        timeout,
        poll_frequency=POLL_S,
        ignored_exceptions=(NoSuchElementException, StaleElementReferenceException),
    )
    return waiting.until(condition, message)


def click(driver: WebDriver, css: str, message: str | None = None) -> None:
    """Click the element `css` selects, found again at each try until a click lands (a
    redraw between finding and clicking is tried again)."""
    from selenium.webdriver.common.by import By

    def clicked(d: WebDriver) -> bool:
        d.find_element(By.CSS_SELECTOR, css).click()
        return True

    wait(driver, clicked, message or f"clicked {css}")


def click_until(
    driver: WebDriver, css: str, done: Callable[[WebDriver], object], message: str
) -> None:
    """Click the element `css` selects (found again each time) until `done(driver)` holds:
    for a click whose effect shows at once (a mora chosen, a ``<details>`` opened), so that
    a redraw that undid it is clicked again; never for one that sends a request."""
    from selenium.webdriver.common.by import By

    def step(d: WebDriver) -> bool:
        if done(d):
            return True
        d.find_element(By.CSS_SELECTOR, css).click()
        return bool(done(d))

    wait(driver, step, message)


_READ = """
const el = document.querySelector(arguments[0]);
if (!el) return null;
if (arguments[1] === null) return el.innerText.trim();
return el.getAttribute(arguments[1]);
"""


def text(driver: WebDriver, css: str) -> str | None:
    """The text shown of the element `css` selects (trimmed), None while there is none."""
    found: str | None = driver.execute_script(_READ, css, None)
    return found


def attribute(driver: WebDriver, css: str, name: str) -> str | None:
    """An attribute of the element `css` selects, None without it or the element."""
    found: str | None = driver.execute_script(_READ, css, name)
    return found


def shown(driver: WebDriver, css: str) -> bool:
    """Whether the element `css` selects is there and shown (laid out, not hidden)."""
    found: bool = driver.execute_script(
        "const el = document.querySelector(arguments[0]);"
        "return !!el && el.checkVisibility({visibilityProperty: true}) && "
        "el.getClientRects().length > 0;",
        css,
    )
    return found


def set_width(driver: WebDriver, width: int, height: int = 900) -> None:
    """The viewport as a phone's (`mobile`: the page's viewport meta applies) or a desktop's."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )


def screenshot(driver: WebDriver, name: str) -> None:
    """``page-NAME.png`` in ``$HAYAKOE_SCREENSHOTS`` when it is set (the docs' pictures)."""
    folder = os.environ.get("HAYAKOE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(Path(folder) / f"page-{name}.png"))
