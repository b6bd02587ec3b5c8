"""The real program, `python -m wyoming_hayakoe` (`wyoming_hayakoe.server` and `__main__`):
serving tcp, unix and stdio, stopping on signals, start-up failures, subcommands dispatched,
the user dictionary reloaded while it serves."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import types

import pytest
from wyoming.client import AsyncTcpClient, AsyncUnixClient
from wyoming.event import Event, async_read_event, async_write_event
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize

from engine import EMBEDDED_VOICE_NAME
from tests.helpers.net import free_port
from tests.helpers.program import Program

pytestmark = pytest.mark.timeout(120)

TOKEN = "hf_TopSecretTokenValue1234567890"


def _expected_pcm(tmp_path, name: str, content: str, text: str) -> bytes:
    """What the engine says for `text` with the dictionary `content` (in this process)."""
    from engine import TTS
    from engine.text import clear_user_dictionary, load_user_dictionary

    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    speaker = TTS().load(EMBEDDED_VOICE_NAME).prepare().speakers[EMBEDDED_VOICE_NAME]
    try:
        load_user_dictionary(path)
        return speaker.generate(text).pcm_bytes()
    finally:
        clear_user_dictionary()


def test_subcommands_are_dispatched(monkeypatch) -> None:
    from wyoming_hayakoe.__main__ import main

    seen: list[list[str]] = []
    fake = types.ModuleType("wyoming_hayakoe.commands.export_bert")
    fake.main = lambda argv: seen.append(argv) or 7  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wyoming_hayakoe.commands.export_bert", fake)
    assert main(["export-bert", "--out", "x"]) == 7
    assert seen == [["--out", "x"]]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_program_serves_tcp_and_stops_cleanly_on_signals(sig) -> None:
    port = free_port()
    async with Program("--uri", f"tcp://127.0.0.1:{port}", "--hf-token", TOKEN, "--debug") as prog:
        await prog.wait_ready()
        async with AsyncTcpClient("127.0.0.1", port, read_timeout=20) as client:
            await client.write_event(Describe().event())
            info = Info.from_event(await client.read_event())
            assert info.tts[0].voices[0].name == EMBEDDED_VOICE_NAME
            await client.write_event(Synthesize(text="はい。").event())
            types_seen = []
            while (event := await client.read_event()).type != "audio-stop":
                types_seen.append(event.type)
            assert types_seen[0] == "audio-start" and "audio-chunk" in types_seen
        assert await prog.stop(sig) == 0
    assert "Stopped" in prog.log
    assert "Traceback" not in prog.log
    assert TOKEN not in prog.log


async def test_program_stops_while_clients_are_mid_synthesis() -> None:
    port = free_port()  # the client stops reading: the drain (test_server_drain.py) times out
    async with Program("--uri", f"tcp://127.0.0.1:{port}", "--drain-timeout", "1") as prog:
        await prog.wait_ready()
        client = AsyncTcpClient("127.0.0.1", port, read_timeout=20)
        await client.connect()
        await client.write_event(Synthesize(text="こんにちは。" * 300).event())
        while (await client.read_event()).type != "audio-chunk":
            pass
        assert await prog.stop() == 0
        await client.disconnect()
    assert "Traceback" not in prog.log


async def test_program_serves_a_unix_socket_and_removes_it(tmp_path) -> None:
    path = tmp_path / "hayakoe.sock"
    async with Program("--uri", f"unix://{path}") as prog:
        await prog.wait_ready()
        assert path.exists()
        async with AsyncUnixClient(str(path), read_timeout=20) as client:
            await client.write_event(Describe().event())
            assert (await client.read_event()).type == "info"
        assert await prog.stop() == 0
    assert not path.exists()


async def test_program_serves_stdio_until_eof() -> None:
    async with Program("--uri", "stdio://", stdio=True) as prog:
        await prog.wait_ready()
        assert prog.proc.stdin is not None and prog.proc.stdout is not None
        await async_write_event(Describe().event(), prog.proc.stdin)
        event = await asyncio.wait_for(async_read_event(prog.proc.stdout), 20)
        assert event is not None and event.type == "info"
        await async_write_event(Synthesize(text="はい。").event(), prog.proc.stdin)
        seen: list[Event] = []
        while (
            event := await asyncio.wait_for(async_read_event(prog.proc.stdout), 20)
        ).type != "audio-stop":
            seen.append(event)
        assert seen[0].type == "audio-start" and seen[-1].payload
        prog.proc.stdin.close()
        assert await asyncio.wait_for(prog.proc.wait(), 15) == 0


async def test_program_start_up_failure_is_one_clear_line(tmp_path) -> None:
    async with Program(
        "--uri",
        f"tcp://127.0.0.1:{free_port()}",
        "--voice",
        f"mine={tmp_path / 'no-such-voice'}",
        "--bert-source",
        str(tmp_path / "no-such-bert"),
    ) as prog:
        code = await asyncio.wait_for(prog.proc.wait(), 60)
        await prog._reader
    assert code == 1
    assert "Traceback" not in prog.log
    assert "no-such-bert" in prog.log or "no-such-voice" in prog.log


async def test_dictionary_edits_take_effect_without_a_restart(tmp_path) -> None:
    """A real file and a real server: an edit that changes the file's mtime is seen before
    the next request; an edit the stat cannot see (same size, inode and mtime) only after
    SIGHUP. A bad line is skipped with a warning naming file and line; the server goes on."""
    text = "蛙です。"
    a = "surface,reading,accent\n蛙,カワズ,0\n"
    b = "surface,reading,accent\n蛙,ハヤコエ,0\nbad line\n"
    c = "surface,reading,accent\n蛙,ケロケロ,0\nbad line\n"  # same size as b
    assert len(b.encode()) == len(c.encode())
    expected = {
        k: _expected_pcm(tmp_path, f"{k}.csv", v.replace("bad line\n", ""), text)
        for k, v in (("a", a), ("b", b), ("c", c))
    }
    assert len(set(expected.values())) == 3, "the three readings must sound different"

    words = tmp_path / "words.csv"
    words.write_text(a, encoding="utf-8")
    port = free_port()

    async def say() -> bytes:
        async with AsyncTcpClient("127.0.0.1", port, read_timeout=30) as client:
            await client.write_event(Synthesize(text=text).event())
            pcm = b""
            while (event := await client.read_event()).type != "audio-stop":
                if event.type == "audio-chunk":
                    pcm += event.payload or b""
            return pcm

    async with Program("--uri", f"tcp://127.0.0.1:{port}", "--user-dict", str(words)) as prog:
        await prog.wait_ready()
        assert await say() == expected["a"]

        words.write_text(b, encoding="utf-8")  # an edit: new mtime (and size)
        st = words.stat()
        os.utime(words, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
        assert await say() == expected["b"]
        assert f"{words}:3: need at least surface,reading" in prog.log

        st = words.stat()
        with words.open("r+b") as f:  # same inode, same size, mtime put back: stat sees nothing
            f.write(c.encode())
        os.utime(words, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert words.stat().st_mtime_ns == st.st_mtime_ns
        assert await say() == expected["b"], "no change visible to the check: no reload"

        loads = prog.log.count("user dictionary: 1 words")
        prog.proc.send_signal(signal.SIGHUP)
        for _ in range(200):
            if prog.log.count("user dictionary: 1 words") > loads:
                break
            await asyncio.sleep(0.05)
        assert await say() == expected["c"]
        assert await prog.stop() == 0
    assert "SIGHUP" in prog.log
    assert "Traceback" not in prog.log
