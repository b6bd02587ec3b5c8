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

import numpy as np
import pytest
import yaml

from tests.helpers.net import free_port
from tests.helpers.paths import REPO_ROOT
from wyoming_hayakoe.client import Spoken, WyomingClient

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


def _script(*args: str, timeout: float = 1800, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["bash", str(SCRIPT), *args],
        env={**ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
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
    pytest.skip(
        "image builds need root (buildah and podman run rootful here)", allow_module_level=True
    )


@pytest.fixture(scope="module")
def built() -> Path:
    """Both images, built (cached layers from an earlier run are reused)."""
    _script("setup")
    _script("bases")
    _script("addon")
    _script("image")
    return WORK


@asynccontextmanager
async def _serving(
    command: str, port: int, *extra: str, env: dict[str, str] | None = None
) -> AsyncIterator[Callable[[], str]]:
    """A container from `build-images.sh serve-*` on 127.0.0.1:port; yields its log."""
    name = f"hayakoe-test-{command}-{port}"
    log = WORK / f"{name}.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            "bash",
            str(SCRIPT),
            command,
            str(port),
            name,
            *extra,
            env={**ENV, **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        await WyomingClient(f"tcp://127.0.0.1:{port}").wait_until_answering(
            600, alive=lambda: proc.returncode is None
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
        spoken = await WyomingClient(f"tcp://127.0.0.1:{port}").speak(TEXT, voice="openjtalk-mei")
        _assert_speech(spoken)
        # The image's health check script answers healthy from inside the container.
        name = f"hayakoe-test-serve-addon-{port}"
        health = await asyncio.to_thread(
            subprocess.run,
            [
                "bash",
                str(SCRIPT),
                "exec",
                name,
                "/opt/venv/bin/python",
                "/usr/local/bin/hayakoe-healthcheck",
                "--uri",
                f"tcp://127.0.0.1:{port}",
            ],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert health.returncode == 0, health.stderr
    # The options reached the server through the service script and bashio.
    assert "Voices: openjtalk-mei" in log()
    assert "Loading voices: openjtalk-mei" in log()


async def test_arm64_recipe_builds_natively_and_its_entry_point_speaks(built):
    port = free_port()
    async with _serving("serve-image", port):
        spoken = await WyomingClient(f"tcp://127.0.0.1:{port}").speak(TEXT)
        _assert_speech(spoken)
        name = f"hayakoe-test-serve-image-{port}"
        # The HEALTHCHECK in the image (a Wyoming describe) passes; the server is not root.
        health = await asyncio.to_thread(
            subprocess.run,
            ["bash", str(SCRIPT), "health", name],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert health.returncode == 0, health.stdout + health.stderr
        uid = await asyncio.to_thread(_script, "exec", name, "id", "-u")
        assert uid.strip() == "1000"


def _podman_options_from_the_deployment(cache: Path) -> tuple[list[str], list[str]]:
    """podman run options for the Deployment's main container (deploy/kubernetes), and its
    readiness probe's command: the same user, read-only root, dropped capabilities, /tmp as
    an emptyDir, the cache volume, the environment."""
    deployment = yaml.safe_load(
        (REPO_ROOT / "deploy" / "kubernetes" / "deployment.yaml").read_text()
    )
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    security = {**pod["securityContext"], **container["securityContext"]}
    options = [f"--user={security['runAsUser']}:{security['runAsGroup']}"]
    if security.get("readOnlyRootFilesystem"):
        options.append("--read-only")
    options += [f"--cap-drop={cap}" for cap in security["capabilities"]["drop"]]
    if security.get("allowPrivilegeEscalation") is False:
        options.append("--security-opt=no-new-privileges")
    volumes = {v["name"]: v for v in pod["volumes"]}
    for mount in container["volumeMounts"]:
        volume = volumes[mount["name"]]
        if "emptyDir" in volume:
            options.append(f"--tmpfs={mount['mountPath']}")
        else:
            assert "persistentVolumeClaim" in volume
            options.append(f"--volume={cache}:{mount['mountPath']}")
    for env in container["env"]:
        value = env["value"]
        if env["name"] == "HAYAKOE_VOICES":
            value = "openjtalk-mei"  # the neural voice needs the Hub to download; not here
        options.append(f"--env={env['name']}={value}")
    return options, container["readinessProbe"]["exec"]["command"]


async def test_image_runs_the_way_the_kubernetes_deployment_runs_it(built, tmp_path):
    """Read-only root, user 1000, no capabilities, the cache on a volume owned by the pod's
    fsGroup: the server starts, writes only where it may, speaks, and the probe passes."""
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chown(cache, 1000, 1000)
    options, probe = _podman_options_from_the_deployment(cache)
    port = free_port()
    name = f"hayakoe-test-k8s-{port}"
    log = WORK / f"{name}.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            "bash",
            str(SCRIPT),
            "podman",
            "run",
            "--rm",
            f"--name={name}",
            "--network=host",
            "--no-healthcheck",
            *options,
            f"--env=HAYAKOE_URI=tcp://127.0.0.1:{port}",
            os.environ.get("IMAGE", "localhost/wyoming-hayakoe:test"),
            env=ENV,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        client = WyomingClient(f"tcp://127.0.0.1:{port}")
        await client.wait_until_answering(180, alive=lambda: proc.returncode is None)
        _assert_speech(await client.speak(TEXT))
        # the probe command, as the kubelet runs it inside the container
        health = await asyncio.to_thread(
            subprocess.run,
            ["bash", str(SCRIPT), "exec", name, *probe],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert health.returncode == 0, health.stdout + health.stderr
    except BaseException:
        print(log.read_text(errors="replace")[-4000:])
        raise
    finally:
        await asyncio.to_thread(_script, "stop", name)
        await asyncio.wait_for(proc.wait(), 30)
    assert "Traceback" not in log.read_text(errors="replace")


@pytest.mark.skipif(
    os.environ.get("HAYAKOE_TEST_ARM64") != "1",
    reason="the arm64 add-on build runs under QEMU (~4 min base + ~14 min build on 2 cores): "
    "set HAYAKOE_TEST_ARM64=1 (needs qemu-user-static and binfmt-support)",
)
async def test_addon_image_for_arm64_builds_under_qemu_and_says_what_amd64_says(built):
    """The add-on for aarch64 (Home Assistant on a Raspberry Pi), built from an arm64
    debootstrap base under QEMU user-mode emulation; the server in it speaks the embedded
    voice, and the audio is the native image's."""
    arm64 = {"ARCH": "arm64"}
    _script("bases", env=arm64, timeout=3000)
    _script("addon", env=arm64, timeout=3000)
    port = free_port()
    async with _serving("serve-addon", port, env=arm64):
        name = f"hayakoe-test-serve-addon-{port}"
        machine = await asyncio.to_thread(_script, "exec", name, "uname", "-m")
        assert machine.strip() == "aarch64"
        emulated = await WyomingClient(f"tcp://127.0.0.1:{port}", timeout=300).speak(
            TEXT, voice="openjtalk-mei"
        )
    _assert_speech(emulated)
    port = free_port()
    async with _serving("serve-addon", port):
        native = await WyomingClient(f"tcp://127.0.0.1:{port}").speak(TEXT, voice="openjtalk-mei")
    assert len(emulated.pcm) == len(native.pcm)
    a = np.frombuffer(emulated.pcm, dtype=np.int16).astype(np.float64)
    b = np.frombuffer(native.pcm, dtype=np.int16).astype(np.float64)
    assert np.corrcoef(a, b)[0, 1] > 0.999, "arm64 and amd64 say different things"
