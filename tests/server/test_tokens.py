"""Issue 54 finding 12, through the real program: a token that guards nothing (empty, only
spaces, a space inside, shorter than `MIN_TOKEN_LENGTH`) is refused at start for the page
and for the engine APIs, flag or file, in one line naming the flag (exit 2, nothing bound);
a token of the minimum length is taken."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.net import free_port
from tests.helpers.program import run_program
from wyoming_hayakoe.settings import parse_settings
from wyoming_hayakoe.web.options import MIN_TOKEN_LENGTH

GOOD = "k" * MIN_TOKEN_LENGTH

BAD = [
    (" ", "empty"),
    ("    ", "empty"),
    ("", "empty"),
    ("hunter2", f"at least {MIN_TOKEN_LENGTH}"),
    ("a" * (MIN_TOKEN_LENGTH - 1), f"at least {MIN_TOKEN_LENGTH}"),
    ("correct horse battery staple", "visible ASCII"),
    ("tab\tinside-the-token-0123", "visible ASCII"),
]


def _one_line(stderr: str, *words: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("wyoming-hayakoe: error: "), lines[0]
    for word in words:
        assert word in lines[0], lines[0]


@pytest.mark.parametrize("token, says", BAD)
async def test_a_weak_page_token_is_refused_at_start(token: str, says: str) -> None:
    result = await run_program(
        "--http", f"0.0.0.0:{free_port()}", "--http-token", token, timeout=60
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    _one_line(result.stderr, "--http-token", says)


@pytest.mark.parametrize("token, says", BAD)
async def test_a_weak_engine_api_token_is_refused_at_start(token: str, says: str) -> None:
    result = await run_program(
        "--engine-api-port",
        str(free_port()),
        "--engine-api-host",
        "0.0.0.0",
        "--engine-api-token",
        token,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    _one_line(result.stderr, "--engine-api-token", says)


@pytest.mark.parametrize(
    "content, says",
    [(" \n", "empty"), ("\n\n", "empty"), ("short\n", f"at least {MIN_TOKEN_LENGTH}")],
)
async def test_a_weak_token_file_is_refused_at_start(
    tmp_path: Path, content: str, says: str
) -> None:
    file = tmp_path / "token"
    file.write_text(content, encoding="utf-8")
    page = await run_program("--http", "0.0.0.0:1", "--http-token-file", str(file))
    assert page.returncode == 2, page.stderr
    _one_line(page.stderr, "--http-token-file", says)
    api = await run_program(
        "--engine-api-port", "1", "--engine-api-host", "0.0.0.0",
        "--engine-api-token-file", str(file),
    )  # fmt: skip
    assert api.returncode == 2, api.stderr
    _one_line(api.stderr, "--engine-api-token-file", says)


def test_a_token_of_the_minimum_length_is_taken(tmp_path: Path) -> None:
    settings = parse_settings(
        ["--http", "0.0.0.0:1", "--http-token", GOOD, "--engine-api-port", "1",
         "--engine-api-host", "0.0.0.0", "--engine-api-token", GOOD]
    )  # fmt: skip
    assert settings.http is not None and settings.http.token == GOOD
    assert settings.engine_api is not None and settings.engine_api.token == GOOD
    file = tmp_path / "token"
    file.write_text(f"  {GOOD}\n", encoding="utf-8")  # a file's line end is not the token's
    settings = parse_settings(["--http", "0.0.0.0:1", "--http-token-file", str(file)])
    assert settings.http is not None and settings.http.token == GOOD
