"""AivisHub files through the sources: a file named in a Hub repository or an S3 bucket is
fetched alone into the one cache, then served from the cache (offline too); `pre_download`
fetches and checks it. The Hub is a stand-in on loopback, S3 is moto's server."""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.aivm import AivmFileError, local_file, read_metadata
from engine.sources import SourceUnavailableError, parse_source
from tests.helpers.aivm import Speaker, Spec, write_aivm
from tests.helpers.net import closed_endpoint
from tests.helpers.paths import MODEL_SMALL
from tests.helpers.stores import FakeHub, isolate_aws, isolate_hub, moto_server

REPO = "someone/aivis"


def tiny_aivm(path: Path, name: str) -> Path:
    """A real .aivm (aivmlib's metadata in a Safetensors header) around one small tensor:
    enough for everything that reads metadata only."""
    from safetensors.torch import save_file

    ckpt = path.with_suffix(".safetensors")
    save_file({"enc_p.bert_proj.weight": torch.zeros(4, 64, 1)}, str(ckpt))
    cfg = json.loads((MODEL_SMALL / "config.json").read_text())
    vectors = np.load(MODEL_SMALL / "style_vectors.npy").astype(np.float32)
    spec = Spec(name, [Speaker("Solo", 0, {"Neutral": 0, "Happy": 1})])
    write_aivm(ckpt, path, cfg, vectors, spec)
    ckpt.unlink()
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, bytes]:
    return {
        "voices/a.aivm": tiny_aivm(tmp_path / "a.aivm", "Voice A").read_bytes(),
        "voices/b.aivm": tiny_aivm(tmp_path / "b.aivm", "Voice B").read_bytes(),
        "README.md": b"# AivisHub files\n",
    }


def test_a_hub_file_is_fetched_alone_then_used_from_the_cache(
    files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_hub(monkeypatch)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    hub = FakeHub({REPO: files}).start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        cache = tmp_path / "cache"
        path = local_file(f"hf://{REPO}/voices/a.aivm", cache_dir=cache)
        assert path.read_bytes() == files["voices/a.aivm"]
        assert path.is_relative_to(cache / "hf")
        assert hub.downloaded() == ["voices/a.aivm"]
        assert read_metadata(path).manifest.name == "Voice A"
        hub.requests.clear()
        assert local_file(f"hf://{REPO}/voices/a.aivm", cache_dir=cache) == path
        assert hub.requests == []  # cache first
    finally:
        hub.stop()
    monkeypatch.setenv("HF_ENDPOINT", closed_endpoint())
    assert local_file(f"hf://{REPO}/voices/a.aivm", cache_dir=cache, offline=True) == path
    with pytest.raises(SourceUnavailableError, match="switched off"):
        local_file(f"hf://{REPO}/voices/b.aivm", cache_dir=cache, offline=True)


def test_pre_download_fetches_and_checks_the_file(
    files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_hub(monkeypatch)
    files["voices/broken.aivm"] = files["voices/b.aivm"][:100]
    hub = FakeHub({REPO: files}).start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        from engine.download import pre_download as fetch_all

        monkeypatch.setattr("engine.download.fetch_bert", lambda source, device: [])
        out = fetch_all([("a", f"hf://{REPO}/voices/a.aivm#speaker=0")], cache_dir=tmp_path / "c")
        assert len(out) == 1 and out[0].read_bytes() == files["voices/a.aivm"]
        with pytest.raises(AivmFileError, match="broken.aivm: truncated"):
            fetch_all([("x", f"hf://{REPO}/voices/broken.aivm")], cache_dir=tmp_path / "c")
    finally:
        hub.stop()


def test_an_s3_file_is_fetched_alone_then_used_from_the_cache(
    files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    import boto3

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with moto_server() as endpoint:
        isolate_aws(monkeypatch, tmp_path, endpoint=endpoint)
        bucket = f"aivis-{uuid.uuid4().hex[:10]}"
        client = boto3.client("s3", endpoint_url=endpoint)
        client.create_bucket(Bucket=bucket)
        for key, data in files.items():
            client.put_object(Bucket=bucket, Key=key, Body=data)
        cache = tmp_path / "cache"
        path = local_file(f"s3://{bucket}/voices/a.aivm", cache_dir=cache)
        assert path.read_bytes() == files["voices/a.aivm"]
        assert path.is_relative_to(cache / "s3")
        assert not (path.parent / "b.aivm").exists()  # the file alone
        assert read_metadata(path).manifest.name == "Voice A"
        src = parse_source(f"s3://{bucket}/voices/nothing.aivm", cache_dir=cache)
        with pytest.raises(FileNotFoundError, match="no object"):
            src.fetch_file()
    # the store is gone: the complete cached copy is used, and the log says so
    with caplog.at_level(logging.WARNING):
        assert local_file(f"s3://{bucket}/voices/a.aivm", cache_dir=cache) == path
    assert "using the cached copy" in caplog.text
    assert local_file(f"s3://{bucket}/voices/a.aivm", cache_dir=cache, offline=True) == path


def test_a_local_file_is_used_in_place(tmp_path: Path) -> None:
    path = tiny_aivm(tmp_path / "x.aivm", "Local")
    assert local_file(str(path)) == path
    assert local_file(f"file://{path}") == path
    with pytest.raises(FileNotFoundError, match="no such file"):
        local_file(str(tmp_path / "missing.aivmx"))
