"""A script written against hayakoe 1.3.1's documented API (its README, its quickstart
pages, the docstrings of `Speaker.generate` / `stream_wav` / `astream_wav` and of
`AudioResult`) runs here unchanged but for its import line (`from hayakoe import TTS` →
`from engine import TTS`): `generate` with every documented keyword, `with_timing=True`,
`save` / `to_bytes`, `stream` saving each chunk, `stream_wav` written to one file,
`sampling_rate`, and the async side a FastAPI handler uses (`agenerate`, `astream_wav`,
`astream`). Run on the tests' small voice in hayakoe's own layout (`layout_root`)."""

from __future__ import annotations

import io
import struct
import textwrap
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.audio import UNKNOWN_LENGTH
from tests.helpers.voices import LAYOUT_VOICE

pytest.importorskip("pyworld")

SCRIPT = textwrap.dedent(
    """\
    import asyncio

    from engine import TTS  # hayakoe: from hayakoe import TTS

    tts = TTS(device="cpu", bert_source=ROOT).load(NAME, source=ROOT).prepare()
    speaker = tts.speakers[NAME]

    # README: parameters
    audio = speaker.generate(
        "今日はどんな国に辿り着くのでしょうか。楽しみですね。",
        style="Neutral",
        speed=0.9,
        sdp_ratio=0.2,
        noise=0.6,
        noise_w=0.8,
        pitch_scale=1.1,
        intonation_scale=0.8,
        style_weight=1.0,
    )
    audio.save(OUT / "output.wav")
    response_body = audio.to_bytes()

    # generate(with_timing=True): each phoneme's start and end, for subtitles / lip sync
    timed = speaker.generate("こんにちは。今日はいい天気ですね。", with_timing=True)
    vowels = [t for t in timed.timings if t.phoneme in ("a", "i", "u", "e", "o")]
    for t in timed.timings:
        assert t.end == t.start + t.duration

    # quickstart/streaming: one AudioResult per sentence
    text = "こんにちは。私はイレイナ。旅の魔女です。"
    for i, chunk in enumerate(speaker.stream(text)):
        chunk.save(OUT / f"chunk_{i:02d}.wav")

    # stream_wav: one valid WAV stream, header first, then PCM per sentence
    with open(OUT / "stream.wav", "wb") as f:
        for piece in speaker.stream_wav(text, speed=1.0):
            f.write(piece)
    rate = speaker.sampling_rate

    # the FastAPI handlers: agenerate, astream_wav (StreamingResponse), astream
    async def handlers():
        whole = await speaker.agenerate(text)
        body = b"".join([piece async for piece in speaker.astream_wav(text)])
        sent = [chunk.to_bytes() async for chunk in speaker.astream(text)]
        return whole, body, sent

    whole, body, sent = asyncio.run(handlers())
    """
)


