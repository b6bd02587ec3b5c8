"""`engine.Speaker` on the embedded voice: results, streaming, locks, async."""

from __future__ import annotations

import asyncio
import io
import threading
import time
import wave

import numpy as np
import pytest

from engine import TTS, AudioResult, Speaker
from engine.audio import to_int16
from engine.openjtalk import OpenJTalkVoice, split_long
from tests.helpers.speakers import until_unlocked

THREE = "こんにちは。今日はいい天気ですね。散歩に行きましょう！"


def test_generate_is_int16_at_48k_and_wav_is_valid(embedded: Speaker, tmp_path) -> None:
    audio = embedded.generate("こんにちは。")
    assert audio.sr == 48000 and embedded.sample_rate == 48000
    assert audio.data.dtype == np.int16 and audio.data.ndim == 1
    assert 0.3 < audio.duration < 3.0
    assert np.abs(audio.data.astype(np.int32)).max() > 3000  # not silence
    wav = audio.to_wav_bytes()
    with wave.open(io.BytesIO(wav)) as r:
        assert (r.getnchannels(), r.getsampwidth(), r.getframerate()) == (1, 2, 48000)
        assert r.getnframes() == len(audio.data)
        assert r.readframes(r.getnframes()) == audio.pcm_bytes()
    path = audio.save(tmp_path / "x.wav")
    assert path.read_bytes() == wav


def test_fixed_scale_conversion_clips_without_normalising() -> None:
    assert to_int16(np.array([0.5, 1.5, -2.0, 0.0, np.nan])).tolist() == [
        16384,
        32767,
        -32768,
        0,
        0,
    ]
    quiet = AudioResult.from_float(16000, np.full(10, 0.01))
    assert quiet.data.max() == 328  # a quiet chunk stays quiet
    with pytest.raises(TypeError, match="int16"):
        AudioResult(16000, np.zeros(3, np.float32) + 0.5)


def test_stream_gives_a_chunk_per_sentence_and_equals_generate(embedded: Speaker) -> None:
    chunks = list(embedded.stream(THREE))
    assert len(chunks) >= 3
    assert all(c.sr == 48000 for c in chunks)
    whole = embedded.generate(THREE)
    assert np.array_equal(AudioResult.concat(chunks).data, whole.data)


def test_stream_of_deltas_equals_whole_text(embedded: Speaker) -> None:
    deltas = ["こん", "にちは。今", "日はいい天気で", "すね。散歩に行きま", "しょう！"]
    from_deltas = AudioResult.concat(embedded.stream(iter(deltas)))
    assert np.array_equal(from_deltas.data, embedded.generate(THREE).data)


def test_nothing_to_say_gives_empty_audio(embedded: Speaker) -> None:
    for text in ["", "   \n", "😀🎉", "！？…"]:
        audio = embedded.generate(text)
        assert audio.sr == 48000 and len(audio.data) == 0, text
    assert list(embedded.stream("")) == []


def test_bad_options_are_named(embedded: Speaker) -> None:
    with pytest.raises(TypeError, match="loudness"):
        embedded.generate("あ。", loudness=2)
    with pytest.raises(ValueError, match="Neutral"):
        embedded.generate("あ。", style="Angry")


def test_styles_and_options_change_the_audio(embedded: Speaker) -> None:
    assert embedded.styles[0] == "Neutral" and len(embedded.styles) >= 3
    neutral = embedded.generate("こんにちは。")
    bright = embedded.generate("こんにちは。", style="Bright")
    fast = embedded.generate(THREE, speed=2.0, sentence_silence=0.0)
    assert not np.array_equal(neutral.data, bright.data)
    assert fast.duration < 0.8 * embedded.generate(THREE, sentence_silence=0.0).duration
    long_pause = embedded.generate(THREE, sentence_silence=1.0)
    no_pause = embedded.generate(THREE, sentence_silence=0.0)
    assert long_pause.duration - no_pause.duration == pytest.approx(2.0, abs=0.01)


