"""HFSource: downloads through a loopback stand-in for the Hub, and the cache with the
network gone (HF_HUB_OFFLINE=1, the stand-in stopped)."""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("huggingface_hub")

from engine.sources import (
    HFSource,
    SourceAccessError,
    SourceNotFoundError,
    SourceUnavailableError,
    parse_source,
)
from tests.helpers.net import closed_endpoint
from tests.helpers.paths import REPO_ROOT
from tests.helpers.stores import COMMIT, FakeHub, hayakoe_tree, isolate_hub

REPO = "someone/voices"
TOKEN = "hf_StandInSecretTokenNeverToBeSeen12345"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_hub(monkeypatch)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    # Nothing may reach the real Hub: the default endpoint is a closed loopback port.
    monkeypatch.setenv("HF_ENDPOINT", closed_endpoint())


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def _expected(prefix: str) -> dict[str, bytes]:
    return {
        k[len(prefix) + 1 :]: v for k, v in hayakoe_tree().items() if k.startswith(prefix + "/")
    }


def test_fetch_downloads_only_the_prefix_then_uses_the_cache(hub: FakeHub, tmp_path: Path) -> None:
    src = HFSource(REPO, cache_dir=tmp_path, endpoint=hub.endpoint)
    folder = src.fetch("onnx/speakers/alpha")
    assert _files(folder) == _expected("onnx/speakers/alpha")
    assert folder.is_relative_to(tmp_path / "hf" / "models--someone--voices" / "snapshots" / COMMIT)
    assert sorted(hub.downloaded()) == sorted(
        f"onnx/speakers/alpha/{n}" for n in _expected("onnx/speakers/alpha")
    )
    hub.requests.clear()
    assert src.fetch("onnx/speakers/alpha") == folder
    assert hub.requests == []  # cache first: no network at all


def test_offline_after_download(
    hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = HFSource(REPO, cache_dir=tmp_path, endpoint=hub.endpoint)
    folder = src.fetch("bert/tokenizer")
    hub.stop()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    again = HFSource(REPO, cache_dir=tmp_path)
    assert again.fetch("bert/tokenizer") == folder
    assert again.exists("bert/tokenizer") and not again.exists("onnx/bert/q8")
    with pytest.raises(SourceUnavailableError) as info:
        again.fetch("onnx/bert/q8")
    assert "HF_HUB_OFFLINE" in str(info.value) and "hf://someone/voices/onnx/bert/q8" in str(
        info.value
    )


def _fill_like_snapshot_download(
    cache: Path, repo_id: str, files: dict[str, bytes], ref: str = "main"
) -> Path:
    """The layout snapshot_download leaves: blobs/<oid>, snapshots/<commit>/<path> → symlink to
    the blob, refs/<ref> holding the commit (no tree listing, as older versions and copies)."""
    repo_dir = cache / "hf" / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / COMMIT
    for rel, data in files.items():
        oid = hashlib.sha256(data).hexdigest()
        blob = repo_dir / "blobs" / oid
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = snapshot / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs" / ref).write_text(COMMIT)
    return snapshot


@pytest.mark.parametrize(
    "uri", ["hf://someone/voices", f"hf://someone/voices@{COMMIT}", "hf://someone/voices/onnx"]
)
def test_hand_filled_cache_loads_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uri: str
) -> None:
    files = hayakoe_tree()
    snapshot = _fill_like_snapshot_download(tmp_path, REPO, files)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    src = parse_source(uri, cache_dir=tmp_path)
    prefix = "speakers/beta" if uri.endswith("/onnx") else "onnx/speakers/beta"
    folder = src.fetch(prefix)
    assert folder == snapshot / "onnx" / "speakers" / "beta"
    assert _files(folder) == _expected("onnx/speakers/beta")


def test_offline_set_before_import_in_a_fresh_process(tmp_path: Path) -> None:
    _fill_like_snapshot_download(tmp_path, REPO, hayakoe_tree())
    code = (
        "from engine.sources import parse_source;"
        f"src = parse_source('hf://{REPO}', cache_dir={str(tmp_path)!r});"
        "print(src.fetch('pytorch/speakers/alpha'));"
        "print(src.exists('onnx/bert/q8'), src.exists('onnx/speakers/zeta'))"
    )
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_ENDPOINT": closed_endpoint(),
        "PYTHONPATH": str(REPO_ROOT),
    }
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    assert lines[0].endswith(f"snapshots/{COMMIT}/pytorch/speakers/alpha")
    assert lines[1:] == ["True", "False"]


