"""The command line → one frozen `Settings` (`wyoming_hayakoe.settings`): defaults, engine
options from flags over the environment, the token never shown, bad flags named, `--version`,
the user dictionary flag reaching the engine."""

from __future__ import annotations

import pytest

from engine import EMBEDDED_VOICE_NAME, EngineOptions, __version__
from wyoming_hayakoe.settings import Settings, VoiceSpec, parse_settings

pytestmark = pytest.mark.timeout(120)

TOKEN = "hf_TopSecretTokenValue1234567890"


# -- flags → settings ------------------------------------------------------------------------
def test_defaults() -> None:
    s = parse_settings([], environ={})
    assert s.uri == "tcp://0.0.0.0:10200"
    assert s.voices == (VoiceSpec(EMBEDDED_VOICE_NAME),) and s.default_voice == EMBEDDED_VOICE_NAME
    assert s.samples_per_chunk == 1024 and s.streaming and s.rewrite and s.zeroconf_name is None
    assert s.synthesis.as_options() == {} and s.hf_token is None
    assert s.use_compile is False
    assert s.max_queue == 10 and s.drain_timeout == 10.0


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--device", "cuda"], True),
        (["--device", "cuda:1"], True),
        (["--device", "cuda", "--no-compile"], False),
        (["--device", "cpu", "--compile"], True),
        ([], False),
    ],
)
def test_compile_follows_the_device_unless_told(argv, expected) -> None:
    assert parse_settings(argv, environ={}).use_compile is expected


def test_voices_defaults_and_options() -> None:
    s = parse_settings(
        [
            "--voice",
            "a",
            "--voice",
            "b=hf://me/voices",
            "--voice",
            "a",
            "--default-voice",
            "c",
            "--default-style",
            "Happy",
            "--speed",
            "1.2",
            "--sentence-silence",
            "0",
            "--pitch-scale",
            "1.1",
            "--samples-per-chunk",
            "512",
            "--no-streaming",
            "--no-rewrite",
            "--zeroconf",
            "--device",
            "cuda",
            "--cache-dir",
            "/tmp/c",
            "--max-text-length",
            "500",
            "--max-queue",
            "0",
            "--drain-timeout",
            "2.5",
        ],
        environ={},
    )
    assert s.voices == (VoiceSpec("a"), VoiceSpec("b", "hf://me/voices"), VoiceSpec("c"))
    assert s.default_voice == "c" and s.default_style == "Happy"
    assert s.synthesis.as_options() == {"speed": 1.2, "sentence_silence": 0.0, "pitch_scale": 1.1}
    assert s.samples_per_chunk == 512 and not s.streaming and not s.rewrite
    assert s.zeroconf_name == "hayakoe" and s.device == "cuda" and str(s.cache_dir) == "/tmp/c"
    assert s.max_text_length == 500 and s.max_queue == 0 and s.drain_timeout == 2.5
    assert (
        parse_settings(["--voice", "x", "--zeroconf", "kitchen"], environ={}).zeroconf_name
        == "kitchen"
    )
    assert parse_settings(["--voice", "x", "--voice", "y"], environ={}).default_voice == "x"


def test_engine_options_come_from_flags_over_the_environment() -> None:
    # The server's defaults are the library's, but int8 is made behind the requests.
    server_defaults = EngineOptions(quantize_in_background=True)
    assert parse_settings([], environ={}).engine == server_defaults
    env = {
        "WYOMING_HAYAKOE_THREADS": "3",
        "WYOMING_HAYAKOE_FIRST_WINDOW": "0",
        "WYOMING_HAYAKOE_CONV2D": "1",
        "WYOMING_HAYAKOE_RELEASE_MEMORY": "0",
        "HAYAKOE_OFFLINE": "1",
    }
    from_env = EngineOptions(
        threads=3,
        first_window=0,
        conv2d=True,
        release_memory=False,
        offline=True,
        quantize_in_background=True,
    )
    assert parse_settings([], environ=env).engine == from_env
    flags = [
        "--threads",
        "2",
        "--first-window",
        "12",
        "--no-conv2d",
        "--release-memory",
        "--no-offline",
    ]
    assert parse_settings(flags, environ=env).engine == EngineOptions(
        threads=2, first_window=12, quantize_in_background=True
    )
    # A malformed variable is ignored (with a warning), a malformed flag is refused.
    assert parse_settings([], environ={"WYOMING_HAYAKOE_THREADS": "many"}).engine.threads is None


def test_token_comes_from_the_environment_and_never_shows() -> None:
    s = parse_settings([], environ={"HF_TOKEN": TOKEN})
    assert s.hf_token == TOKEN and TOKEN not in repr(s)
    assert (
        parse_settings(["--hf-token", "hf_other_token_here"], environ={"HF_TOKEN": TOKEN}).hf_token
        == "hf_other_token_here"
    )


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--uri", "http://localhost:1"], "--uri"),
        (["--uri", "tcp://localhost"], "--uri"),
        (["--uri", "unix://", "--zeroconf"], "--uri"),
        (["--uri", "unix:///tmp/x.sock", "--zeroconf"], "--zeroconf"),
        (["--speed", "0"], "--speed"),
        (["--samples-per-chunk", "-1"], "--samples-per-chunk"),
        (["--max-queue", "-1"], "--max-queue"),
        (["--max-queue", "two"], "--max-queue"),
        (["--drain-timeout", "-3"], "--drain-timeout"),
        (["--threads", "0"], "--threads"),
        (["--first-window", "-1"], "--first-window"),
        (["--voice", f"{EMBEDDED_VOICE_NAME}=hf://x/y"], "--voice"),
        (["--voice", "=hf://x/y"], "--voice"),
        (["--voice", "a=hf://x", "--voice", "a=hf://y"], "--voice"),
    ],
)
def test_bad_flags_are_named(argv, flag, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_settings(argv, environ={})
    assert exc.value.code == 2
    assert flag in capsys.readouterr().err


# -- the real program --------------------------------------------------------------------------


def test_version_flag(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_settings(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == __version__


def test_settings_are_a_frozen_dataclass() -> None:
    s = Settings()
    from dataclasses import FrozenInstanceError

    with pytest.raises(FrozenInstanceError):
        s.uri = "tcp://x:1"  # type: ignore[misc]


def test_user_dictionary_flag_reaches_the_engine(tmp_path) -> None:
    import numpy as np

    from engine.text import clear_user_dictionary
    from wyoming_hayakoe.voices import build_speakers

    path = tmp_path / "words.json"
    path.write_text(
        '{"words": [{"surface": "蛙", "reading": "ハヤコエ", "accent": 0}]}', encoding="utf-8"
    )
    plain = build_speakers(parse_settings(["--no-warmup"], environ={}))[
        EMBEDDED_VOICE_NAME
    ].generate("蛙。")
    try:
        speakers = build_speakers(
            parse_settings(["--user-dict", str(path), "--no-warmup"], environ={})
        )
        taught = speakers[EMBEDDED_VOICE_NAME].generate("蛙。")
    finally:
        clear_user_dictionary()
    assert not np.array_equal(plain.data, taught.data)