def test_abandoned_stream_releases_the_lock(embedded: Speaker) -> None:
    gen = embedded.stream(THREE * 3)
    next(gen)
    assert embedded.lock.locked()
    gen.close()
    assert not embedded.lock.locked()
    gen = embedded.stream(THREE * 3)
    next(gen)
    del gen  # dropped without close
    assert not embedded.lock.locked()


def test_same_speaker_is_serial_and_other_speakers_are_not(embedded: Speaker) -> None:
    other = Speaker(OpenJTalkVoice())
    gen = embedded.stream(THREE)
    next(gen)  # holds embedded's lock
    done: dict[str, float] = {}

    def run(name: str, speaker: Speaker) -> None:
        speaker.generate("こんにちは。")
        done[name] = time.monotonic()

    threads = [
        threading.Thread(target=run, args=(n, s)) for n, s in (("same", embedded), ("other", other))
    ]
    for t in threads:
        t.start()
    threads[1].join(timeout=10)
    assert "other" in done  # a different speaker was not blocked
    time.sleep(0.3)
    assert "same" not in done  # the same speaker waits for the open stream
    gen.close()
    threads[0].join(timeout=10)
    assert "same" in done


async def test_agenerate_equals_generate(embedded: Speaker) -> None:
    audio = await embedded.agenerate(THREE, style="Calm")
    assert np.array_equal(audio.data, embedded.generate(THREE, style="Calm").data)


async def test_astream_runs_off_the_loop_and_accepts_async_deltas(embedded: Speaker) -> None:
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            await asyncio.sleep(0.005)
            ticks += 1

    async def deltas():
        for d in ["こんにちは。今日は", "いい天気ですね。", "散歩に行きましょう！"]:
            yield d
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    started = time.monotonic()
    chunks = [c async for c in embedded.astream(deltas())]
    elapsed = time.monotonic() - started
    stop.set()
    await task
    assert np.array_equal(AudioResult.concat(chunks).data, embedded.generate(THREE).data)
    assert ticks > 0.15 * elapsed / 0.005  # the loop kept running during synthesis


async def test_astream_close_and_cancel_release_the_lock(embedded: Speaker) -> None:
    agen = embedded.astream(THREE * 20)
    await agen.__anext__()
    assert embedded.lock.locked()
    await agen.aclose()
    assert not embedded.lock.locked()

    got_one = asyncio.Event()

    async def consume() -> None:
        async for _ in embedded.astream(THREE * 20):
            got_one.set()
            await asyncio.sleep(0.05)

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_one.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The generator was suspended at a yield: asyncio closes it as soon as it is dropped.
    await until_unlocked(embedded)
    assert len((await embedded.agenerate("はい。")).data) > 0  # still usable


async def test_astream_waiting_for_the_lock_can_be_cancelled(embedded: Speaker) -> None:
    gen = embedded.stream(THREE)
    next(gen)  # another user holds the lock
    agen = embedded.astream("こんにちは。")
    task = asyncio.create_task(agen.__anext__())
    await asyncio.sleep(0.2)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await agen.aclose()
    gen.close()
    assert not embedded.lock.locked()


def test_long_sentences_are_cut_for_the_embedded_voice() -> None:
    assert split_long("短い。") == ["短い。"]
    parts = split_long("今日は、" * 60)
    assert all(len(p) <= 120 for p in parts) and "".join(parts) == "今日は、" * 60
    hard = split_long("あ" * 300)
    assert [len(p) for p in hard] == [120, 120, 60]


def test_user_words_change_the_reading(embedded: Speaker, tmp_path) -> None:
    from engine.text import clear_user_dictionary

    text = "蛙が鳴いた。"
    before = embedded.generate(text)
    tts = TTS()
    try:
        tts.add_word(surface="蛙", reading="ハヤコエ", accent=0)
        added = embedded.generate(text)
        clear_user_dictionary()
        path = tmp_path / "words.csv"
        path.write_text("surface,reading,accent\n蛙,ハヤコエ,0\n", encoding="utf-8")
        assert tts.load_user_dictionary(path) == 1
        loaded = embedded.generate(text)
    finally:
        clear_user_dictionary()
    assert not np.array_equal(before.data, added.data)
    assert np.array_equal(added.data, loaded.data)
    assert np.array_equal(embedded.generate(text).data, before.data)


