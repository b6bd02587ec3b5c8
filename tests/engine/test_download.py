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


# -- the command ----------------------------------------------------------------------------


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
