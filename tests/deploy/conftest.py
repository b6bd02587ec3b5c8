"""Every test in tests/deploy (Docker images, the add-on) carries the `deploy` marker:
`pytest -m "not deploy"` runs the engine and server tests alone."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.deploy)
