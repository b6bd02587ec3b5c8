"""`wyoming_hayakoe.apis.openai_voices` and the kana writer on their own: which voice an
OpenAI name speaks with, the flag's parsing, the SSE end event's usage, the AudioQuery's kana
read back by the kana parser, and a whole FLAC's length."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from engine.text.accents import AccentPhrase, accent_phrases
from wyoming_hayakoe.apis.audio_formats import Encoder, encode_all
from wyoming_hayakoe.apis.kana import parse_kana, phrases_kana
from wyoming_hayakoe.apis.openai_voices import (
    OPENAI_VOICE_NAMES,
    OpenAIVoiceError,
    done_event,
    openai_voice,
    parse_openai_voice,
    voice_entries,
)
from wyoming_hayakoe.resolve import PresetTarget, VoiceNames
from wyoming_hayakoe.settings import parse_settings


class Served:
    def __init__(self, names: VoiceNames, default_voice: str) -> None:
        self._names, self.default_voice = names, default_voice

    def names(self) -> VoiceNames:
        return self._names


SERVED = Served(
    VoiceNames({"mei": ("Neutral", "High"), "Nova": ("Normal",)}, {"calm": PresetTarget("mei")}),
    "mei",
)


def test_openai_names_speak_with_the_assigned_voice_else_the_default():
    assigned = {"alloy": "mei:High"}
    assert openai_voice(SERVED, assigned, "alloy") == "mei:High"
    assert openai_voice(SERVED, assigned, " Alloy ") == "mei:High"
    assert openai_voice(SERVED, assigned, "cedar") == "mei"
    assert openai_voice(SERVED, {"narrator": "calm"}, "narrator") == "calm"
    assert len(OPENAI_VOICE_NAMES) == 13 and "marin" in OPENAI_VOICE_NAMES


def test_a_served_name_wins_and_other_names_are_left_alone():
    assert openai_voice(SERVED, {"nova": "mei:High"}, "nova") is None  # the voice Nova
    assert openai_voice(SERVED, {}, "mei:High") is None
    assert openai_voice(SERVED, {}, "calm") is None
    assert openai_voice(SERVED, {}, "nobody") is None


def test_the_flag_is_name_equals_voice_repeatable_last_wins(capsys):
    s = parse_settings(
        [
            "--engine-api-port",
            "0",
            "--openai-voice",
            "Alloy=mei:High",
            "--openai-voice",
            "echo = calm",
            "--openai-voice",
            "alloy=mei",
        ]
    )
    assert s.engine_api is not None
    assert s.engine_api.openai_voices == (("alloy", "mei"), ("echo", "calm"))
    assert s.engine_api.openai_voice_table("x")["ash"] == "x"
    for bad in ("alloy", "=mei", "alloy="):
        with pytest.raises(OpenAIVoiceError, match="NAME=VOICE"):
            parse_openai_voice(bad)
    for argv, said in (
        (["--engine-api-port", "0", "--openai-voice", "alloy"], "NAME=VOICE"),
        (["--openai-voice", "alloy=mei"], "needs --engine-api-port"),
    ):
        with pytest.raises(SystemExit):
            parse_settings(argv)
        assert said in capsys.readouterr().err


def test_voice_entries_are_open_webui_objects():
    entries = [e.json() for e in voice_entries(SERVED.names())]
    assert entries[0] == {"id": "mei", "name": "mei"}
    assert {"id": "mei:High", "name": "mei (High)"} in entries
    assert entries[-1] == {"id": "calm", "name": "calm (preset: mei)"}


def test_done_event_carries_openai_usage():
    line = done_event("こんにちは。", 24000 * 2 + 1, 24000)
    assert line.startswith(b"data: ") and line.endswith(b"\n\n")
    event = json.loads(line[6:])
    assert event["type"] == "speech.audio.done"
    assert event["usage"] == {"input_tokens": 6, "output_tokens": 101, "total_tokens": 107}
    assert json.loads(done_event("a", 0, 24000)[6:])["usage"]["output_tokens"] == 0


@pytest.mark.parametrize(
    "text", ["こんにちは、元気ですか？", "今日は良い天気です。明日も晴れるでしょう。", "東京"]
)
def test_query_kana_reads_back_into_the_same_phrases(text):
    phrases = accent_phrases(text)
    kana = phrases_kana(phrases)
    assert "'" in kana and parse_kana(kana) == [
        AccentPhrase(p.morae, p.accent, p.pause_after and i < len(phrases) - 1, p.question)
        for i, p in enumerate(phrases)
    ]


def test_kana_is_written_as_voicevox_writes_it():
    phrases = [
        AccentPhrase(("コ", "ン", "ニ", "チ", "ワ"), 5, pause_after=True),
        AccentPhrase(("ゲ", "ン", "キ", "デ", "ス", "カ"), 1, question=True),
    ]
    assert phrases_kana(phrases) == "コンニチワ'、ゲ'ンキデスカ？"
    flat = [AccentPhrase(("ア", "メ"), 1), AccentPhrase(("ガ",), 1), AccentPhrase(("フ", "ル"), 2)]
    assert phrases_kana(flat, ends={1}) == "ア'メ/ガ'、フル'"


def _streaminfo_samples(data: bytes) -> int:
    assert data[:4] == b"fLaC" and data[4] & 0x7F == 0  # STREAMINFO first
    return int.from_bytes(data[18:26], "big") & ((1 << 36) - 1)


def test_a_whole_flac_carries_its_length_a_streamed_one_says_unknown():
    pcm = (np.sin(np.arange(36_001) / 7) * 9000).astype(np.int16)
    assert _streaminfo_samples(encode_all(pcm, 24000, "flac")) == 36_001
    streamed = Encoder("flac", 24000)
    data = streamed.push(pcm) + streamed.finish()
    assert _streaminfo_samples(data) == 0
    import av

    with av.open(io.BytesIO(data)) as container:
        assert sum(f.samples for f in container.decode(audio=0)) == 36_001
