"""README.md's quick start, run as written: what it says the server binds is the parser's
default, and its loopback server and `say --server` check, taken from the README's own lines
(only the port and the output file changed), work: the check exits 0 with speech in the WAV,
and the server's log lines carry their time."""

from __future__ import annotations

import re
import shlex
import wave
from pathlib import Path

from tests.helpers.net import free_port
from tests.helpers.paths import REPO_ROOT
from tests.helpers.program import Program, run_program
from wyoming_hayakoe.settings import DEFAULT_URI, build_parser

PROGRAM = ".venv/bin/wyoming-hayakoe"
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO ")


def _quick_start() -> str:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Quick start")
    return text[start : text.index("\n## ", start + 1)]


def _command(prefix: str) -> list[str]:
    """The README line that starts with `prefix`, as argv after the program."""
    (line,) = [ln for ln in _quick_start().splitlines() if ln.startswith(prefix)]
    argv = shlex.split(line)
    assert argv[0] == PROGRAM
    return argv[1:]


def test_what_the_quick_start_says_it_binds_is_the_default() -> None:
    section = _quick_start()
    (said,) = re.findall(r"`--uri (tcp://[^`]+)`,\s+the default", section)
    assert said == DEFAULT_URI == build_parser().get_default("uri")
    assert f"{PROGRAM} --zeroconf" in section and "--zeroconf` announces" in section


async def test_the_loopback_server_and_the_say_check_work_as_written(tmp_path: Path) -> None:
    server_args = _command(f"{PROGRAM} --uri tcp://127.0.0.1:")
    say_args = _command(f"{PROGRAM} say --server ")
    assert "--zeroconf" not in server_args
    uri = server_args[server_args.index("--uri") + 1]
    assert say_args[say_args.index("--server") + 1] == uri
    port = free_port()
    here = f"tcp://127.0.0.1:{port}"
    out = tmp_path / "check.wav"
    server_args = [here if a == uri else a for a in server_args]
    say_args = [here if a == uri else str(out) if a == "check.wav" else a for a in say_args]
    async with Program(*server_args) as server:
        await server.wait_ready()
        done = await run_program(*say_args, timeout=120)
        assert done.returncode == 0, done.stderr + server.log
        assert await server.stop() == 0
    with wave.open(str(out)) as wav:
        assert wav.getnchannels() == 1 and wav.getsampwidth() == 2
        assert wav.getnframes() > 0.3 * wav.getframerate()  # こんにちは。: well over 0.3 s
    lines = [line for line in server.log.splitlines() if line.strip()]
    ready = [line for line in lines if "Ready" in line]
    assert ready and all(TIMESTAMP.match(line) for line in ready), server.log
    assert f"Listening on {here}" in server.log
