"""Faults while fetching voices: a store that never answers, a cache that fills up or is
read-only in the middle of a download. Real parts: moto's S3 server and a silent TCP
listener on loopback; a real tmpfs, mounted in a private mount namespace (``unshare``)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto.server")

from engine.sources import CacheWriteError, S3Source, SourceUnavailableError  # noqa: E402
from tests.helpers.paths import REPO_ROOT  # noqa: E402
from tests.helpers.stores import isolate_aws, moto_server  # noqa: E402

pytestmark = pytest.mark.timeout(180)

BIG = os.urandom(3 << 20)  # 3 MiB: more than the small tmpfs holds


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    return isolate_aws(monkeypatch, tmp_path)


@pytest.fixture
def silent_store() -> Iterator[str]:
    """An endpoint on loopback that accepts connections and never answers (a hung store)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)  # read nothing, answer nothing

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()


def test_a_store_that_never_answers_times_out_with_a_message(
    aws_env: dict, silent_store: str, tmp_path: Path
) -> None:
    src = S3Source("voices", "hayakoe", cache_dir=tmp_path, endpoint_url=silent_store, timeout=1)
    started = time.monotonic()
    with pytest.raises(SourceUnavailableError) as info:
        src.fetch("onnx/speakers/alpha")
    took = time.monotonic() - started
    text = str(info.value)
    assert "did not answer within 1 s" in text and "127.0.0.1:" in text
    assert "s3://voices/hayakoe/onnx/speakers/alpha" in text
    assert took < 30, f"gave up only after {took:.0f} s"


def test_the_default_timeouts_are_bounded() -> None:
    src = S3Source("voices")
    assert 0 < src.connect_timeout <= 30 and 0 < src.read_timeout <= 120


# -- a cache that fills up, or is read-only ------------------------------------------------------
def _can_mount_tmpfs() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        [
            "unshare",
            "--mount",
            "--map-root-user",
            "sh",
            "-c",
            "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d && umount $d && rmdir $d",
        ],
        capture_output=True,
    )
    return probe.returncode == 0


_FETCH = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from engine.sources import CacheWriteError, parse_source
    cache, uri, prefix = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    try:
        folder = parse_source(uri, cache_dir=cache).fetch(prefix)
        error = None
    except CacheWriteError as exc:
        folder, error = None, str(exc)
    files = {
        p.relative_to(cache).as_posix(): p.stat().st_size
        for p in cache.rglob("*") if p.is_file()
    }
    print(json.dumps({"error": error, "folder": str(folder) if folder else None, "files": files}))
    """
)


@pytest.mark.skipif(
    not _can_mount_tmpfs(), reason="needs unshare and a tmpfs mount in a user namespace"
)
def test_a_full_or_read_only_cache_is_a_clear_error_and_nothing_half_written_is_used(
    aws_env: dict, tmp_path: Path
) -> None:
    with moto_server() as endpoint:
        bucket = f"voices-{uuid.uuid4().hex[:12]}"
        client = boto3.client("s3", endpoint_url=endpoint)
        client.create_bucket(Bucket=bucket)
        prefix = "hayakoe/onnx/speakers/big"
        client.put_object(Bucket=bucket, Key=f"{prefix}/config.json", Body=b'{"x": 1}')
        client.put_object(Bucket=bucket, Key=f"{prefix}/synthesizer.onnx", Body=BIG)
        client.put_object(Bucket=bucket, Key="hayakoe/onnx/speakers/other/config.json", Body=b"{}")
        cache = tmp_path / "cache"
        cache.mkdir()
        program = tmp_path / "fetch.py"
        program.write_text(_FETCH)
        fetch = f"{sys.executable} {program} {cache} s3://{bucket}/hayakoe"
        script = f"""
            mount -t tmpfs -o size=1m tmpfs {cache}
            {fetch} onnx/speakers/big
            mount -o remount,size=32m {cache}
            {fetch} onnx/speakers/big
            mount -o remount,ro {cache}
            {fetch} onnx/speakers/big
            {fetch} onnx/speakers/other
        """
        env = dict(os.environ, AWS_ENDPOINT_URL_S3=endpoint, PYTHONPATH=str(REPO_ROOT))
        run = subprocess.run(
            ["unshare", "--mount", "--map-root-user", "sh", "-c", script],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    results = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert len(results) == 4, run.stdout + run.stderr
    full, after, read_only_cached, read_only_new = results

    # Disk full mid-download: a clear error naming the cache; no whole-looking file.
    assert full["error"] is not None
    assert "the disk is full" in full["error"] and str(cache) in full["error"]
    assert "--cache-dir" in full["error"]
    big = [size for name, size in full["files"].items() if name.endswith("/synthesizer.onnx")]
    assert big == [], f"a partial synthesizer.onnx was left under its final name: {full['files']}"
    assert not any("hayakoe_synced" in name for name in full["files"])

    # With room again, the next fetch downloads it whole.
    assert after["error"] is None
    sizes = {Path(k).name: v for k, v in after["files"].items() if "/big/" in k}
    assert sizes["synthesizer.onnx"] == len(BIG) and sizes["config.json"] == 8
    assert not any(".hayakoe-part" in name for name in after["files"])

    # Read-only: the complete copy is still served; a folder never downloaded is a clear error.
    assert read_only_cached["error"] is None and read_only_cached["folder"] == after["folder"]
    assert read_only_new["error"] is not None
    assert (
        "read-only file system" in read_only_new["error"] and str(cache) in read_only_new["error"]
    )


def test_cache_write_error_names_folder_and_reason(tmp_path: Path) -> None:
    import errno

    error = CacheWriteError(errno.ENOSPC, tmp_path, "No space left on device")
    assert isinstance(error, OSError) and error.errno == errno.ENOSPC
    assert str(tmp_path) in str(error) and "the disk is full" in str(error)
    assert not str(error).startswith("[Errno")  # a sentence, not errno noise
