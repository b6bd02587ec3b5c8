"""`wyoming-hayakoe download` (`wyoming_hayakoe.commands.download`) as a process: both
devices with progress, a token file used and never shown, failures in one line each."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.download import fetch_voice, pre_download
from engine.sources import parse_source
from tests.helpers.net import closed_endpoint
from tests.helpers.paths import REPO_ROOT
from tests.helpers.stores import (
    COMMIT,
    FakeHub,
    hayakoe_tree,
    isolate_hub,
    write_tree,
)

REPO = "lemondouble/hayakoe"  # the official name, served by the loopback stand-in

TOKEN = "hf_DownloadCommandSecret0123456789abcdef"

EXPECTED = {
    "cpu": ["bert/tokenizer", "onnx/bert/q8", "onnx/speakers/alpha"],
    "cuda": ["bert/tokenizer", "pytorch/bert/fp32", "pytorch/speakers/alpha"],
}


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_hub(monkeypatch)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


@pytest.fixture
def hub(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> FakeHub:
    """The shared stand-in Hub (tests/conftest.py), as this process's Hub endpoint."""
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    return hub


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    code = (
        "import sys; from wyoming_hayakoe.commands.download import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    full_env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=180,
        check=False,
    )


def test_voice_in_the_other_backends_layout_is_fetched_as_the_loader_reads_it(
    tmp_path: Path,
) -> None:
    files = {
        k: v for k, v in hayakoe_tree(("kappa",)).items() if not k.startswith("onnx/speakers/")
    }
    root = write_tree(tmp_path / "r", files)
    folder = fetch_voice(parse_source(str(root)), "kappa", "cpu")
    assert folder == root / "pytorch/speakers/kappa"  # the loader converts it to ONNX
    files = {
        k: v for k, v in hayakoe_tree(("iota",)).items() if not k.startswith("pytorch/speakers/")
    }
    root = write_tree(tmp_path / "s", files)
    assert fetch_voice(parse_source(str(root)), "iota", "cuda") == root / "onnx/speakers/iota"


def test_embedded_voice_needs_no_download(tmp_path: Path) -> None:
    from engine import EMBEDDED_VOICE_NAME

    root = write_tree(tmp_path / "r", hayakoe_tree(()))
    assert (
        pre_download([(EMBEDDED_VOICE_NAME, None)], bert_source="hf://nobody/nothing", device="cpu")
        == []
    )
    folders = pre_download(
        [(EMBEDDED_VOICE_NAME, None), ("x", str(write_tree(tmp_path / "v", hayakoe_tree(("x",)))))],
        bert_source=str(root),
        device="cpu",
        cache_dir=tmp_path / "c",
    )
    assert folders == [
        root / "bert/tokenizer",
        root / "onnx/bert/q8",
        tmp_path / "v/onnx/speakers/x",
    ]
    # No voices at all: the BERT alone (e.g. for voices added later from local folders).
    assert pre_download([], bert_source=str(root), device="cpu") == [
        root / "bert/tokenizer",
        root / "onnx/bert/q8",
    ]


def test_cli_downloads_both_devices_with_progress(hub: FakeHub, tmp_path: Path) -> None:
    local = write_tree(tmp_path / "mine", hayakoe_tree(("omega",)))
    out = _cli(
        "--voice",
        "alpha",
        "--voice",
        f"omega={local}",
        "--device",
        "cpu",
        "--device",
        "cuda",
        "--cache-dir",
        str(tmp_path / "cache"),
        env={"HF_ENDPOINT": hub.endpoint},
    )
    assert out.returncode == 0, out.stderr
    assert f"Ready in {tmp_path / 'cache'}" in out.stdout
    assert "Downloading hf://lemondouble/hayakoe: onnx/speakers/alpha" in out.stderr
    assert "Downloaded hf://lemondouble/hayakoe: pytorch/speakers/alpha" in out.stderr
    assert "HTTP Request" not in out.stderr  # no per-request chatter without --debug
    snapshot = tmp_path / "cache" / "hf" / "models--lemondouble--hayakoe" / "snapshots" / COMMIT
    for prefix in EXPECTED["cpu"] + EXPECTED["cuda"]:
        assert (snapshot / prefix).is_dir() and str(snapshot / prefix) in out.stdout
    assert not (snapshot / "onnx/speakers/beta").exists()
    assert str(local / "onnx/speakers/omega") in out.stdout


def test_cli_token_file_is_used_and_never_shown(tmp_path: Path) -> None:
    hub = FakeHub({"someone/private": hayakoe_tree(("gamma",))}, required_token=TOKEN).start()
    try:
        token_file = tmp_path / "hf_token"
        token_file.write_text(TOKEN + "\n")
        common = ["--voice", "gamma=hf://someone/private", "--bert-source", "hf://someone/private"]
        denied = _cli(
            *common,
            "--cache-dir",
            str(tmp_path / "c1"),
            "--debug",
            env={"HF_ENDPOINT": hub.endpoint},
        )
        assert denied.returncode == 1
        assert "download failed" in denied.stderr and "HF_TOKEN" in denied.stderr
        ok = _cli(
            *common,
            "--cache-dir",
            str(tmp_path / "c2"),
            "--hf-token-file",
            str(token_file),
            "--debug",
            env={"HF_ENDPOINT": hub.endpoint},
        )
        assert ok.returncode == 0, ok.stderr
        from_env = _cli(
            *common,
            "--cache-dir",
            str(tmp_path / "c3"),
            "--debug",
            env={"HF_ENDPOINT": hub.endpoint, "HF_TOKEN": TOKEN},
        )
        assert from_env.returncode == 0, from_env.stderr
    finally:
        hub.stop()
    assert f"Bearer {TOKEN}" in hub.auth_headers
    for proc in (denied, ok, from_env):
        assert TOKEN not in proc.stdout and TOKEN not in proc.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file() and path != token_file:
            assert TOKEN.encode() not in path.read_bytes(), path


def test_cli_failures(tmp_path: Path) -> None:
    bad = _cli("--voice", "=hf://a/b", "--cache-dir", str(tmp_path))
    assert bad.returncode == 2 and "NAME or NAME=SOURCE" in bad.stderr
    bad = _cli("--device", "tpu")
    assert bad.returncode == 2
    gone = _cli(
        "--voice",
        "alpha",
        "--cache-dir",
        str(tmp_path),
        env={"HF_ENDPOINT": closed_endpoint(), "HF_HUB_DISABLE_PROGRESS_BARS": "1"},
    )
    assert gone.returncode == 1
    assert "download failed" in gone.stderr and "hf://lemondouble/hayakoe" in gone.stderr
    assert "Traceback" not in gone.stderr
    unsupported = _cli("--bert-source", "gs://x/y", "--cache-dir", str(tmp_path))
    assert unsupported.returncode == 1 and "supported are" in unsupported.stderr
