"""The Wyoming server, in-process on a loopback port, driven by the wyoming library's client."""

from __future__ import annotations

import asyncio
import logging
import time

import numpy as np
import pytest
from wyoming.audio import AudioStart
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from engine import EMBEDDED_VOICE_NAME, AudioResult

pytestmark = pytest.mark.timeout(120)

THREE = "こんにちは。今日はいい天気ですね。散歩に行きましょう！"
MEI = EMBEDDED_VOICE_NAME


async def _describe(wy, server) -> Info:
    async with wy.client(server) as client:
        await client.write_event(Describe().event())
        events = await wy.read_until(client, "info")
    return Info.from_event(events[-1])


async def _synthesize(wy, server, text: str, voice: SynthesizeVoice | None = None):
    async with wy.client(server) as client:
        await client.write_event(Synthesize(text=text, voice=voice).event())
        events = await wy.read_until(client, "audio-stop")
        assert await wy.quiet(client) is None  # nothing after audio-stop
    return events


async def test_describe_lists_each_voice_and_each_style(start_server, wy, embedded) -> None:
    info = await _describe(wy, await start_server())
    assert len(info.tts) == 1
    program = info.tts[0]
    assert program.installed and program.supports_synthesize_streaming
    assert program.attribution.name and program.version and program.description
    names = [v.name for v in program.voices]
    assert names == [MEI] + [f"{MEI}:{s}" for s in embedded.styles]
    for voice in program.voices:
        assert voice.languages == ["ja"]
        assert voice.installed and voice.version and voice.description
        assert voice.attribution.name and voice.attribution.url
    base = program.voices[0]
    assert [s.name for s in base.speakers] == embedded.styles


async def test_no_streaming_is_advertised_as_such(start_server, wy) -> None:
    info = await _describe(wy, await start_server(streaming=False))
    assert info.tts[0].supports_synthesize_streaming is False


async def test_one_shot_gives_one_start_the_audio_and_one_stop(start_server, wy, embedded) -> None:
    server = await start_server(samples_per_chunk=1000)
    events = await _synthesize(wy, server, THREE)
    types = wy.types(events)
    assert types[0] == "audio-start" and types[-1] == "audio-stop"
    assert types.count("audio-start") == 1 and types.count("audio-stop") == 1
    assert set(types[1:-1]) == {"audio-chunk"}
    start = AudioStart.from_event(events[0])
    assert (start.rate, start.width, start.channels) == (48000, 2, 1)
    assert all(len(e.payload) <= 2000 for e in events[1:-1])
    assert sum(len(e.payload) == 2000 for e in events[1:-1]) >= len(events) - 5
    # Bit-exact with the engine: the server adds nothing and loses nothing.
    assert wy.pcm(events) == embedded.generate(THREE).pcm_bytes()


async def test_voice_style_and_speaker_select_the_style(start_server, wy, embedded) -> None:
    server = await start_server()
    calm = embedded.generate("こんにちは。", style="Calm").pcm_bytes()
    by_name = await _synthesize(wy, server, "こんにちは。", SynthesizeVoice(name=f"{MEI}:Calm"))
    by_speaker = await _synthesize(
        wy, server, "こんにちは。", SynthesizeVoice(name=MEI, speaker="Calm")
    )
    assert wy.pcm(by_name) == calm and wy.pcm(by_speaker) == calm
    default = await _synthesize(wy, server, "こんにちは。")
    assert wy.pcm(default) == embedded.generate("こんにちは。").pcm_bytes()


async def test_default_style_and_synthesis_defaults_apply(start_server, wy, embedded) -> None:
    from wyoming_hayakoe.settings import SynthesisDefaults

    server = await start_server(default_style="Bright", synthesis=SynthesisDefaults.of(speed=1.3))
    events = await _synthesize(wy, server, "こんにちは。")
    assert (
        wy.pcm(events) == embedded.generate("こんにちは。", style="Bright", speed=1.3).pcm_bytes()
    )


