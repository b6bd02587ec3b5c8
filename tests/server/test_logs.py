"""`wyoming_hayakoe.logs.setup_logging`: the one log set-up of the server and every subcommand
(a timestamp on every line, secrets scrubbed, one handler however often it runs), and a real
`say --debug` run whose stderr lines all carry the timestamp."""

from __future__ import annotations

import ast
import io
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import REPO_ROOT
from tests.helpers.program import run_program
from wyoming_hayakoe.logs import LOG_FORMAT, setup_logging
from wyoming_hayakoe.settings import Settings, parse_settings
from wyoming_hayakoe.subcommands import SUBCOMMANDS

LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: "
)
"""The start of every log line: date, time with milliseconds, level, logger."""


@pytest.fixture
def root_restored() -> Iterator[None]:
    """The root logger's handlers and level as they were before the test."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_a_line_has_time_level_logger_and_no_secret(root_restored: None) -> None:
    out = io.StringIO()
    setup_logging(False, stream=out)
    log = logging.getLogger("wyoming_hayakoe.test")
    log.info("token hf_%s in a message", "A" * 24)
    log.debug("not shown without --debug")
    (line,) = out.getvalue().splitlines()
    assert LINE.match(line), line
    assert line.endswith("INFO wyoming_hayakoe.test: token *** in a message")
    setup_logging(True, stream=out)
    log.debug("shown with --debug")
    assert LINE.match(out.getvalue().splitlines()[-1])
    assert out.getvalue().endswith("DEBUG wyoming_hayakoe.test: shown with --debug\n")


def test_set_up_twice_one_handler_of_ours_and_others_kept(root_restored: None) -> None:
    root = logging.getLogger()
    foreign = logging.NullHandler()  # a test's capture, the web page's warning list
    root.addHandler(foreign)
    root.addHandler(logging.StreamHandler(io.StringIO()))  # what basicConfig puts there
    first = setup_logging(False, level=logging.WARNING)
    out = io.StringIO()
    second = setup_logging(False, stream=out)
    assert foreign in root.handlers and second in root.handlers and first not in root.handlers
    assert not [h for h in root.handlers if type(h) is logging.StreamHandler]
    assert root.level == logging.INFO
    assert logging.getLogger("urllib3").getEffectiveLevel() == logging.WARNING
    logging.getLogger("x").info("once")
    assert out.getvalue().count("once") == 1


def test_the_server_default_format_is_this_one() -> None:
    assert Settings().log_format == LOG_FORMAT
    assert parse_settings([], environ={}).log_format == LOG_FORMAT
    assert parse_settings(["--log-format", "%(message)s"], environ={}).log_format == "%(message)s"


def _calls(path: Path) -> set[str]:
    """Names of the functions called anywhere in a module (``a.b.c()`` → ``c``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def test_every_subcommand_and_the_server_log_through_it_and_nothing_else() -> None:
    package = REPO_ROOT / "wyoming_hayakoe"
    for name in SUBCOMMANDS:
        module = package / "commands" / f"{name.replace('-', '_')}.py"
        assert "setup_logging" in _calls(module), f"{module.name} does not call setup_logging"
    assert "setup_logging" in _calls(package / "__main__.py")
    for module in package.rglob("*.py"):
        if module.name == "logs.py":
            continue
        stray = _calls(module) & {"basicConfig", "StreamHandler"}
        assert not stray, f"{module.relative_to(REPO_ROOT)} sets up logging itself: {stray}"


async def test_say_debug_lines_on_stderr_all_carry_the_timestamp(tmp_path: Path) -> None:
    """The real program: every line `say --debug` writes to stderr is a log line with the
    time (none in the old ``DEBUG name: message`` form), and the WAV is written."""
    out = tmp_path / "hello.wav"
    done = await run_program("say", "--debug", "-o", str(out), "こんにちは。", timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    logged = [line for line in lines if LINE.match(line)]
    assert logged, done.stderr
    assert any(" DEBUG wyoming_hayakoe.commands.say: Said " in line for line in logged)
    # continuation lines (a traceback, a multi-line message) may follow a log line, but no
    # line starts with a bare level as basicConfig's format did
    assert not [line for line in lines if re.match(r"^(DEBUG|INFO|WARNING|ERROR) ", line)]
    assert out.stat().st_size > 44
