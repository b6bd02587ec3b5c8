"""The web page's browser tests share one Chromium set-up (`tests.helpers.browser`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless chromium (a WebDriver) for the module's tests, its own profile, quit after
    them; the module skips itself where chromium is missing (`skip_without_browser`)."""
    from tests.helpers.browser import start_chromium

    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"))
    yield driver
    driver.quit()
