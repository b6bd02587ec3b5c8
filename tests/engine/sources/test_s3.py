"""S3Source against a real S3-compatible server (moto's standalone server) on loopback."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path

import pytest

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto.server")

from engine.sources import (
    S3Source,
    SourceNotFoundError,
    SourceUnavailableError,
    parse_source,
    require_files,
)
from tests.helpers.net import closed_endpoint
from tests.helpers.paths import REPO_ROOT
from tests.helpers.stores import hayakoe_tree, isolate_aws, moto_server, write_tree

SECRET_KEY = "S3cretKeyThatMustNeverBeLogged0123456789"


@pytest.fixture(scope="module")
def endpoint() -> str:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with moto_server() as url:
        yield url


@pytest.fixture
def s3env(endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict:
    return isolate_aws(monkeypatch, tmp_path, secret=SECRET_KEY, endpoint=endpoint)


@pytest.fixture
def bucket(s3env: dict, endpoint: str) -> str:
    name = f"voices-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=name)
    return name


@pytest.fixture
def client(endpoint: str, s3env: dict):
    return boto3.client("s3", endpoint_url=endpoint)


@pytest.fixture
def uploaded(bucket: str, tmp_path: Path) -> tuple[S3Source, dict[str, bytes]]:
    files = hayakoe_tree()
    local = write_tree(tmp_path / "upload", files)
    src = parse_source(f"s3://{bucket}/hayakoe", cache_dir=tmp_path / "cache")
    src.upload("", local)
    return src, files


def _read_all(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and not p.name.startswith(".hayakoe_")
    }


def _expected(files: dict[str, bytes], prefix: str) -> dict[str, bytes]:
    return {k[len(prefix) + 1 :]: v for k, v in files.items() if k.startswith(prefix + "/")}


def test_upload_then_fetch_gives_the_same_files(
    uploaded, client, bucket: str, tmp_path: Path
) -> None:
    src, files = uploaded
    keys = {o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]}
    assert keys == {f"hayakoe/{k}" for k in files}
    folder = src.fetch("onnx/speakers/alpha")
    assert (
        folder
        == tmp_path
        / "cache"
        / "s3"
        / src.cache_path.parts[-3]
        / bucket
        / "hayakoe"
        / "onnx"
        / "speakers"
        / "alpha"
    )
    assert _read_all(folder) == _expected(files, "onnx/speakers/alpha")
    assert (folder / ".hayakoe_synced").is_file()
    manifest = json.loads((folder / ".hayakoe_manifest.json").read_text())["files"]
    assert set(manifest) == set(_expected(files, "onnx/speakers/alpha"))
    assert all(entry["etag"] and entry["size"] > 0 for entry in manifest.values())
    # Only the prefix asked for was fetched.
    assert not (folder.parent / "beta").exists()
    assert not (folder.parents[2] / "pytorch").exists()


def test_unchanged_objects_are_not_fetched_again_and_changed_ones_are(
    uploaded, client, bucket: str
) -> None:
    src, files = uploaded
    folder = src.fetch("onnx/speakers/alpha")
    inodes = {
        name: (folder / name).stat().st_ino for name in _expected(files, "onnx/speakers/alpha")
    }
    again = src.fetch("onnx/speakers/alpha")
    assert {n: (again / n).stat().st_ino for n in inodes} == inodes  # nothing rewritten

    # Same size, new bytes: only the ETag changes.
    old = files["onnx/speakers/alpha/synthesizer.onnx"]
    new = bytes(reversed(old))
    assert len(new) == len(old) and new != old
    client.put_object(Bucket=bucket, Key="hayakoe/onnx/speakers/alpha/synthesizer.onnx", Body=new)
    # New size.
    client.put_object(
        Bucket=bucket,
        Key="hayakoe/onnx/speakers/alpha/config.json",
        Body=b'{"v": 2, "longer": true}',
    )
    # Gone from the store.
    client.delete_object(Bucket=bucket, Key="hayakoe/onnx/speakers/alpha/duration_predictor.onnx")

    folder = src.fetch("onnx/speakers/alpha")
    assert (folder / "synthesizer.onnx").read_bytes() == new
    assert (folder / "config.json").read_bytes() == b'{"v": 2, "longer": true}'
    assert not (folder / "duration_predictor.onnx").exists()
    assert (folder / "style_vectors.npy").stat().st_ino == inodes["style_vectors.npy"]
    assert (folder / "synthesizer.onnx").stat().st_ino != inodes["synthesizer.onnx"]
    assert (folder / ".hayakoe_synced").is_file()


CRASH_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    import engine.sources.s3 as s3mod
    from engine.sources import parse_source

    calls = []
    real = s3mod._copy_stream

    def crashing_copy(body, out, progress):
        calls.append(1)
        if len(calls) == {crash_on}:
            out.write(body.read(10))   # part of the object reaches the disk...
            out.flush()
            os.kill(os.getpid(), signal.SIGKILL)   # ...then the process dies
        return real(body, out, progress)

    s3mod._copy_stream = crashing_copy
    parse_source({uri!r}, cache_dir={cache!r}).fetch({prefix!r})
    """
)


