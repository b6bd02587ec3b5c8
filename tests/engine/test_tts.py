"""`engine.TTS` and the package `engine`: importing is light, registration rules, a missing
voice named, `pre_download` of the embedded voice and its delegation."""

from __future__ import annotations

import subprocess
import sys

import pytest

from engine import EMBEDDED_VOICE_NAME, TTS

THREE = "こんにちは。今日はいい天気ですね。散歩に行きましょう！"


def test_import_is_light() -> None:
    code = (
        "import sys, engine, wyoming_hayakoe.settings, wyoming_hayakoe.handler;"
        "print(sorted(m for m in ('torch','onnxruntime','pyopenjtalk','transformers') if m in "
        "sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_tts_registration_rules() -> None:
    tts = TTS()
    assert tts.load(EMBEDDED_VOICE_NAME) is tts
    assert tts.speakers == {}  # load only registers
    with pytest.raises(ValueError, match="embedded"):
        TTS().load(EMBEDDED_VOICE_NAME, source="hf://x/y")
    with pytest.raises(ValueError, match="non-empty"):
        TTS().load("  ")
    tts.prepare()
    speaker = tts.speakers[EMBEDDED_VOICE_NAME]
    assert tts.prepare().speakers[EMBEDDED_VOICE_NAME] is speaker  # prepare is idempotent
    assert "hf_" not in repr(TTS(hf_token="hf_secretsecretsecret"))


def test_a_missing_neural_voice_fails_naming_what_is_missing(tmp_path) -> None:
    tts = TTS(bert_source=str(tmp_path / "no-such-bert")).load(
        "mine", source=str(tmp_path / "no-such-voice")
    )
    with pytest.raises(Exception) as info:
        tts.prepare()
    assert "no-such-bert" in str(info.value) or "no-such-voice" in str(info.value)
    assert tts.speakers == {}


def test_pre_download_of_the_embedded_voice_fetches_nothing() -> None:
    assert TTS().load(EMBEDDED_VOICE_NAME).pre_download() == []


def test_pre_download_delegates_voices_and_options(monkeypatch, tmp_path) -> None:
    import engine.download

    calls = []
    monkeypatch.setattr(
        engine.download, "pre_download", lambda voices, **kw: calls.append((voices, kw)) or ["x"]
    )
    tts = TTS("cpu", cache_dir=tmp_path, bert_source="hf://me/bert", hf_token="hf_tok_tok_tok")
    tts.load(EMBEDDED_VOICE_NAME).load("a").load("b", source="s3://bucket/v")
    assert tts.pre_download(device="cuda") == ["x"]
    assert calls == [
        (
            [("a", "hf://lemondouble/hayakoe"), ("b", "s3://bucket/v")],
            {
                "device": "cuda",
                "cache_dir": tmp_path,
                "bert_source": "hf://me/bert",
                "token": "hf_tok_tok_tok",
                "offline": False,
            },
        )
    ]