def test_half_finished_snapshot_is_not_taken_as_whole(
    hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = HFSource(REPO, cache_dir=tmp_path, endpoint=hub.endpoint)
    folder = src.fetch("onnx/speakers/beta")
    # As if the download stopped before this file: neither its blob nor its link exist.
    (folder / "synthesizer.onnx").resolve().unlink()
    (folder / "synthesizer.onnx").unlink()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SourceUnavailableError):
        src.fetch("onnx/speakers/beta")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    hub.requests.clear()
    assert _files(src.fetch("onnx/speakers/beta")) == _expected("onnx/speakers/beta")
    assert hub.downloaded() == ["onnx/speakers/beta/synthesizer.onnx"]


def test_unreachable_hub_without_cache(tmp_path: Path) -> None:
    src = HFSource(REPO, cache_dir=tmp_path)  # HF_ENDPOINT: a closed port
    with pytest.raises(SourceUnavailableError) as info:
        src.fetch("onnx/speakers/alpha")
    assert "hf://someone/voices/onnx/speakers/alpha" in str(info.value)
    assert "could not be reached" in str(info.value)


def test_missing_repo_and_missing_folder(hub: FakeHub, tmp_path: Path) -> None:
    with pytest.raises(SourceNotFoundError, match="repository not found"):
        HFSource("nobody/nothing", cache_dir=tmp_path, endpoint=hub.endpoint).fetch(
            "onnx/speakers/alpha"
        )
    src = HFSource(REPO, cache_dir=tmp_path, endpoint=hub.endpoint)
    with pytest.raises(SourceNotFoundError, match="no files in that folder"):
        src.fetch("onnx/speakers/zeta")
    assert src.exists("onnx/speakers/alpha") and not src.exists("onnx/speakers/zeta")
    assert not src.exists("config.json")


def test_endpoint_from_environment(
    hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    folder = parse_source(f"hf://{REPO}", cache_dir=tmp_path).fetch("bert/tokenizer")
    assert _files(folder) == _expected("bert/tokenizer")
    # A URL on the configured endpoint's host names a Hub repository too.
    src = parse_source(f"{hub.endpoint}/{REPO}/tree/main/onnx", cache_dir=tmp_path)
    assert isinstance(src, HFSource) and src.subdir == "onnx" and src.revision == "main"
    assert _files(src.fetch("bert/q8")) == _expected("onnx/bert/q8")


def test_private_repo_token_is_used_but_never_shown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hub = FakeHub({REPO: hayakoe_tree()}, required_token=TOKEN).start()
    texts: list[str] = []
    try:
        with caplog.at_level(logging.DEBUG):
            with pytest.raises((SourceAccessError, SourceNotFoundError)) as info:  # no token
                HFSource(REPO, cache_dir=tmp_path / "a", endpoint=hub.endpoint).fetch(
                    "bert/tokenizer"
                )
            texts.append(str(info.value))
            assert "HF_TOKEN" in texts[-1]
            src = parse_source(f"hf://{REPO}", cache_dir=tmp_path / "b", token=TOKEN)
            src.endpoint = hub.endpoint
            folder = src.fetch("onnx/speakers/alpha")
            assert _files(folder) == _expected("onnx/speakers/alpha")
            texts.append(repr(src) + src.uri)
            hub.stop()
            with pytest.raises(SourceNotFoundError) as info:
                src.fetch("onnx/speakers/beta")
            texts.append(str(info.value))
    finally:
        hub.stop()
    assert f"Bearer {TOKEN}" in hub.auth_headers  # the token was sent...
    assert caplog.text
    assert TOKEN not in caplog.text  # ...but is in no log line,
    assert all(TOKEN not in t for t in texts)  # no message,
    for path in tmp_path.rglob("*"):  # and no file of the cache
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path


def test_gated_or_forbidden_is_an_access_error(tmp_path: Path) -> None:
    hub = FakeHub({REPO: hayakoe_tree()}, required_token="some-other-token").start()
    try:
        src = HFSource(REPO, cache_dir=tmp_path, endpoint=hub.endpoint, token="wrong-token-1234")
        with pytest.raises((SourceAccessError, SourceNotFoundError)) as info:
            src.fetch("bert/tokenizer")
        assert "wrong-token-1234" not in str(info.value)
    finally:
        hub.stop()