def _crash_fetch(uri: str, cache: Path, prefix: str, crash_on: int) -> subprocess.CompletedProcess:
    script = CRASH_SCRIPT.format(
        root=str(REPO_ROOT), uri=uri, cache=str(cache), prefix=prefix, crash_on=crash_on
    )
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )


def test_interrupted_download_is_never_taken_as_whole_and_recovers(
    uploaded, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, files = uploaded
    prefix = "onnx/speakers/alpha"
    expected = _expected(files, prefix)
    # Killed while writing the third of four files.
    proc = _crash_fetch(f"s3://{bucket}/hayakoe", tmp_path / "cache", prefix, crash_on=3)
    assert proc.returncode == -9, proc.stderr
    folder = src.cache_path / prefix
    on_disk = {p.name for p in folder.iterdir()}
    parts = [n for n in on_disk if ".hayakoe-part" in n]
    assert len(parts) == 1  # the half-written temporary file...
    finals = {n for n in on_disk if not n.startswith(".")}
    assert len(finals) == 2  # ...is not under its final name; two whole files are
    for name in finals:
        assert (folder / name).read_bytes() == expected[name]
    assert not (folder / ".hayakoe_synced").exists()

    # A loader checking the folder sees it is incomplete, naming the URI and the files.
    with pytest.raises(SourceNotFoundError) as info:
        require_files(folder, list(expected), src.uri, prefix)
    assert src.uri in str(info.value)
    assert all(name in str(info.value) for name in set(expected) - finals)

    # With the store out of reach, the incomplete copy is refused, not used.
    offline_src = parse_source(src.uri, cache_dir=src.cache_path.parents[3], offline=True)
    with pytest.raises(SourceUnavailableError, match="did not finish"):
        offline_src.fetch(prefix)

    # The next fetch completes the copy: whole files, no temporaries, the marker.
    folder = src.fetch(prefix)
    assert _read_all(folder) == expected
    assert not [p for p in folder.iterdir() if ".hayakoe-part" in p.name]
    assert (folder / ".hayakoe_synced").is_file()


def test_interrupted_update_keeps_the_old_whole_file(
    uploaded, client, bucket: str, tmp_path: Path
) -> None:
    src, _ = uploaded
    prefix = "onnx/speakers/beta"
    folder = src.fetch(prefix)
    old = (folder / "synthesizer.onnx").read_bytes()
    client.put_object(Bucket=bucket, Key=f"hayakoe/{prefix}/synthesizer.onnx", Body=b"NEW" * 1000)
    proc = _crash_fetch(f"s3://{bucket}/hayakoe", tmp_path / "cache", prefix, crash_on=1)
    assert proc.returncode == -9, proc.stderr
    assert (folder / "synthesizer.onnx").read_bytes() == old  # never a mix of old and new bytes
    assert not (folder / ".hayakoe_synced").exists()  # but the folder is not marked as synced
    src.fetch(prefix)
    assert (folder / "synthesizer.onnx").read_bytes() == b"NEW" * 1000


def test_wrong_bucket_is_a_clear_error(s3env: dict, tmp_path: Path) -> None:
    src = parse_source("s3://no-such-bucket-here/voices", cache_dir=tmp_path)
    with pytest.raises(SourceNotFoundError) as info:
        src.fetch("onnx/speakers/alpha")
    text = str(info.value)
    assert "no-such-bucket-here" in text and "does not exist" in text
    assert "s3://no-such-bucket-here/voices/onnx/speakers/alpha" in text
    with pytest.raises(SourceNotFoundError, match="does not exist"):
        src.upload("x", write_tree(tmp_path / "in", {"a.txt": b"a"}))
    with pytest.raises(SourceNotFoundError, match="does not exist"):
        src.exists("x")


def test_missing_prefix_is_a_clear_error(uploaded) -> None:
    src, _ = uploaded
    with pytest.raises(
        SourceNotFoundError, match="no objects under s3://.*/hayakoe/onnx/speakers/gamma/"
    ):
        src.fetch("onnx/speakers/gamma")


def test_exists(uploaded) -> None:
    src, _ = uploaded
    assert src.exists("onnx/speakers/alpha")
    assert src.exists("onnx/bert/q8/bert_q8.onnx")
    assert src.exists("")
    assert not src.exists("onnx/speakers/gamma")
    assert not src.exists("config.json")


def test_unreachable_store_uses_a_complete_cached_copy_and_says_so(
    uploaded, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    src, files = uploaded
    folder = src.fetch("bert/tokenizer")
    # Production containers hold no credentials: that counts as "unreachable".
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(key)
    offline = parse_source(src.uri, cache_dir=src.cache_path.parents[3])
    with caplog.at_level(logging.INFO, logger="engine.sources.s3"):
        assert offline.fetch("bert/tokenizer") == folder
    assert "using the cached copy" in caplog.text and "no AWS credentials" in caplog.text
    assert _read_all(folder) == _expected(files, "bert/tokenizer")
    assert offline.exists("bert/tokenizer")
    with pytest.raises(SourceUnavailableError, match="no complete cached copy"):
        offline.fetch("onnx/bert/q8")
    # Offline (HAYAKOE_OFFLINE, --offline) skips the store entirely.
    offline = parse_source(src.uri, cache_dir=src.cache_path.parents[3], offline=True)
    assert offline.fetch("bert/tokenizer") == folder


def test_unreachable_endpoint_without_cache(
    s3env: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", closed_endpoint())
    src = parse_source("s3://bucket/voices", cache_dir=tmp_path)
    with pytest.raises(SourceUnavailableError) as info:
        src.fetch("onnx/speakers/alpha")
    text = str(info.value)
    assert (
        "cannot connect to 127.0.0.1:" in text and "s3://bucket/voices/onnx/speakers/alpha" in text
    )


def test_unsafe_keys_are_skipped(
    bucket: str, client, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    client.put_object(Bucket=bucket, Key="v/x/config.json", Body=b"{}")
    client.put_object(Bucket=bucket, Key="v/x/../../../../escaped.txt", Body=b"evil")
    client.put_object(Bucket=bucket, Key="v/x/.hayakoe_synced", Body=b"forged")
    client.put_object(Bucket=bucket, Key="v/x/sub/", Body=b"")
    src = parse_source(f"s3://{bucket}/v", cache_dir=tmp_path / "cache")
    with caplog.at_level(logging.WARNING):
        folder = src.fetch("x")
    assert (folder / "config.json").read_bytes() == b"{}"
    assert "unsafe key" in caplog.text
    assert not list(tmp_path.rglob("escaped.txt"))
    assert json.loads((folder / ".hayakoe_synced").read_text())["objects"] == 1


def test_concurrent_fetches_of_one_folder(uploaded) -> None:
    src, files = uploaded
    results: list[object] = []

    def run() -> None:
        try:
            results.append(src.fetch("onnx/speakers/alpha"))
        except Exception as exc:  # pragma: no cover - reported below
            results.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 3 and all(isinstance(r, Path) for r in results), results
    assert _read_all(results[0]) == _expected(files, "onnx/speakers/alpha")


def test_progress_is_logged(
    bucket: str, client, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    client.put_object(Bucket=bucket, Key="big/model.bin", Body=os.urandom(3 * 1024 * 1024))
    src = parse_source(f"s3://{bucket}", cache_dir=tmp_path)
    with caplog.at_level(logging.INFO, logger="engine.sources.s3"):
        src.fetch("big")
    assert "Downloading 1 of 1 files" in caplog.text and "(3.0 MB)" in caplog.text
    assert "done, 100% (3.0/3.0 MB" in caplog.text


def test_secrets_stay_out_of_logs_errors_and_cache(
    uploaded,
    bucket: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    src, _ = uploaded
    texts: list[str] = []
    with caplog.at_level(logging.DEBUG):  # every library's debug output, unfiltered
        src.fetch("onnx/speakers/alpha")
        for bad in (f"s3://no-bucket-{uuid.uuid4().hex[:6]}/x",):
            with pytest.raises(SourceNotFoundError) as info:
                parse_source(bad, cache_dir=tmp_path / "cache").fetch("y")
            texts.append(str(info.value))
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", closed_endpoint())
        with pytest.raises(SourceUnavailableError) as info:
            parse_source(f"s3://{bucket}/hayakoe", cache_dir=tmp_path / "cache").fetch("z")
        texts.append(str(info.value))
    assert caplog.text
    assert SECRET_KEY not in caplog.text
    assert all(SECRET_KEY not in t for t in texts)
    for path in (tmp_path / "cache").rglob("*"):
        if path.is_file():
            assert SECRET_KEY.encode() not in path.read_bytes(), path


def test_redacting_filter_hides_aws_key_id_and_signatures_in_debug_logs(
    bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.sources import RedactingFilter

    key_id = "AKIAZXCVBNMASDFGHJKL"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key_id)
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Collect(level=logging.DEBUG)
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        src = parse_source(f"s3://{bucket}/v", cache_dir=tmp_path)
        src.upload("x", write_tree(tmp_path / "in", {"a.txt": b"a"}))
        src.fetch("x")
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    text = "\n".join(lines)
    assert "botocore" in text  # botocore's request-level debug output went through the filter
    assert key_id not in text and SECRET_KEY not in text
    assert "Signature=" not in text or "Signature=***" in text