@pytest.fixture(scope="module")
def ran(layout_root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("hayakoe-script")
    names: dict[str, Any] = {"ROOT": str(layout_root), "NAME": LAYOUT_VOICE, "OUT": out}
    exec(compile(SCRIPT, "hayakoe_script.py", "exec"), names)  # noqa: S102 - the script under test
    yield names
    names["tts"].close()


def pcm_of_stream(data: bytes) -> tuple[int, bytes]:
    """(rate, PCM) of a WAV stream of unknown length, its header checked field by field."""
    assert data[:4] == b"RIFF" and data[8:16] == b"WAVEfmt "
    assert struct.unpack("<I", data[4:8])[0] == UNKNOWN_LENGTH
    size, fmt, channels, rate, byte_rate, block, bits = struct.unpack("<IHHIIHH", data[16:36])
    assert (size, fmt, channels, byte_rate, block, bits) == (16, 1, 1, rate * 2, 2, 16)
    assert data[36:40] == b"data" and struct.unpack("<I", data[40:44])[0] == UNKNOWN_LENGTH
    return rate, data[44:]


def test_generate_with_every_documented_keyword_saves_a_wav(ran: dict[str, Any]) -> None:
    audio = ran["audio"]
    assert audio.sr == ran["rate"] == 44100 and audio.duration > 0.5
    assert audio.timings is None  # only when asked
    saved = (ran["OUT"] / "output.wav").read_bytes()
    assert saved == ran["response_body"]
    with wave.open(io.BytesIO(saved)) as r:
        assert (r.getnchannels(), r.getsampwidth(), r.getframerate()) == (1, 2, 44100)
        assert r.readframes(r.getnframes()) == audio.pcm_bytes()


def test_timings_cover_the_audio_to_its_last_frame(ran: dict[str, Any]) -> None:
    timed, hop = ran["timed"], 512
    timings = timed.timings
    assert timings and ran["vowels"]  # the phonemes a lip sync keeps are there
    assert abs(timings[-1].end - timed.duration) <= hop / timed.sr  # within one frame
    assert timings[0].start == 0.0 or timings[0].start < hop / timed.sr
    starts = [t.start for t in timings]
    assert starts == sorted(starts) and all(t.duration >= 0 for t in timings)
    assert all(t.end <= timed.duration + 1e-9 for t in timings)
    names = {t.phoneme for t in timings}
    assert {"_", "k", "o", "N", "."} <= names  # model symbols, blanks and punctuation
    # two sentences: the second's phonemes start after the first's, past the pause
    stops = [i for i, t in enumerate(timings) if t.phoneme == "."]
    assert len(stops) == 2 and timings[stops[0] + 1].start >= timings[stops[0]].end


def test_the_wav_stream_is_one_file_the_length_of_the_chunks(ran: dict[str, Any]) -> None:
    # the script's calls are unseeded (each run samples afresh): lengths, not samples
    out = ran["OUT"]
    chunks = sorted(out.glob("chunk_*.wav"))
    assert len(chunks) >= 3  # one per sentence at least
    frames = 0
    for path in chunks:
        with wave.open(str(path)) as r:
            frames += r.getnframes()
    rate, streamed = pcm_of_stream((out / "stream.wav").read_bytes())
    assert rate == ran["rate"] and len(streamed) % 2 == 0
    assert 0.5 < len(streamed) / 2 / frames < 2.0
    rate, body = pcm_of_stream(ran["body"])
    assert 0.5 < len(body) / 2 / frames < 2.0 and 0.5 < ran["whole"].data.size / frames < 2.0
    assert len(ran["sent"]) >= 3 and all(s[:4] == b"RIFF" for s in ran["sent"])


def test_stream_wav_is_the_header_then_the_stream_sample_for_sample(ran: dict[str, Any]) -> None:
    speaker, text = ran["speaker"], "こんにちは。私はイレイナ。"
    pcm = b"".join(c.pcm_bytes() for c in speaker.stream(text, seed=2))
    rate, streamed = pcm_of_stream(b"".join(speaker.stream_wav(text, seed=2)))
    assert rate == 44100 and streamed == pcm
    assert speaker.generate(text, seed=2, whole_sentences=False).pcm_bytes() == pcm


async def test_astream_wav_is_the_same_bytes(ran: dict[str, Any]) -> None:
    speaker, text = ran["speaker"], "こんにちは。私はイレイナ。"
    sync = b"".join(speaker.stream_wav(text, seed=2))
    assert b"".join([b async for b in speaker.astream_wav(text, seed=2)]) == sync
    pieces = speaker.stream_wav(text, seed=2)
    assert next(pieces)[:4] == b"RIFF"
    pieces.close()  # closed early: the speaker is free again
    assert not speaker.lock.locked()


def test_a_timed_request_is_the_same_audio(ran: dict[str, Any]) -> None:
    speaker = ran["speaker"]
    text = "こんにちは。今日はいい天気ですね。"
    plain = speaker.generate(text, seed=4)
    timed = speaker.generate(text, seed=4, with_timing=True)
    assert np.array_equal(plain.data, timed.data) and plain.timings is None


def test_timings_follow_the_output_options(ran: dict[str, Any]) -> None:
    from engine import OutputOptions

    speaker = ran["speaker"]
    text = "こんにちは。"
    base = speaker.generate(text, seed=4, with_timing=True)
    shaped = speaker.generate(
        text, seed=4, with_timing=True, output=OutputOptions(lead_silence=0.25, sample_rate=16000)
    )
    assert shaped.sr == 16000
    assert shaped.timings is not None and base.timings is not None
    assert shaped.timings[0].start == pytest.approx(base.timings[0].start + 0.25, abs=1e-6)
    assert abs(shaped.timings[-1].end - shaped.duration) <= 512 / 44100


def test_other_languages_are_refused_as_hayakoe_refuses_them(ran: dict[str, Any]) -> None:
    speaker = ran["speaker"]
    with pytest.raises(NotImplementedError, match="Japanese"):
        speaker.generate("hello", lang="EN")
    assert speaker.generate("あ。", lang="JP", batch_bert=False).duration > 0


def test_a_voice_that_cannot_tell_gives_an_empty_list(embedded: Any) -> None:
    audio = embedded.generate("こんにちは。", with_timing=True)
    assert audio.duration > 0 and audio.timings == []
    assert embedded.sampling_rate == embedded.sample_rate == 48000
