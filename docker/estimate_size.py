#!/usr/bin/env python3
"""Estimate the size of each image's Python environment from the wheels it installs.

No Docker engine needed: for each image (architecture, Python version, requirement files,
read from the recipes as tests/deploy/test_docker_requirements.py does) this downloads the wheels
pip would install there and adds up their unpacked sizes (the zip entries' sizes, which is
what lands in /opt/venv, less .pyc files written later). Prints a table; the base image
and the voice files come on top (see docs/deployment.md for those figures).

    python docker/estimate_size.py                 # CPU images (~100 MB of downloads)
    python docker/estimate_size.py --with-cuda     # also the CUDA image (~2.5 GB)

Downloads go to a temporary folder that is removed afterwards.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCKER = ROOT / "docker"
GLIBC = 36  # Debian bookworm

IMAGES = {
    "arm64 (ONNX CPU)": ("aarch64", ["requirements-cpu.txt"]),
    "amd64 VARIANT=cpu (ONNX CPU)": ("x86_64", ["requirements-cpu.txt"]),
    "amd64 VARIANT=cuda (PyTorch CUDA)": ("x86_64", ["requirements-cuda.txt"]),
}


def _pip_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k == "PIP_CERT"}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def download(arch: str, files: list[str], python: str, dest: Path) -> list[Path]:
    """The wheels pip would install for `arch`/`python`, downloaded into `dest`."""
    sdist = dest / "sdist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "--wheel-dir",
            str(sdist),
            "-r",
            str(DOCKER / "requirements-sdist.txt"),
        ],
        env=_pip_env(),
        check=True,
    )
    platforms = [f"manylinux_2_{n}_{arch}" for n in range(17, GLIBC + 1)] + [
        f"manylinux2014_{arch}"
    ]
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "-q",
        "--no-cache-dir",
        "--only-binary=:all:",
        "--python-version",
        python,
        "--implementation",
        "cp",
        *[a for p in platforms for a in ("--platform", p)],
        "--find-links",
        str(sdist),
        "-d",
        str(dest / "wheels"),
    ]
    for f in files:
        cmd += ["-r", str(DOCKER / f)]
    subprocess.run(cmd, env=_pip_env(), check=True)
    return sorted((dest / "wheels").glob("*.whl"))


def unpacked_size(wheel: Path) -> int:
    """Bytes the wheel occupies once installed (sum of its files)."""
    with zipfile.ZipFile(wheel) as zf:
        return sum(info.file_size for info in zf.infolist())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--with-cuda", action="store_true", help="include the CUDA image (~2.5 GB download)"
    )
    parser.add_argument("--python", default="3.11")
    args = parser.parse_args()
    for label, (arch, files) in IMAGES.items():
        if "cuda" in label and not args.with_cuda:
            continue
        with tempfile.TemporaryDirectory(prefix="hayakoe-size-") as tmp:
            wheels = download(arch, files, args.python, Path(tmp))
            rows = sorted(
                ((unpacked_size(w), w.stat().st_size, w.name) for w in wheels), reverse=True
            )
        total_unpacked = sum(r[0] for r in rows)
        total_download = sum(r[1] for r in rows)
        print(
            f"\n{label}: {len(rows)} wheels, {total_download / 1e6:.0f} MB to download, "
            f"{total_unpacked / 1e6:.0f} MB installed"
        )
        for unpacked, size, name in rows[:8]:
            print(f"  {unpacked / 1e6:8.1f} MB  ({size / 1e6:6.1f} MB wheel)  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