async def test_unknown_voice_or_style_falls_back_with_a_warning(
    start_server, wy, embedded, caplog
) -> None:
    server = await start_server()
    expected = embedded.generate("こんにちは。").pcm_bytes()
    with caplog.at_level(logging.WARNING, logger="wyoming_hayakoe"):
        unknown_voice = await _synthesize(
            wy, server, "こんにちは。", SynthesizeVoice(name="jvnv-F9-jp")
        )
        unknown_style = await _synthesize(
            wy, server, "こんにちは。", SynthesizeVoice(name=f"{MEI}:Angry")
        )
        unknown_speaker = await _synthesize(
            wy, server, "こんにちは。", SynthesizeVoice(name=MEI, speaker="Sad")
        )
    assert wy.pcm(unknown_voice) == wy.pcm(unknown_style) == wy.pcm(unknown_speaker) == expected
    text = caplog.text
    assert "Unknown voice 'jvnv-F9-jp'" in text and f"{MEI}:Bright" in text  # what exists
    assert f"using {MEI}" in text
    assert f"Unknown style 'Angry' of voice {MEI}" in text and "Sad" in text and "Calm" in text


async def test_voice_names_are_case_insensitive_styles_and_presets_included(
    start_server, wy, embedded, caplog
) -> None:
    """The rule (`wyoming_hayakoe.resolve`) over Wyoming: every spelling below is the same
    choice as the exact one, without a warning."""
    from wyoming_hayakoe.presets import parse_presets

    server = await start_server(presets=parse_presets([f"alarm={MEI}:High"]))
    calm = embedded.generate("こんにちは。", style="Calm").pcm_bytes()
    high = embedded.generate("こんにちは。", style="High").pcm_bytes()
    low = embedded.generate("こんにちは。", style="Low").pcm_bytes()
    with caplog.at_level(logging.WARNING, logger="wyoming_hayakoe"):
        for voice, expected in [
            (SynthesizeVoice(name=f"{MEI.upper()}:calm"), calm),
            (SynthesizeVoice(name=MEI.upper(), speaker="CALM"), calm),
            (SynthesizeVoice(name=f"{MEI}:High", speaker="calm"), calm),  # speaker wins
            (SynthesizeVoice(name="ALARM"), high),
            (SynthesizeVoice(name="alarm", speaker="low"), low),
        ]:
            events = await _synthesize(wy, server, "こんにちは。", voice)
            assert wy.pcm(events) == expected, voice
    assert caplog.records == []


async def test_streaming_speaks_each_sentence_as_it_completes(start_server, wy, embedded) -> None:
    server = await start_server()
    async with wy.client(server) as client:
        await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name=MEI)).event())
        for delta in ["こんに", "ちは。", "今日は"]:  # sentence 1 complete, sentence 2 begun
            await client.write_event(SynthesizeChunk(text=delta).event())
        early = await wy.read_until(client, "audio-chunk")  # before sentence 3 exists
        assert wy.types(early) == ["audio-start", "audio-chunk"]
        for delta in ["いい天気", "ですね。散歩に", "行きましょう！"]:
            await client.write_event(SynthesizeChunk(text=delta).event())
        await client.write_event(Synthesize(text=THREE).event())  # compatibility copy: ignored
        await client.write_event(SynthesizeStop().event())
        rest = await wy.read_until(client, "synthesize-stopped")
        assert await wy.quiet(client) is None
    events = early + rest
    types = wy.types(events)
    assert types.count("audio-start") == 1 and types.count("audio-stop") == 1
    assert types[-2:] == ["audio-stop", "synthesize-stopped"]
    assert all(
        (e.data["rate"], e.data["width"], e.data["channels"]) == (48000, 2, 1)
        for e in events
        if e.type in ("audio-start", "audio-chunk")
    )
    assert wy.pcm(events) == embedded.generate(THREE).pcm_bytes()  # said once, nothing lost


async def test_streaming_first_audio_arrives_while_text_is_still_coming(start_server, wy) -> None:
    server = await start_server()
    async with wy.client(server) as client:
        await client.write_event(SynthesizeStart().event())
        await client.write_event(SynthesizeChunk(text="はい、わかりました。それでは").event())
        sent = time.monotonic()
        events = await wy.read_until(client, "audio-chunk")
        assert time.monotonic() - sent < 2.0
        assert "synthesize-stopped" not in wy.types(events)
        await client.write_event(SynthesizeChunk(text="始めます。").event())
        await client.write_event(SynthesizeStop().event())
        events += await wy.read_until(client, "synthesize-stopped")
    assert len(wy.pcm(events)) > 48000  # both sentences


