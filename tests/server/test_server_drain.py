"""Graceful shutdown of the real program: on SIGTERM it withdraws from zeroconf, stops
accepting, refuses new requests, lets the ones in flight finish (each with its
``audio-stop``) for up to ``--drain-timeout`` seconds, and exits 0."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop
from zeroconf import IPVersion, ServiceStateChange
from zeroconf.asyncio import AsyncServiceBrowser, AsyncZeroconf

from tests.helpers.net import free_port
from tests.helpers.program import Program
from tests.helpers.waiting import until
from wyoming_hayakoe.zeroconf import SERVICE_TYPE

pytestmark = pytest.mark.timeout(180)

THREE = "こんにちは。今日はいい天気ですね。散歩に行きましょう！"
SPOKEN = THREE * 4  # a few seconds of synthesis on the embedded voice


async def _read_until(client: AsyncTcpClient, end: str) -> list:
    events = []
    while True:
        event = await client.read_event()
        assert event is not None, f"closed before {end}; got {[e.type for e in events]}"
        events.append(event)
        if event.type == end:
            return events


def _pcm(events) -> bytes:
    return b"".join(e.payload or b"" for e in events if e.type == "audio-chunk")


async def test_requests_in_flight_at_sigterm_finish_with_their_audio_stop(embedded) -> None:
    port = free_port()
    name = f"hayakoe-drain-{uuid.uuid4().hex[:8]}"
    full_name = f"{name}.{SERVICE_TYPE}"
    browser_zc = AsyncZeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
    changes: list[tuple[str, ServiceStateChange]] = []
    browser = AsyncServiceBrowser(
        browser_zc.zeroconf,
        SERVICE_TYPE,
        handlers=[
            lambda zeroconf, service_type, name, state_change: changes.append((name, state_change))
        ],
    )
    args = (
        "--uri",
        f"tcp://127.0.0.1:{port}",
        "--drain-timeout",
        "60",
        "--zeroconf",
        name,
        "--zeroconf-interface",
        "127.0.0.1",
    )
    try:
        async with Program(*args) as prog:
            await prog.wait_ready()
            one_shot = AsyncTcpClient("127.0.0.1", port, read_timeout=60)
            stream = AsyncTcpClient("127.0.0.1", port, read_timeout=60)
            idle = AsyncTcpClient("127.0.0.1", port, read_timeout=60)
            for client in (one_shot, stream, idle):
                await client.connect()
            await one_shot.write_event(Synthesize(text=SPOKEN).event())
            await stream.write_event(SynthesizeStart().event())
            await stream.write_event(SynthesizeChunk(text=THREE[:10]).event())
            first = await _read_until(one_shot, "audio-chunk")  # in flight

            prog.proc.send_signal(signal.SIGTERM)
            while not any("Draining" in line for line in prog.lines):
                assert prog.proc.returncode is None, prog.log
                await asyncio.sleep(0.05)
            signalled = time.monotonic()

            # No new connections; a new request on an open connection is refused clearly.
            with pytest.raises(ConnectionRefusedError):
                await AsyncTcpClient("127.0.0.1", port).connect()
            await idle.write_event(Synthesize(text="はい。").event())
            refused = Error.from_event((await _read_until(idle, "error"))[-1])
            assert refused.code == "shutting-down"

            # The stream admitted before the signal goes on: more text, then its stop.
            await stream.write_event(SynthesizeChunk(text=THREE[10:]).event())
            await stream.write_event(SynthesizeStop().event())
            streamed = await _read_until(stream, "synthesize-stopped")
            rest = await _read_until(one_shot, "audio-stop")
            assert prog.proc.returncode is None  # still draining until both were answered
            assert _pcm(first + rest) == embedded.generate(SPOKEN).pcm_bytes()
            types = [e.type for e in streamed]
            assert types.count("audio-start") == 1 and types[-2:] == [
                "audio-stop",
                "synthesize-stopped",
            ]
            assert len(_pcm(streamed)) > 0.5 * len(embedded.generate(THREE).pcm_bytes())
            await until(lambda: (full_name, ServiceStateChange.Removed) in changes, 15)

            code = await asyncio.wait_for(prog.proc.wait(), 30)
            await prog._reader
            assert code == 0
            assert time.monotonic() - signalled < 30
            for client in (one_shot, stream, idle):
                await client.disconnect()
        assert "Drain timeout" not in prog.log and "Stopped" in prog.log
        assert "Traceback" not in prog.log
    finally:
        await browser.async_cancel()
        await browser_zc.async_close()


async def test_a_request_longer_than_the_drain_timeout_is_cut_off_and_the_exit_is_clean() -> None:
    port = free_port()
    async with Program("--uri", f"tcp://127.0.0.1:{port}", "--drain-timeout", "1") as prog:
        await prog.wait_ready()
        client = AsyncTcpClient("127.0.0.1", port, read_timeout=20)
        await client.connect()
        await client.write_event(Synthesize(text=THREE * 140).event())  # minutes of audio
        await _read_until(client, "audio-chunk")
        signalled = time.monotonic()
        assert await prog.stop() == 0
        assert time.monotonic() - signalled < 10
        await client.disconnect()
    assert "Drain timeout (1 s): 1 request(s) still in flight are cut off" in prog.log
    assert "Traceback" not in prog.log
