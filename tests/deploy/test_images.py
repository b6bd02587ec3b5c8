"""The images really built and run: `addon/Dockerfile` and `Dockerfile.arm64` (for this
machine's architecture) built with buildah, started with podman, heard over TCP.

scripts/build-images.sh does the work: a Debian bookworm base made with debootstrap, a
stand-in for Home Assistant's add-on base (bookworm + the project's bashio stand-in) and one
for python:3.11-slim-bookworm (Debian's Python, whose venvs get pip 23.0.1). The add-on image
is built the way the Supervisor builds it (addon/ as the context, BUILD_FROM and the version
from build.yaml), with the checkout's wheel in place of the release archive; its s6 service
script is started with the add-on's options. The build steps need Debian's archive and PyPI;
the servers are reached on loopback only.

Skipped, with the reason, where buildah, podman, runc or debootstrap are missing or the user
is not root (`.ci/run` installs them where it can). Cold builds take about 5 minutes.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.helpers.net import free_port
from tests.helpers.paths import REPO_ROOT
from tests.helpers.wyoming_client import Spoken, speak, wait_until_answering

SCRIPT = REPO_ROOT / "scripts" / "build-images.sh"
TEXT = "こんにちは、今日はいい天気ですね。"
WORK = Path(os.environ.get("HAYAKOE_OCI_WORK", "/var/tmp/wyoming-hayakoe-oci"))
# PYTHON builds the checkout's wheel for the add-on (it needs setuptools: the test's own).
ENV = {**os.environ, "WORK": str(WORK), "PYTHON": sys.executable}


def _missing_tools() -> list[str]:
    proc = subprocess.run(
        ["bash", str(SCRIPT), "missing-tools"], capture_output=True, text=True, check=False
    )
    return proc.stdout.split()


def _script(*args: str, timeout: float = 1800) -> str:
    proc = subprocess.run(
        ["bash", str(SCRIPT), *args], env=ENV, capture_output=True, text=True,
        timeout=timeout, check=False,
    )
    assert proc.returncode == 0, f"build-images.sh {' '.join(args)} failed:\n{proc.stderr[-4000:]}"
    return proc.stdout


if missing := _missing_tools():
    pytest.skip(
        f"not installed: {' '.join(missing)} (apt-get install buildah podman runc debootstrap "
        "bc; .ci/run installs them when it runs as root)",
        allow_module_level=True,
    )
if os.geteuid() != 0:
    pytest.skip("image builds need root (buildah and podman run rootful here)", allow_module_level=True)


@pytest.fixture(scope="module")
def built() -> Path:
    """Both images, built (cached layers from an earlier run are reused)."""
    _script("setup")
    _script("bases")
    _script("addon")
    _script("image")
    return WORK


@asynccontextmanager
async def _serving(command: str, port: int, *extra: str) -> AsyncIterator[Callable[[], str]]:
    """A container from `build-images.sh serve-*` on 127.0.0.1:port; yields its log."""
    name = f"hayakoe-test-{command}-{port}"
    log = WORK / f"{name}.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            "bash", str(SCRIPT), command, str(port), name, *extra,
            env=ENV, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        await wait_until_answering(
            "127.0.0.1", port, timeout=180, alive=lambda: proc.returncode is None
        )
        yield lambda: log.read_text(errors="replace")
    except BaseException:
        print(log.read_text(errors="replace")[-4000:])
        raise
    finally:
        await asyncio.to_thread(_script, "stop", name)
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()


def _assert_speech(spoken: Spoken) -> None:
    assert spoken.width == 2 and spoken.channels == 1 and spoken.rate > 0
    assert spoken.seconds > 0.8, f"{spoken.seconds:.2f} s of audio for a whole sentence"
    assert spoken.rms > 100, f"audio is (nearly) silent: RMS {spoken.rms:.0f}"


async def test_addon_image_builds_and_its_service_script_speaks(built):
    port = free_port()
    async with _serving("serve-addon", port) as log:
        spoken = await speak("127.0.0.1", port, TEXT, voice="openjtalk-mei")
        _assert_speech(spoken)
        # The image's health check script answers healthy from inside the container.
        name = f"hayakoe-test-serve-addon-{port}"
        health = await asyncio.to_thread(
            subprocess.run,
            ["bash", str(SCRIPT), "exec", name, "/opt/venv/bin/python",
             "/usr/local/bin/hayakoe-healthcheck", "--uri", f"tcp://127.0.0.1:{port}"],
            env=ENV, capture_output=True, text=True, timeout=60, check=False,
        )
        assert health.returncode == 0, health.stderr
    # The options reached the server through the service script and bashio.
    assert "Voices: openjtalk-mei" in log()
    assert "Loading voices: openjtalk-mei" in log()


async def test_arm64_recipe_builds_natively_and_its_entry_point_speaks(built):
    port = free_port()
    async with _serving("serve-image", port):
        spoken = await speak("127.0.0.1", port, TEXT)
        _assert_speech(spoken)
        name = f"hayakoe-test-serve-image-{port}"
        # The HEALTHCHECK in the image (a Wyoming describe) passes; the server is not root.
        health = await asyncio.to_thread(
            subprocess.run, ["bash", str(SCRIPT), "health", name],
            env=ENV, capture_output=True, text=True, timeout=60, check=False,
        )
        assert health.returncode == 0, health.stdout + health.stderr
        uid = await asyncio.to_thread(_script, "exec", name, "id", "-u")
        assert uid.strip() == "1000"

