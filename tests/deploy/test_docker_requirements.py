"""The images' Python dependencies: in step with pyproject.toml, and installable from
binary wheels for each image's CPU architecture and Python version.

The resolution tests ask PyPI the way a Docker build does (`pip install --dry-run
--only-binary=:all: --platform ... --python-version ...`), with this machine's pip
configuration (local mirrors, constraints) switched off. They skip, saying so, when PyPI
cannot be reached.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from functools import lru_cache
from pathlib import Path

import pytest
import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from tests.helpers.paths import REPO_ROOT

DOCKER = REPO_ROOT / "docker"

# glibc of each Debian release the images use (manylinux_2_N wheels run where N <= this)
DEBIAN_GLIBC = {"bookworm": 36, "trixie": 41}
DEBIAN_PYTHON = {"bookworm": "3.11", "trixie": "3.13"}


def pins(path: Path) -> dict[str, str]:
    """`name==version` lines of a requirements file (following -r), by canonical name."""
    out: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("-r "):
            out.update(pins(path.parent / line[3:].strip()))
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([A-Za-z0-9_.+\-!]+)", line)
        assert m, f"{path.name}: {line!r} is not pinned as name==version"
        out[canonicalize_name(m.group(1))] = m.group(2)
    return out


@lru_cache
def pyproject() -> dict:
    with (REPO_ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["project"]


def _requirements(specs: list[str]) -> dict[str, Requirement]:
    reqs = [Requirement(s) for s in specs]
    return {
        canonicalize_name(r.name): r for r in reqs if canonicalize_name(r.name) != "wyoming-hayakoe"
    }


# --- in step with pyproject.toml ----------------------------------------------------------------


def test_cpu_requirements_pin_exactly_the_project_dependencies():
    cpu = pins(DOCKER / "requirements-cpu.txt")
    deps = _requirements(pyproject()["dependencies"])
    assert set(cpu) == set(deps), "docker/requirements-cpu.txt and [project.dependencies] differ"
    for name, req in deps.items():
        assert req.specifier.contains(cpu[name], prereleases=True), (
            f"{name}=={cpu[name]} violates {req}"
        )


def test_cuda_requirements_add_pytorch_within_the_torch_extra():
    cpu = pins(DOCKER / "requirements-cpu.txt")
    cuda = pins(DOCKER / "requirements-cuda.txt")
    assert {k: v for k, v in cuda.items() if k in cpu} == cpu, (
        "the CUDA image must build on the CPU set"
    )
    extra = _requirements(pyproject()["optional-dependencies"]["torch"])
    added = set(cuda) - set(cpu)
    assert {"torch", "transformers"} <= added <= set(extra)
    for name in added:
        assert extra[name].specifier.contains(cuda[name], prereleases=True), name
    # The version CI tests with (a CPU wheel there, the CUDA wheel of the same release here).
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert f"torch=={cuda['torch']}" in ci


def test_source_only_pins_are_needed_by_a_pinned_dependency():
    """requirements-sdist.txt exists only for dependencies of dependencies that PyPI has no
    wheel for; each must really be required by one of the pinned packages."""
    from importlib.metadata import PackageNotFoundError, requires

    sdist = pins(DOCKER / "requirements-sdist.txt")
    assert sdist, "nothing to build from source: drop requirements-sdist.txt and its steps"
    parents = pins(DOCKER / "requirements-cpu.txt")
    needed: dict[str, Requirement] = {}
    for parent in parents:
        try:
            for spec in requires(parent) or []:
                req = Requirement(spec)
                if req.marker is None or req.marker.evaluate({"extra": ""}):
                    needed[canonicalize_name(req.name)] = req
        except PackageNotFoundError:
            continue
    for name, version in sdist.items():
        assert name in needed, f"{name} is pinned in requirements-sdist.txt but nothing needs it"
        assert needed[name].specifier.contains(version), (
            f"{name}=={version} violates {needed[name]}"
        )


def test_bake_requirements_satisfy_the_s3_extra():
    bake = pins(DOCKER / "requirements-bake.txt")
    extra = _requirements(pyproject()["optional-dependencies"]["s3"])
    assert set(bake) == set(extra)
    for name, req in extra.items():
        assert req.specifier.contains(bake[name]), name


# --- binary wheels for each image -----------------------------------------------------------


def _arg(text: str, name: str) -> str:
    m = re.search(rf"^ARG {name}=(\S+)$", text, re.M)
    assert m, f"ARG {name}=... not found"
    return m.group(1)


def targets() -> list[tuple[str, tuple[str, ...], str, str, int]]:
    """(label, requirement files, arch, python version, glibc minor) for every image,
    read from the recipes, without duplicates."""
    found: dict[tuple, str] = {}

    def add(label: str, files: tuple[str, ...], arch: str, python: str, release: str) -> None:
        key = (files, arch, python, DEBIAN_GLIBC[release])
        found.setdefault(key, label)

    for name, arch, variants in (
        ("Dockerfile.arm64", "aarch64", {"cpu": ("requirements-cpu.txt",)}),
        (
            "Dockerfile.amd64",
            "x86_64",
            {"cpu": ("requirements-cpu.txt",), "cuda": ("requirements-cuda.txt",)},
        ),
    ):
        text = (REPO_ROOT / name).read_text()
        python, release = _arg(text, "PYTHON_VERSION"), _arg(text, "DEBIAN_RELEASE")
        for variant, files in variants.items():
            # the voices stage installs the bake requirements on top, on the build machine
            add(f"{name}:{variant}", files + ("requirements-bake.txt",), arch, python, release)
    build = yaml.safe_load((REPO_ROOT / "addon" / "build.yaml").read_text())
    for arch_name, image in build["build_from"].items():
        release = image.rsplit(":", 1)[1]
        arch = {"aarch64": "aarch64", "amd64": "x86_64"}[arch_name]
        add(
            f"addon:{arch_name}",
            ("../addon/requirements.txt",),
            arch,
            DEBIAN_PYTHON[release],
            release,
        )
    return [(label, *key) for key, label in found.items()]


def _resolvable_targets() -> list:
    params = []
    for label, files, arch, python, glibc in targets():
        heavy = any("cuda" in f for f in files)
        marks = [pytest.mark.slow] if heavy else []
        params.append(pytest.param(label, files, arch, python, glibc, id=label, marks=marks))
    return params


@lru_cache
def _pypi_reachable() -> str | None:
    request = urllib.request.Request(
        "https://pypi.org/simple/pip/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            response.read(1)
    except (urllib.error.URLError, OSError) as exc:
        return f"PyPI is unreachable ({exc}); cannot check the images' wheels"
    return None


def _isolated_pip_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k == "PIP_CERT"}
    env["PIP_CONFIG_FILE"] = os.devnull  # no local mirrors, find-links or constraints
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture(scope="module")
def sdist_wheels(tmp_path_factory) -> Path:
    """Wheels built from requirements-sdist.txt, as the image builds make them; each must be
    pure Python (py3-none-any), or the images would need a compiler for the target CPU."""
    reason = _pypi_reachable()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("sdist-wheels")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "--wheel-dir",
            str(folder),
            "-r",
            str(DOCKER / "requirements-sdist.txt"),
        ],
        env=_isolated_pip_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    built = sorted(folder.glob("*.whl"))
    assert len(built) == len(pins(DOCKER / "requirements-sdist.txt"))
    for wheel in built:
        _, _, _, tags = parse_wheel_filename(wheel.name)
        assert all(t.abi == "none" and t.platform == "any" for t in tags), (
            f"{wheel.name} is not pure"
        )
    return folder


def test_every_image_target_is_checked():
    labels = {t[0] for t in targets()}
    assert {"Dockerfile.arm64:cpu", "Dockerfile.amd64:cpu", "Dockerfile.amd64:cuda"} <= labels
    archs = {(t[2], t[3]) for t in targets() if "requirements.txt" in t[1][0]}
    assert archs, "the add-on's requirements must be checked too"


@pytest.mark.parametrize(("label", "files", "arch", "python", "glibc"), _resolvable_targets())
def test_dependencies_resolve_to_binary_wheels(
    tmp_path, sdist_wheels, label, files, arch, python, glibc
):
    platforms = [f"manylinux_2_{n}_{arch}" for n in range(17, glibc + 1)] + [
        f"manylinux2014_{arch}"
    ]
    abi = "cp" + python.replace(".", "")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--ignore-installed",
        "--quiet",
        "--only-binary=:all:",
        "--python-version",
        python,
        "--implementation",
        "cp",
        "--abi",
        abi,
        "--abi",
        "abi3",
        "--abi",
        "none",
        *[a for p in platforms for a in ("--platform", p)],
        "--find-links",
        str(sdist_wheels),
        "--target",
        str(tmp_path / "target"),
        "--report",
        str(tmp_path / "report.json"),
    ]
    heavy = any("cuda" in f for f in files)
    if heavy:
        cmd.append("--no-cache-dir")  # gigabytes of CUDA wheels: do not keep them around
    for f in files:
        cmd += ["-r", str(DOCKER / f)]
    proc = subprocess.run(
        cmd, env=_isolated_pip_env(), capture_output=True, text=True, timeout=1500, check=False
    )
    assert proc.returncode == 0, (
        f"{label}: no binary wheels for {arch}/{python}:\n{proc.stderr[-3000:]}"
    )
    report = json.loads((tmp_path / "report.json").read_text())
    installed = {}
    for item in report["install"]:
        url = item["download_info"]["url"]
        filename = url.rsplit("/", 1)[1]
        assert filename.endswith(".whl"), f"{label}: {filename} is not a wheel"
        _, _, _, tags = parse_wheel_filename(filename)
        assert any(t.platform == "any" or t.platform.endswith(arch) for t in tags), filename
        assert any(
            t.interpreter in ("py3", "py2.py3") or t.interpreter.startswith("cp3") for t in tags
        )
        installed[canonicalize_name(item["metadata"]["name"])] = item["metadata"]["version"]
    wanted = {}
    for f in files:
        wanted.update(pins(DOCKER / f))
    for name, version in wanted.items():
        assert installed.get(name) == version, f"{label}: {name} resolved to {installed.get(name)}"
    if heavy:
        assert any(n.startswith(("nvidia-", "cuda-")) for n in installed), (
            "torch must be the CUDA build"
        )
    else:
        assert "torch" not in installed, f"{label}: PyTorch crept into a CPU image"
