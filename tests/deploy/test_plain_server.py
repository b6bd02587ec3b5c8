"""deploy/systemd/wyoming-hayakoe.service and deploy/compose/compose.yaml against the program:
the unit's command line parsed by the server's own parser and the unit checked by
`systemd-analyze verify` (a misspelt key fails it); the compose service's environment and
command run through the image's real entry point (the program a stub that records its argv),
that argv parsed by the server's parser, its image the one the release publishes at this
version, its port the one the Dockerfiles expose."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engine import __version__
from tests.helpers.paths import REPO_ROOT
from wyoming_hayakoe.settings import DEFAULT_DRAIN_TIMEOUT, VoiceSpec, parse_settings

UNIT = REPO_ROOT / "deploy" / "systemd" / "wyoming-hayakoe.service"
COMPOSE = REPO_ROOT / "deploy" / "compose" / "compose.yaml"
DOCKERFILES = (REPO_ROOT / "Dockerfile.arm64", REPO_ROOT / "Dockerfile.amd64")
SPECIFIERS = {"%C": "/var/cache", "%S": "/var/lib", "%L": "/var/log", "%t": "/run", "%%": "%"}
"""systemd's specifiers for a system unit (those a unit here may use)."""


def _unit(text: str) -> dict[str, dict[str, list[str]]]:
    """section → key → values (a key may repeat), continuation lines joined."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    logical = re.sub(r"\\\n", " ", text)
    for raw in logical.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        header = re.fullmatch(r"\[(\w+)\]", line)
        if header:
            current = sections.setdefault(header.group(1), {})
            continue
        assert current is not None, f"{line!r} before any section"
        key, sep, value = line.partition("=")
        assert sep, f"not KEY=VALUE: {line!r}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def _expand(value: str) -> str:
    return re.sub(r"%.", lambda m: SPECIFIERS.get(m.group(0), m.group(0)), value)


def _seconds(value: str) -> float:
    m = re.fullmatch(r"(\d+)(s|min)?", value)
    assert m, f"duration {value!r}"
    return float(m.group(1)) * (60 if m.group(2) == "min" else 1)


def _exposed_ports() -> set[int]:
    ports = set()
    for dockerfile in DOCKERFILES:
        ports |= {int(p) for p in re.findall(r"^EXPOSE (\d+)/tcp", dockerfile.read_text(), re.M)}
    return ports


# --- systemd ----------------------------------------------------------------------------------


def test_the_units_command_line_is_one_the_server_accepts() -> None:
    service = _unit(UNIT.read_text())["Service"]
    (exec_start,) = service["ExecStart"]
    argv = shlex.split(_expand(exec_start))
    assert Path(argv[0]).name == "wyoming-hayakoe"
    settings = parse_settings(argv[1:], environ={})
    assert settings.uri == "tcp://0.0.0.0:10200" and settings.zeroconf_name == "hayakoe"
    assert settings.voices == (VoiceSpec("openjtalk-mei"),)
    (cache,) = service["CacheDirectory"]
    assert settings.cache_dir == Path("/var/cache") / cache  # the directory systemd makes
    assert _seconds(service["TimeoutStopSec"][0]) > DEFAULT_DRAIN_TIMEOUT + 5
    assert service["ExecReload"] == ["/bin/kill -HUP $MAINPID"]  # reloads the user dictionary


def _verify(unit_text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze verify` of `unit_text`, its program replaced by the installed one."""
    analyze = shutil.which("systemd-analyze")
    program = Path(sys.executable).parent / "wyoming-hayakoe"
    if analyze is None or not program.exists():
        pytest.skip("needs systemd-analyze and an installed wyoming-hayakoe")
    path = tmp_path / UNIT.name
    path.write_text(unit_text.replace("/opt/wyoming-hayakoe/bin/wyoming-hayakoe", str(program)))
    return subprocess.run(
        [analyze, "verify", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "SYSTEMD_LOG_COLOR": "0"},
    )


def test_systemd_verifies_the_unit_and_would_catch_a_misspelt_key(tmp_path: Path) -> None:
    text = UNIT.read_text()
    done = _verify(text, tmp_path)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
    misspelt = _verify(text.replace("TimeoutStopSec=", "TimeoutStopSecs="), tmp_path)
    assert "Unknown key 'TimeoutStopSecs'" in misspelt.stderr


# --- compose ----------------------------------------------------------------------------------


def test_compose_runs_the_published_image_at_this_version_on_its_port() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    ((name, service),) = services.items()
    image, _, tag = service["image"].rpartition(":")
    assert image == "ghcr.io/wyoming-hayakoe/wyoming-hayakoe" and tag == __version__
    release = (REPO_ROOT / ".github" / "workflows" / "release.yml").read_text()
    assert "ghcr.io/${{ needs.version.outputs.owner }}/wyoming-hayakoe:" in release
    (published,) = service["ports"]
    host_port, container_port = (int(p) for p in str(published).split(":")[-2:])
    assert container_port in _exposed_ports() == {10200} and host_port == 10200
    assert _seconds(service["stop_grace_period"]) > DEFAULT_DRAIN_TIMEOUT + 5


def test_compose_environment_and_command_through_the_images_entry_point(tmp_path: Path) -> None:
    """docker/entrypoint.sh, as the container runs it: the image's environment (Dockerfile
    ENV), then the service's, then its command; the program it starts records its argv."""
    (service,) = yaml.safe_load(COMPOSE.read_text())["services"].values()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAYAKOE_", "HF_"))}
    env.update(
        HAYAKOE_URI="tcp://0.0.0.0:10200",  # the Dockerfiles' ENV
        HAYAKOE_DEVICE="cpu",
        HAYAKOE_CACHE="/var/lib/hayakoe",
        HAYAKOE_VOICES="jvnv-F1-jp",
        PATH=f"{REPO_ROOT / 'tests' / 'stubs' / 'bin'}{os.pathsep}{os.environ['PATH']}",
        STUB_RECORD=str(tmp_path / "record"),
    )
    env.update({k: str(v) for k, v in (service.get("environment") or {}).items()})
    done = subprocess.run(
        [str(REPO_ROOT / "docker" / "entrypoint.sh"), *service["command"]],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    argv = [a.decode() for a in (tmp_path / "record.argv").read_bytes().split(b"\0")[:-1]]
    settings = parse_settings(argv, environ={})
    assert settings.voices == (VoiceSpec("jvnv-F1-jp"), VoiceSpec("openjtalk-mei"))
    assert settings.default_voice == "jvnv-F1-jp"
    assert settings.uri.endswith(":10200")
