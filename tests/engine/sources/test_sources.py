"""Source URIs, the registry, local sources, the cache root, completeness checks, redaction."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from engine.layout import OFFICIAL_SOURCE
from engine.sources import (
    HFSource,
    IncompleteSourceError,
    LocalSource,
    RedactingFilter,
    S3Source,
    Source,
    SourceNotFoundError,
    cache_root,
    normalize_prefix,
    parse_source,
    redact,
    register_scheme,
    require_files,
    supported_schemes,
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "HAYAKOE_CACHE",
        "HF_ENDPOINT",
        "AWS_ENDPOINT_URL_S3",
        "AWS_ENDPOINT_URL",
        "HF_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


# -- parse_source ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "uri, repo_id, revision, subdir, repo_type",
    [
        ("hf://lemondouble/hayakoe", "lemondouble/hayakoe", None, "", "model"),
        ("hf://user/repo@v1.2", "user/repo", "v1.2", "", "model"),
        ("hf://user/repo/voices/mine@refs/pr/3", "user/repo", "refs/pr/3", "voices/mine", "model"),
        ("hf://datasets/user/data", "user/data", None, "", "dataset"),
        ("https://huggingface.co/user/repo", "user/repo", None, "", "model"),
        ("https://huggingface.co/user/repo/tree/dev", "user/repo", "dev", "", "model"),
        (
            "https://huggingface.co/user/repo/tree/refs%2Fpr%2F1/sub/dir",
            "user/repo",
            "refs/pr/1",
            "sub/dir",
            "model",
        ),
        ("https://hf.co/user/repo/", "user/repo", None, "", "model"),
    ],
)
def test_hub_uris(
    uri: str, repo_id: str, revision: str | None, subdir: str, repo_type: str
) -> None:
    src = parse_source(uri)
    assert isinstance(src, HFSource)
    assert (src.repo_id, src.revision, src.subdir, src.repo_type) == (
        repo_id,
        revision,
        subdir,
        repo_type,
    )
    assert src.is_local is False
    assert isinstance(src, Source)
    # The canonical URI parses back to the same source.
    again = parse_source(src.uri)
    assert (again.repo_id, again.revision, again.subdir, again.repo_type) == (
        repo_id,
        revision,
        subdir,
        repo_type,
    )


def test_s3_uri_and_cache_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = parse_source("s3://company-voices/hayakoe/v2/", cache_dir=tmp_path)
    assert isinstance(src, S3Source)
    assert (src.bucket, src.prefix, src.uri) == (
        "company-voices",
        "hayakoe/v2",
        "s3://company-voices/hayakoe/v2",
    )
    assert src.cache_path == tmp_path / "s3" / "aws" / "company-voices" / "hayakoe" / "v2"
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://minio.local:9000")
    other = parse_source("s3://company-voices", cache_dir=tmp_path)
    # A different store gets a different folder, so same-named buckets never mix.
    assert other.cache_path == tmp_path / "s3" / "minio.local_9000" / "company-voices"
    assert other.endpoint_url == "http://minio.local:9000"


def test_s3_generic_endpoint_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://acc.r2.cloudflarestorage.com")
    assert (
        parse_source("s3://b/p", cache_dir=tmp_path).endpoint_url
        == "https://acc.r2.cloudflarestorage.com"
    )
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000")
    assert parse_source("s3://b/p", cache_dir=tmp_path).endpoint_url == "http://127.0.0.1:9000"


def test_local_uris(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "voices" / "onnx").mkdir(parents=True)
    by_file_uri = parse_source(f"file://{tmp_path}/voices")
    by_path = parse_source(str(tmp_path / "voices"))
    by_pathlike = parse_source(tmp_path / "voices")
    monkeypatch.chdir(tmp_path)
    by_relative = parse_source("voices")
    for src in (by_file_uri, by_path, by_pathlike, by_relative):
        assert isinstance(src, LocalSource)
        assert src.is_local is True
        assert src.root == tmp_path / "voices"
        assert src.fetch("onnx") == tmp_path / "voices" / "onnx"
    # file://localhost/... is a local path too; percent-escapes are decoded.
    (tmp_path / "a b").mkdir()
    assert parse_source(f"file://localhost{tmp_path}/a%20b").root == tmp_path / "a b"


def test_relative_path_is_fixed_at_parse_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "v").mkdir()
    monkeypatch.chdir(tmp_path)
    src = parse_source("v")
    monkeypatch.chdir("/")
    assert src.fetch("") == tmp_path / "v"


@pytest.mark.parametrize("uri", ["gs://bucket/x", "ftp://host/x", "azure://c/x", "sftp://h/p"])
def test_unsupported_scheme_lists_supported(uri: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_source(uri)
    message = str(info.value)
    assert uri.split("://")[0] in message
    for listed in ("hf://", "s3://", "file://", "https://huggingface.co/"):
        assert listed in message


@pytest.mark.parametrize(
    "uri, needle",
    [
        ("https://example.com/user/repo", "Hugging Face"),
        ("hf://justonepart", "owner/repo"),
        ("hf://user/repo@", "revision"),
        ("https://huggingface.co/user/repo/blob/main/x", "tree"),
        ("s3://", "bucket"),
        ("file://otherhost/x", "local"),
        ("", "empty"),
    ],
)
def test_malformed_uris(uri: str, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        parse_source(uri)


def test_register_scheme_plugs_in_a_new_store(tmp_path: Path) -> None:
    calls = []

    class MemorySource(Source):  # declared a Source: inherits the default fetch_file
        is_local = False

        def __init__(self, uri: str) -> None:
            self.uri = uri

        def fetch(self, prefix: str) -> Path:
            return tmp_path / prefix

        def exists(self, prefix: str) -> bool:
            return True

        def upload(self, prefix: str, local_dir: Path) -> None:
            pass

    def factory(
        uri: str, *, cache_dir: object = None, token: str | None = None, offline: bool = False
    ) -> MemorySource:
        calls.append((uri, cache_dir, token, offline))
        return MemorySource(uri)

    register_scheme("memtest", factory)
    try:
        assert "memtest" in supported_schemes()
        src = parse_source("memtest://x/y", cache_dir="/c", token="t0ken")
        assert isinstance(src, MemorySource) and isinstance(src, Source)
        parse_source("memtest://x/z", offline=True)
        assert calls == [
            ("memtest://x/y", "/c", "t0ken", False),
            ("memtest://x/z", None, None, True),
        ]
        with pytest.raises(ValueError, match="already registered"):
            register_scheme("memtest", factory)
        with pytest.raises(ValueError, match="memtest://"):
            parse_source("gs://x")  # the error lists the new scheme too
    finally:
        from engine import sources

        sources._registry.pop("memtest", None)


def test_official_repo_is_hayakoe() -> None:
    src = parse_source(OFFICIAL_SOURCE)
    assert isinstance(src, HFSource)
    assert src.repo_id == "lemondouble/hayakoe"


def test_parsing_imports_no_network_library() -> None:
    import subprocess

    code = (
        "import sys; from engine.sources import parse_source;"
        "parse_source('hf://a/b'); parse_source('s3://b/p'); parse_source('/x');"
        "print(sorted(m for m in ('boto3', 'botocore', 'torch', 'onnxruntime') if m in "
        "sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- prefixes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prefix, expected",
    [
        ("", ""),
        ("/", ""),
        ("onnx/speakers/a/", "onnx/speakers/a"),
        ("./a//b", "a/b"),
        ("a\\b", "a/b"),
    ],
)
def test_normalize_prefix(prefix: str, expected: str) -> None:
    assert normalize_prefix(prefix) == expected


@pytest.mark.parametrize("prefix", ["../x", "a/../../b", "/etc/passwd"])
def test_normalize_prefix_refuses_escapes(prefix: str) -> None:
    with pytest.raises(ValueError):
        normalize_prefix(prefix)


# -- LocalSource -------------------------------------------------------------------------


def test_local_fetch_is_in_place_and_missing_is_clear(tmp_path: Path) -> None:
    (tmp_path / "onnx" / "speakers" / "a").mkdir(parents=True)
    (tmp_path / "onnx" / "speakers" / "a" / "config.json").write_text("{}")
    src = LocalSource(tmp_path)
    assert src.fetch("onnx/speakers/a") == tmp_path / "onnx" / "speakers" / "a"
    assert src.exists("onnx/speakers/a") and src.exists("onnx/speakers/a/config.json")
    assert not src.exists("onnx/speakers/b")
    with pytest.raises(SourceNotFoundError) as info:
        src.fetch("onnx/speakers/b")
    assert isinstance(info.value, FileNotFoundError)
    assert str(tmp_path) in str(info.value) and "onnx/speakers/b" in str(info.value)
    with pytest.raises(SourceNotFoundError):
        src.fetch("onnx/speakers/a/config.json")  # a file, not a folder


def test_local_repo_like_path_hints_at_hf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SourceNotFoundError, match="hf://someone/voices"):
        parse_source("someone/voices").fetch("onnx/speakers/x")


def test_local_upload_copies_files(tmp_path: Path) -> None:
    src_dir = tmp_path / "in"
    (src_dir / "sub").mkdir(parents=True)
    (src_dir / "config.json").write_text("{}")
    (src_dir / "sub" / "w.bin").write_bytes(b"12345")
    (src_dir / ".hayakoe_synced").write_text("{}")
    dest = LocalSource(tmp_path / "store")
    dest.upload("voices/x", src_dir)
    out = dest.fetch("voices/x")
    assert (out / "config.json").read_text() == "{}"
    assert (out / "sub" / "w.bin").read_bytes() == b"12345"
    assert not (out / ".hayakoe_synced").exists()
    assert not list(out.rglob("*.part"))


# -- cache root --------------------------------------------------------------------------


def test_cache_root_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cache_root() == tmp_path / "xdg" / "hayakoe"
    monkeypatch.setenv("HAYAKOE_CACHE", str(tmp_path / "env"))
    assert cache_root() == tmp_path / "env"
    assert cache_root(tmp_path / "explicit") == tmp_path / "explicit"
    monkeypatch.chdir(tmp_path)
    assert cache_root("rel") == tmp_path / "rel"
    monkeypatch.delenv("HAYAKOE_CACHE")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_root() == Path.home() / ".cache" / "hayakoe"


def test_sources_share_the_cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAYAKOE_CACHE", str(tmp_path / "c"))
    assert parse_source("hf://a/b").cache_dir == tmp_path / "c" / "hf"
    assert parse_source("s3://bkt/p").cache_path == tmp_path / "c" / "s3" / "aws" / "bkt" / "p"


# -- require_files -----------------------------------------------------------------------


def test_require_files_names_uri_and_every_missing_file(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "style_vectors.npy").write_bytes(b"")  # empty = broken copy
    with pytest.raises(IncompleteSourceError) as info:
        require_files(
            tmp_path,
            [
                "config.json",
                "style_vectors.npy",
                ("synthesizer.onnx", "synthesizer_q8.onnx"),
                "*.safetensors",
            ],
            "s3://bucket/voices",
            "onnx/speakers/x",
        )
    err = info.value
    assert isinstance(err, FileNotFoundError)
    text = str(err)
    assert "s3://bucket/voices/onnx/speakers/x" in text
    assert "style_vectors.npy" in text and "synthesizer.onnx or synthesizer_q8.onnx" in text
    assert "*.safetensors" in text and "config.json," not in text
    assert err.missing == [
        "style_vectors.npy",
        "synthesizer.onnx or synthesizer_q8.onnx",
        "*.safetensors",
    ]


def test_require_files_accepts_alternatives_and_globs(tmp_path: Path) -> None:
    names = [
        "config.json",
        "style_vectors.npy",
        ("synthesizer.onnx", "synthesizer_q8.onnx"),
        "*.safetensors",
    ]
    present = ("config.json", "style_vectors.npy", "synthesizer_q8.onnx", "v_e10_s100.safetensors")
    for name in present:
        (tmp_path / name).write_bytes(b"x")
    # One alternative and one glob match are enough: nothing is reported missing.
    assert require_files(tmp_path, names, "file:///x") is None
    # Each entry is really checked: without the file that satisfied it, exactly it is named.
    expected = {
        "synthesizer_q8.onnx": "synthesizer.onnx or synthesizer_q8.onnx",
        "v_e10_s100.safetensors": "*.safetensors",
    }
    for name, entry in expected.items():
        (tmp_path / name).rename(tmp_path / f"{name}.away")
        with pytest.raises(IncompleteSourceError) as info:
            require_files(tmp_path, names, "file:///x")
        assert info.value.missing == [entry]
        (tmp_path / f"{name}.away").rename(tmp_path / name)


# -- redaction ---------------------------------------------------------------------------

SECRET = "hf_SuperSecretTokenValue1234567890"


@pytest.mark.parametrize(
    "text",
    [
        f"https://user:{SECRET}@huggingface.co/a/b",
        f"https://huggingface.co/a/b?token={SECRET}&x=1",
        f"Authorization: Bearer {SECRET}",
        f"token {SECRET}",
        f"plain {SECRET} text",
    ],
)
def test_redact(text: str) -> None:
    out = redact(text)
    assert SECRET not in out and "***" in out


def test_redact_env_and_registered_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzKEY")
    assert "wJalrXUtnFEMI" not in redact("secret=... wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzKEY ...")
    parse_source("hf://a/b", token="my-own-token-xyz")
    assert redact("the token my-own-token-xyz leaked") == "the token *** leaked"
    assert redact("AKIAIOSFODNN7EXAMPLE") == "***"


def test_uri_attribute_and_errors_never_hold_secrets() -> None:
    with pytest.raises(ValueError) as info:
        parse_source(f"https://x:{SECRET}@huggingface.co/a/b")
    assert SECRET not in str(info.value)
    with pytest.raises(ValueError) as info:
        parse_source(f"hf://a/b?token={SECRET}")
    assert SECRET not in str(info.value)
    with pytest.raises(ValueError) as info:
        parse_source(f"gs://k:{SECRET}@bucket/x")
    assert SECRET not in str(info.value)
    src = parse_source("hf://a/b@main", token=SECRET)
    assert SECRET not in src.uri and SECRET not in repr(src)


def test_redacting_filter_scrubs_other_libraries_records(caplog: pytest.LogCaptureFixture) -> None:
    handler_records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            handler_records.append(self.format(record))

    handler = Collect()
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("some.http.library")
    logger.addHandler(handler)
    try:
        logger.warning("GET %s", f"https://huggingface.co/api?token={SECRET}")
        try:
            raise RuntimeError(f"failed with Bearer {SECRET}")
        except RuntimeError:
            logger.exception("boom")
    finally:
        logger.removeHandler(handler)
    joined = "\n".join(handler_records)
    assert "boom" in joined and "RuntimeError" in joined
    assert SECRET not in joined
