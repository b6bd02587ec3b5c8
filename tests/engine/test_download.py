"""pre_download and `wyoming-hayakoe download`: exactly one device's files, then offline."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from engine.download import fetch_voice, pre_download
from engine.layout import backend_for, bert_prefixes, speaker_prefix
from engine.sources import (
    IncompleteSourceError,
    SourceNotFoundError,
    SourceUnavailableError,
    parse_source,
)
from tests.helpers.net import closed_endpoint
from tests.helpers.paths import REPO_ROOT
from tests.helpers.stores import (
    COMMIT,
    FakeHub,
    hayakoe_tree,
    isolate_aws,
    isolate_hub,
    moto_server,
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


def _go_offline(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    hub.stop()
    monkeypatch.setenv("HF_ENDPOINT", closed_endpoint())
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_prefixes_per_device() -> None:
    assert bert_prefixes(backend_for("cpu")) == ["bert/tokenizer", "onnx/bert/q8"]
    assert bert_prefixes(backend_for("cuda:1")) == ["bert/tokenizer", "pytorch/bert/fp32"]
    assert speaker_prefix("jvnv-F1-jp", backend_for("cpu")) == "onnx/speakers/jvnv-F1-jp"
    assert speaker_prefix("jvnv-F1-jp", backend_for("cuda")) == "pytorch/speakers/jvnv-F1-jp"
    for bad in ("../x", "a/b", "", ".hidden"):
        with pytest.raises(ValueError):
            speaker_prefix(bad, "onnx")
    with pytest.raises(ValueError, match="backend"):
        speaker_prefix("jvnv-F1-jp", "cpu")  # type: ignore[arg-type]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_pre_download_fetches_exactly_the_device_files_then_works_offline(
    hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, device: str
) -> None:
    folders = pre_download(
        [("alpha", None)], bert_source=f"hf://{REPO}", device=device, cache_dir=tmp_path
    )
    snapshot = tmp_path / "hf" / "models--lemondouble--hayakoe" / "snapshots" / COMMIT
    assert folders == [snapshot / p for p in EXPECTED[device]]
    wanted = sorted(
        k for k in hayakoe_tree() if any(k.startswith(p + "/") for p in EXPECTED[device])
    )
    assert sorted(hub.downloaded()) == wanted  # nothing else was fetched
    on_disk = sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_file())
    assert on_disk == wanted

    _go_offline(hub, monkeypatch)
    # What the loaders will ask for works with the network gone...
    bert = parse_source(f"hf://{REPO}", cache_dir=tmp_path)
    for prefix in EXPECTED[device]:
        assert bert.fetch(prefix) == snapshot / prefix
    # ...and so does a second pre_download (a container restart, an idempotent build step).
    assert (
        pre_download(
            [("alpha", None)], bert_source=f"hf://{REPO}", device=device, cache_dir=tmp_path
        )
        == folders
    )
    # The other device's files were never fetched.
    other = "cuda" if device == "cpu" else "cpu"
    with pytest.raises(SourceUnavailableError):
        pre_download(
            [("alpha", None)], bert_source=f"hf://{REPO}", device=other, cache_dir=tmp_path
        )


def test_pre_download_imports_no_model_library(hub: FakeHub, tmp_path: Path) -> None:
    code = (
        "import sys;"
        "from engine.download import pre_download;"
        f"pre_download([('alpha', None), ('beta', 'hf://{REPO}')], bert_source='hf://{REPO}',"
        f" device='cuda', cache_dir={str(tmp_path)!r});"
        "print(sorted(m for m in ('torch', 'onnxruntime', 'transformers', 'pyopenjtalk') if m in "
        "sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert len([p for p in hub.downloaded() if "/speakers/" in p]) == 6


def test_local_voices_are_checked_not_copied(hub: FakeHub, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "mine", hayakoe_tree(("delta",)))
    plain = write_tree(
        tmp_path / "plain",
        {
            "config.json": b"{}",
            "style_vectors.npy": b"npy",
            "mine_e10_s100.safetensors": b"weights",
        },
    )
    folders = pre_download(
        [("delta", str(root)), ("plainvoice", f"file://{plain}")],
        bert_source=str(root),
        device="cpu",
        cache_dir=tmp_path / "cache",
    )
    assert folders == [
        root / "bert/tokenizer",
        root / "onnx/bert/q8",
        root / "onnx/speakers/delta",
        plain,
    ]
    assert hub.requests == []
    assert not (tmp_path / "cache").exists()
    with pytest.raises(SourceNotFoundError) as info:
        pre_download(
            [("nobody", str(root))], bert_source=str(root), device="cpu", cache_dir=tmp_path
        )
    assert "onnx/speakers/nobody" in str(info.value) and "Style-Bert-VITS2" in str(info.value)


def test_incomplete_voice_folder_is_reported(tmp_path: Path) -> None:
    files = hayakoe_tree(("eps",))
    del files["onnx/speakers/eps/synthesizer.onnx"]
    root = write_tree(tmp_path / "r", files)
    with pytest.raises(IncompleteSourceError) as info:
        fetch_voice(parse_source(str(root)), "eps", "cpu")
    assert "synthesizer.onnx or synthesizer_q8.onnx" in str(info.value)
    assert f"{root}/onnx/speakers/eps" in str(info.value)


def test_unknown_official_voice_is_a_clear_error(hub: FakeHub, tmp_path: Path) -> None:
    with pytest.raises(SourceNotFoundError) as info:
        pre_download(
            [("no-such-voice", None)], bert_source=f"hf://{REPO}", device="cpu", cache_dir=tmp_path
        )
    assert "hf://lemondouble/hayakoe/onnx/speakers/no-such-voice" in str(info.value)


def test_s3_voices_then_offline(
    hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    boto3 = pytest.importorskip("boto3")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    isolate_aws(monkeypatch, tmp_path)
    with moto_server() as endpoint:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)
        bucket = f"b-{uuid.uuid4().hex[:10]}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=bucket)
        layout = parse_source(f"s3://{bucket}/hayakoe", cache_dir=tmp_path)
        layout.upload("", write_tree(tmp_path / "src", hayakoe_tree(("zeta",))))
        plain = parse_source(f"s3://{bucket}/plain", cache_dir=tmp_path)
        plain.upload(
            "",
            write_tree(
                tmp_path / "p",
                {"config.json": b"{}", "style_vectors.npy": b"n", "m.safetensors": b"w"},
            ),
        )
        voices = [("zeta", f"s3://{bucket}/hayakoe"), ("plainvoice", f"s3://{bucket}/plain")]
        folders = pre_download(
            voices, bert_source=f"s3://{bucket}/hayakoe", device="cpu", cache_dir=tmp_path
        )
        assert folders[2] == layout.cache_path / "onnx/speakers/zeta"
        assert folders[3] == plain.cache_path
        assert not (layout.cache_path / "pytorch").exists()
    # The store is gone (and the container holds no credentials).
    _go_offline(hub, monkeypatch)
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with caplog.at_level(logging.INFO, logger="engine.sources.s3"):
        again = pre_download(
            voices, bert_source=f"s3://{bucket}/hayakoe", device="cpu", cache_dir=tmp_path
        )
    assert again == folders
    assert "using the cached copy" in caplog.text