async def test_a_sentence_ending_a_chunk_is_spoken_while_the_client_pauses(
    start_server, wy, embedded
) -> None:
    """Home Assistant's order with an LLM that calls a tool after its first sentence: the
    sentence closes a chunk and the next chunk comes only later. Its audio comes during the
    pause (after `stream_quiet`), not with the next chunk; a closing quote that comes late
    is dropped, the quotative と then begins the next sentence."""
    server = await start_server()
    async with wy.client(server) as client:
        await client.write_event(SynthesizeStart().event())
        await client.write_event(SynthesizeChunk(text="「はい。").event())
        # no further chunk until audio came: a server waiting for one never answers
        early = await wy.read_until(client, "audio-chunk")
        assert wy.types(early) == ["audio-start", "audio-chunk"]
        await client.write_event(SynthesizeChunk(text="」と言った。").event())
        await client.write_event(SynthesizeStop().event())
        events = early + await wy.read_until(client, "synthesize-stopped")
    first = embedded.generate("「はい。").pcm_bytes()
    pcm = wy.pcm(events)
    assert pcm[: len(first)] == first and len(pcm) > len(first) + 48000  # then と言った


async def test_with_stream_quiet_0_a_finished_sentence_waits_for_the_next_chunk(
    start_server, wy, embedded
) -> None:
    server = await start_server(stream_quiet=0.0)
    async with wy.client(server) as client:
        await client.write_event(SynthesizeStart().event())
        await client.write_event(SynthesizeChunk(text="「はい。").event())
        assert await wy.quiet(client, 1.0) is None  # held: a closing quote could follow
        await client.write_event(SynthesizeChunk(text="」と言った。").event())
        await client.write_event(SynthesizeStop().event())
        events = await wy.read_until(client, "synthesize-stopped")
    assert wy.pcm(events) == embedded.generate("「はい。」と言った。").pcm_bytes()


async def test_empty_and_unspeakable_text_gives_empty_audio(start_server, wy, caplog) -> None:
    """Audio that starts and stops, no empty chunk, and a WARNING (not "Spoke ...")."""
    server = await start_server()
    with caplog.at_level(logging.INFO, logger="wyoming_hayakoe"):
        for text in ["", "   ", "😀🎉✨", "！？"]:
            events = await _synthesize(wy, server, text)
            assert wy.types(events) == ["audio-start", "audio-stop"], text
        async with wy.client(server) as client:
            await client.write_event(SynthesizeStart().event())
            await client.write_event(SynthesizeChunk(text="🙂").event())
            await client.write_event(SynthesizeStop().event())
            events = await wy.read_until(client, "synthesize-stopped")
    assert wy.types(events) == ["audio-start", "audio-stop", "synthesize-stopped"]
    warned = [r for r in caplog.records if "Nothing to say" in r.getMessage()]
    assert len(warned) == 5 and all(r.levelno == logging.WARNING for r in warned)
    assert not any(
        "Spoke" in r.getMessage() or "Streamed" in r.getMessage() for r in caplog.records
    )


async def test_a_bad_request_gets_an_error_and_the_connection_stays_usable(
    start_server, wy, embedded
) -> None:
    from wyoming.event import Event

    server = await start_server(max_text_length=50)
    async with wy.client(server) as client:
        for bad in (
            Event(type="synthesize", data={}),
            Event(type="synthesize", data={"text": 42}),
            Event(type="synthesize", data={"text": "はい。", "voice": "mei"}),
            Synthesize(text="あ" * 51).event(),
        ):
            await client.write_event(bad)
            reply = await wy.read_until(client, "error")
            assert len(reply) == 1 and reply[0].data["text"]
        await client.write_event(Event(type="not-a-real-event", data={"x": 1}))  # ignored
        await client.write_event(Synthesize(text="はい。").event())
        events = await wy.read_until(client, "audio-stop")
        assert wy.pcm(events) == embedded.generate("はい。").pcm_bytes()
        await client.write_event(Describe().event())
        assert (await wy.read_until(client, "info"))[-1].type == "info"