_HELD_AT_EXIT = """
import collections
from engine import TTS, EMBEDDED_VOICE_NAME

speaker = TTS().load(EMBEDDED_VOICE_NAME).prepare().speakers[EMBEDDED_VOICE_NAME]
assert speaker.generate("こんにちは。").duration > 0.3
held = [speaker]
held.append(held)  # a reference cycle, kept by a module freed late (as a server's state is)
collections._held = held
print("spoke")
"""


def test_a_voice_still_held_at_exit_leaves_quietly(tmp_path) -> None:
    """The HTS engine of a voice that lives until the interpreter's last garbage collection
    is freed at exit, while the interpreter is whole: no "Error in sys.excepthook" (which
    an engine freed that late printed after every test of the web page)."""
    import subprocess
    import sys

    from tests.helpers.paths import REPO_ROOT

    done = subprocess.run(
        [sys.executable, "-c", _HELD_AT_EXIT],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "spoke"
    assert "Error in sys.excepthook" not in done.stderr, done.stderr


@pytest.mark.parametrize(("quiet", "early"), [(0.25, True), (None, False)])
async def test_a_finished_sentence_is_spoken_when_the_deltas_stop(
    embedded: Speaker, quiet: float | None, early: bool
) -> None:
    """A sentence whose end closes a delta is spoken once no delta came for `quiet` seconds,
    not held until the next delta (an LLM calling a tool); None: it waits for it."""
    heard = asyncio.Event()
    came_early: list[bool] = []

    async def deltas():  # type: ignore[no-untyped-def]
        yield "こんにちは。"
        try:  # the next sentence only once audio came (or it is clear none will)
            await asyncio.wait_for(heard.wait(), 60 if early else 0.5)
            came_early.append(True)
        except asyncio.TimeoutError:
            came_early.append(False)
        yield "今日はいい天気ですね。"

    chunks = []
    async for chunk in embedded.astream(deltas(), guard=False, quiet=quiet):
        chunks.append(chunk)
        heard.set()
    assert came_early == [early]
    alone = embedded.generate("こんにちは。")
    assert np.array_equal(AudioResult.concat(chunks).data[: alone.data.size], alone.data)
    assert sum(c.duration for c in chunks) > alone.duration + 1.0  # and the second sentence


def test_what_a_voice_runs_is_declared_and_read_as_declared() -> None:
    """`Voice.run_info` and `Voice.default_style` are read as the voice declares them: the
    embedded voice has no choice of arithmetic; a voice that runs int8 on OpenVINO says so,
    and its speed is learnt apart from its fp32 speed."""
    from engine.voice_backend import RunInfo

    class Declaring(OpenJTalkVoice):
        default_style = "Calm"

        def run_info(self) -> RunInfo:
            return RunInfo("int8", "openvino", "int8 on OpenVINO", "gate passed")

    plain = Speaker(OpenJTalkVoice())
    assert (plain.run_info, plain.precision, plain.runtime, plain.runs) == (None, None, None, None)
    assert plain.default_style == "Neutral"
    declaring = Speaker(Declaring())
    assert declaring.run_info == RunInfo("int8", "openvino", "int8 on OpenVINO", "gate passed")
    assert (declaring.precision, declaring.runtime) == ("int8", "openvino")
    assert (declaring.runs, declaring.precision_reason) == ("int8 on OpenVINO", "gate passed")
    assert declaring.default_style == "Calm"
    assert declaring._speed_key() == "int8/openvino"


def test_a_voice_declares_its_identity() -> None:
    """`Voice.identity` is read as the voice declares it: the embedded voice has no file of
    its own (None); a voice from an AivisHub file names it, its speaker and style IDs."""
    from engine.voice_backend import VoiceIdentity

    declared = VoiceIdentity("/v/a.aivmx", True, "e756b8e4-0000", {"Calm": 3}, "ACML", ("A",))

    class Declaring(OpenJTalkVoice):
        def identity(self) -> VoiceIdentity:
            return declared

    assert Speaker(OpenJTalkVoice()).identity is None
    assert Speaker(Declaring()).identity == declared
