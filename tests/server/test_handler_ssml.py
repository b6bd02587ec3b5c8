"""SSML over a real Wyoming connection: a break is exact silence, one-shot and streaming.

The embedded voice ``openjtalk-mei`` ends and starts its audio with a few samples of digital
silence (its trimmed margins). A break must add exactly its length in zero samples between
them: the run of zeros at the break equals the break plus those margins, measured from the
parts spoken alone.
"""

from __future__ import annotations

import numpy as np
import pytest
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop

pytestmark = pytest.mark.timeout(120)

BEFORE = "おはようございます。"
AFTER = "今日は晴れです。"


def _samples(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, dtype="<i2")


def _zero_runs(a: np.ndarray) -> list[tuple[int, int]]:
    """(start, length) of every run of exact zeros."""
    z = np.concatenate([[0], (a == 0).astype(np.int8), [0]])
    d = np.diff(z)
    starts, ends = np.where(d == 1)[0], np.where(d == -1)[0]
    return [(int(s), int(e - s)) for s, e in zip(starts, ends, strict=True)]


def _edges(embedded) -> int:
    """Zero samples the voice itself puts around the break: BEFORE's tail + AFTER's head."""
    tail = _samples(embedded.generate(BEFORE).pcm_bytes())
    head = _samples(embedded.generate(AFTER).pcm_bytes())
    n_tail = len(tail) - len(np.trim_zeros(tail, "b"))
    n_head = len(head) - len(np.trim_zeros(head, "f"))
    return n_tail + n_head


def _break_run(pcm: bytes, expected: int) -> int:
    """The longest zero run (the break) — and there is exactly one that long."""
    runs = sorted((n for _, n in _zero_runs(_samples(pcm))), reverse=True)
    assert runs and (len(runs) == 1 or runs[1] < expected // 2), runs[:3]
    return runs[0]


@pytest.mark.parametrize(("time", "seconds"), [("500ms", 0.5), ("1.25s", 1.25)])
async def test_one_shot_break_is_exact_silence(
    start_server, wy, embedded, time: str, seconds: float
) -> None:
    server = await start_server()
    text = f'<speak>{BEFORE}<break time="{time}"/>{AFTER}</speak>'
    async with wy.client(server) as client:
        await client.write_event(Synthesize(text=text).event())
        events = await wy.read_until(client, "audio-stop")
    pcm = wy.pcm(events)
    n = round(seconds * embedded.sample_rate)
    assert _break_run(pcm, n) == n + _edges(embedded)
    # the speech around it is what the voice says for each part alone
    before = embedded.generate(BEFORE).pcm_bytes()
    after = embedded.generate(AFTER).pcm_bytes()
    assert pcm == before + bytes(2 * n) + after


async def test_streaming_break_split_across_chunks_is_exact_silence(
    start_server, wy, embedded
) -> None:
    server = await start_server()
    deltas = [
        "<speak>おはようござ",
        "います。<bre",
        'ak time="75',
        '0ms"/>今日は',
        "晴れです。</sp",
        "eak>",
    ]
    async with wy.client(server) as client:
        await client.write_event(SynthesizeStart().event())
        for delta in deltas:
            await client.write_event(SynthesizeChunk(text=delta).event())
        await client.write_event(Synthesize(text="".join(deltas)).event())  # compatibility copy
        await client.write_event(SynthesizeStop().event())
        events = await wy.read_until(client, "synthesize-stopped")
    types = wy.types(events)
    assert types.count("audio-start") == 1 and types.count("audio-stop") == 1
    pcm = wy.pcm(events)
    n = round(0.75 * embedded.sample_rate)
    assert _break_run(pcm, n) == n + _edges(embedded)
    assert "speak" not in "".join(str(e.data) for e in events if e.type == "error")


async def test_prosody_rate_is_the_speed(start_server, wy, embedded) -> None:
    server = await start_server()
    async with wy.client(server) as client:
        await client.write_event(
            Synthesize(text=f'<speak><prosody rate="200%">{AFTER}</prosody></speak>').event()
        )
        events = await wy.read_until(client, "audio-stop")
    fast = wy.pcm(events)
    assert fast == embedded.generate(AFTER, speed=2.0).pcm_bytes()
    assert len(fast) < 0.85 * len(embedded.generate(AFTER).pcm_bytes())  # HTS: not quite 1/2


async def test_malformed_ssml_is_spoken_not_refused(start_server, wy, embedded, caplog) -> None:
    server = await start_server()
    async with wy.client(server) as client:
        await client.write_event(Synthesize(text=f"<speak>{AFTER}<break time='1s'>").event())
        events = await wy.read_until(client, "audio-stop")
        assert "error" not in wy.types(events)
        # and the server goes on
        await client.write_event(Synthesize(text=AFTER).event())
        again = await wy.read_until(client, "audio-stop")
    assert wy.pcm(events) == embedded.generate(AFTER).pcm_bytes()
    assert wy.pcm(again) == embedded.generate(AFTER).pcm_bytes()
    assert "malformed" in caplog.text