async def test_a_too_long_stream_is_refused_and_ends_cleanly(start_server, wy) -> None:
    server = await start_server(max_text_length=30)
    async with wy.client(server) as client:
        await client.write_event(SynthesizeStart().event())
        await client.write_event(SynthesizeChunk(text="はい。" * 5).event())
        await client.write_event(SynthesizeChunk(text="いいえ。" * 10).event())
        await client.write_event(SynthesizeStop().event())
        events = await wy.read_until(client, "synthesize-stopped")
        types = wy.types(events)
        assert "error" in types and events[types.index("error")].data["code"] == "text-too-long"
        assert types.count("audio-stop") <= 1
        await client.write_event(Synthesize(text="はい。").event())
        assert (await wy.read_until(client, "audio-stop"))[-1].type == "audio-stop"


async def test_stray_stream_events_do_not_hang_the_client(start_server, wy) -> None:
    server = await start_server()
    async with wy.client(server) as client:
        await client.write_event(SynthesizeChunk(text="はい。").event())  # no start: an error
        chunk_error = await wy.read_until(client, "error")
        assert chunk_error[-1].data["code"] == "no-stream" and len(chunk_error) == 1
        assert "synthesize-start" in chunk_error[-1].data["text"]
        await client.write_event(SynthesizeStop().event())  # an error, then the stop's answer
        stop = await wy.read_until(client, "synthesize-stopped")
        assert wy.types(stop) == ["error", "synthesize-stopped"]
        assert stop[0].data["code"] == "no-stream"
        await client.write_event(SynthesizeStart().event())
        await client.write_event(SynthesizeStart().event())  # second start: error, first goes on
        assert wy.types(await wy.read_until(client, "error")) == ["error"]
        await client.write_event(SynthesizeChunk(text="はい。").event())
        await client.write_event(SynthesizeStop().event())
        events = await wy.read_until(client, "synthesize-stopped")
        assert len(wy.pcm(events)) > 0


@pytest.mark.slow
async def test_describe_is_fast_while_other_clients_synthesize(start_server, wy) -> None:
    server = await start_server()
    long_text = THREE * 40
    started = asyncio.Event()

    async def busy() -> None:
        async with wy.client(server) as client:
            await client.write_event(Synthesize(text=long_text).event())
            await wy.read_until(client, "audio-chunk")
            started.set()
            await asyncio.sleep(3.0)  # keep synthesizing (bounded by what we read)
            while (event := await client.read_event()) is not None and event.type != "audio-stop":
                pass

    async def streaming() -> None:
        async with wy.client(server) as client:
            await client.write_event(SynthesizeStart().event())
            for _ in range(40):
                await client.write_event(SynthesizeChunk(text=THREE).event())
            await client.write_event(SynthesizeStop().event())
            await wy.read_until(client, "synthesize-stopped")

    workers = [asyncio.create_task(busy()), asyncio.create_task(streaming())]
    await asyncio.wait_for(started.wait(), 10)
    latencies = []
    for _ in range(5):
        t0 = time.monotonic()
        await _describe(wy, server)
        latencies.append(time.monotonic() - t0)
        await asyncio.sleep(0.1)
    for task in workers:
        task.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
    assert max(latencies) < 1.0, latencies


async def test_two_connections_stream_in_order_without_mixing(start_server, wy, embedded) -> None:
    server = await start_server()
    texts = ["こんにちは。今日はいい天気ですね。", "さようなら。また明日会いましょう。"]
    results = await asyncio.gather(*(_synthesize(wy, server, t) for t in texts))
    for text, events in zip(texts, results):
        assert wy.pcm(events) == embedded.generate(text).pcm_bytes()


def test_audio_result_helpers_match_server_pcm() -> None:
    audio = AudioResult(16000, np.array([1, -2, 3], dtype=np.int16))
    assert audio.pcm_bytes() == b"\x01\x00\xfe\xff\x03\x00"
