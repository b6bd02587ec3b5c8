"""End to end: a hayakoe-layout root in S3 (moto on loopback) → `TTS().load(name,
source="s3://...").prepare()` → speech; then the same with the store gone and no credentials,
from the cache filled by the first run or by `pre_download`."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("onnx")
boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto.server")

from engine import TTS
from tests.helpers.net import closed_endpoint
from tests.helpers.stores import isolate_aws, moto_server
from tests.helpers.voices import LAYOUT_VOICE

pytestmark = pytest.mark.slow

VOICE = LAYOUT_VOICE
TEXT = "こんにちは。今日はいい天気ですね。"


@pytest.fixture
def store(layout_root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    isolate_aws(monkeypatch, tmp_path)
    with moto_server() as endpoint:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)
        bucket = f"voices-{uuid.uuid4().hex[:10]}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=bucket)
        from engine.sources import parse_source

        parse_source(f"s3://{bucket}/hayakoe", cache_dir=tmp_path / "upload-cache").upload(
            "", layout_root
        )
        yield f"s3://{bucket}/hayakoe"


def _speak(uri: str, cache: Path) -> np.ndarray:
    tts = TTS(device="cpu", cache_dir=cache, bert_source=uri).load(VOICE, source=uri).prepare()
    audio = tts.speakers[VOICE].generate(TEXT, seed=1)
    return np.asarray(audio.data)


def _go_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")


def test_load_and_speak_with_s3_then_offline(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "cache"
    first = _speak(store, cache)
    assert first.dtype == np.int16 and first.size > 1000 and np.abs(first).max() > 0
    s3_cache = next((cache / "s3").iterdir())
    fetched = sorted(
        p.relative_to(s3_cache).as_posix()
        for p in s3_cache.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    )
    # Only what the CPU backend reads came down: no PyTorch files.
    assert fetched and not [p for p in fetched if "/pytorch/" in p]
    assert any(p.endswith("onnx/bert/q8/bert_q8.onnx") for p in fetched)
    assert any(p.endswith(f"onnx/speakers/{VOICE}/synthesizer.onnx") for p in fetched)

    _go_offline(monkeypatch)
    with caplog.at_level(logging.INFO, logger="engine.sources.s3"):
        again = _speak(store, cache)
    assert "using the cached copy" in caplog.text
    assert np.array_equal(again, first)  # same seed, same files: the same samples


def test_pre_download_then_prepare_offline(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    tts = TTS(device="cpu", cache_dir=cache, bert_source=store).load(VOICE, source=store)
    tts.pre_download()
    assert not tts.speakers  # nothing was built
    _go_offline(monkeypatch)
    audio = _speak(store, cache)
    assert audio.size > 1000 and np.abs(audio).max() > 0


def test_plain_model_folder_in_s3_is_found(store: str, layout_root: Path, tmp_path: Path) -> None:
    """A plain Style-Bert-VITS2 folder at the root of a remote source is a voice too."""
    from engine.neural.loader import locate_voice
    from engine.sources import parse_source

    plain_uri = store.rsplit("/", 1)[0] + "/plain-voice"
    plain_dir = layout_root / "pytorch" / "speakers" / VOICE
    parse_source(plain_uri, cache_dir=tmp_path / "upload-cache").upload("", plain_dir)
    src = parse_source(plain_uri, cache_dir=tmp_path / "cache")
    found = locate_voice("anything", src, "cpu")
    assert found.kind == "pytorch"
    assert (found.directory / "config.json").is_file()
    assert list(found.directory.glob("*.safetensors"))


def test_unreachable_store_is_not_reported_as_a_missing_voice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    from engine.neural.loader import locate_voice
    from engine.sources import SourceUnavailableError, parse_source

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret-key")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", closed_endpoint())
    src = parse_source("s3://nowhere-bucket/voices", cache_dir=tmp_path / "cache")
    with pytest.raises(SourceUnavailableError) as err:
        locate_voice(VOICE, src, "cpu")
    assert "s3://nowhere-bucket/voices" in str(err.value)
