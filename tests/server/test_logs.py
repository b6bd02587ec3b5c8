"""`wyoming_hayakoe.logs.setup_logging`: the one log set-up of the server and every subcommand
(a timestamp on every line, secrets scrubbed, one handler however often it runs), and a real
`say --debug` run whose stderr lines all carry the timestamp; a client's newlines and escape
sequences escaped in messages (an upload's file name, a refused path), tracebacks kept whole."""

from __future__ import annotations

import ast
import asyncio
import io
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.net import free_port
from tests.helpers.paths import REPO_ROOT
from tests.helpers.program import Program, run_program
from tests.helpers.waiting import until
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


FORGED = "evil%0AERROR%20forged%1B%5B31m"
"""A client's text with a newline, a forged level and an escape sequence (RFC 3986/5987)."""


def test_control_characters_are_escaped_in_messages_and_kept_in_tracebacks(
    root_restored: None,
) -> None:
    out = io.StringIO()
    setup_logging(False, stream=out)
    log = logging.getLogger("wyoming_hayakoe.test")
    log.warning("upload %s: %s", "evil\nERROR forged\x1b[31m", "a\rb\u2028c\u202ed\x85e\tf")
    try:
        try:
            raise KeyError("inner")
        except KeyError as exc:
            raise ValueError("bad name 'x\nERROR forged\x1b[31m'") from exc
    except ValueError:
        log.exception("failed")
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0].endswith(
        r"upload evil\nERROR forged\x1b[31m: a\rb\u2028c\u202ed\x85e" + "\tf"
    ), lines[0]
    assert LINE.match(lines[1]) and lines[1].endswith("ERROR wyoming_hayakoe.test: failed")
    # the traceback keeps its lines, the exception's message on one of them, escaped
    assert lines[2] == "Traceback (most recent call last):"
    assert "The above exception was the direct cause of the following exception:" in lines
    assert lines[-1] == r"ValueError: bad name 'x\nERROR forged\x1b[31m'"
    assert "\x1b" not in text and "\r" not in text and "\u2028" not in text
    # the record is left as logged for the other handlers
    record = logging.LogRecord("n", logging.INFO, __file__, 1, "a\nb", None, None)
    logging.Formatter().format(record)
    assert record.getMessage() == "a\nb"


async def _raw(port: int, request: bytes) -> bytes:
    """`request` sent as it is to 127.0.0.1:`port`; the answer's status line."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    status = await asyncio.wait_for(reader.readline(), 30)
    writer.close()
    await writer.wait_closed()
    return status


def _upload(port: int) -> bytes:
    """A multipart upload whose file name (``filename*``) carries `FORGED`."""
    boundary = "hayakoe-log-test"
    body = (
        f"--{boundary}\r\n"
        f"Content-Disposition: form-data; name=\"file\"; filename*=UTF-8''{FORGED}.aivmx\r\n"
        "Content-Type: application/octet-stream\r\n\r\n"
        "not a voice file\r\n"
        f"--{boundary}--\r\n"
    ).encode()
    return (
        f"POST /api/library/install HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Origin: http://127.0.0.1:{port}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


async def test_a_client_cannot_forge_log_lines(tmp_path: Path) -> None:
    """The real program: an upload's file name and a refused request's path, each with a
    newline, a level and an escape sequence, are logged on their own line, escaped; no line
    of the log starts with the forged level and no ESC reaches it."""
    wyoming, page, api = free_port(), free_port(), free_port()
    args = ["--uri", f"tcp://127.0.0.1:{wyoming}", "--http", f"127.0.0.1:{page}"]
    args += ["--engine-api-port", str(api), "--voice", "openjtalk-mei", "--no-warmup"]
    args += ["--library-dir", str(tmp_path / "library"), "--cache-dir", str(tmp_path / "cache")]
    async with Program(*args) as prog:
        await prog.wait_ready(timeout=120)
        status = await _raw(page, _upload(page))
        assert b" 202 " in status, status
        await until(lambda: "failed" in prog.log and "upload:" in prog.log, 60)
        for port in (page, api):
            refused = f"GET /{FORGED} HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n"
            status = await _raw(port, refused.encode())
            assert b" 403 " in status, status
        await until(lambda: prog.log.count("refused GET /") == 2, 30)
        assert await prog.stop() == 0
    log = prog.log
    assert "\x1b" not in log
    assert not [line for line in log.splitlines() if line.startswith("ERROR")], log
    escaped = r"evil\nERROR forged\x1b[31m"
    assert log.count(escaped) >= 3, log  # the job's failure, both refusals
    for line in log.splitlines():
        if escaped in line:
            assert LINE.match(line), line
