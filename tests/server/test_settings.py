"""The command line: flags → settings, and the real program (tcp, unix, stdio, signals)."""

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

from engine import EMBEDDED_VOICE_NAME, EngineOptions, __version__
from tests.helpers.net import free_port
from tests.helpers.program import Program
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
    assert parse_settings([], environ={}).engine == EngineOptions()
    env = {
        "WYOMING_HAYAKOE_THREADS": "3",
        "WYOMING_HAYAKOE_FIRST_WINDOW": "0",
        "WYOMING_HAYAKOE_CONV2D": "1",
        "WYOMING_HAYAKOE_RELEASE_MEMORY": "0",
        "HAYAKOE_OFFLINE": "1",
    }
    from_env = EngineOptions(
        threads=3, first_window=0, conv2d=True, release_memory=False, offline=True
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
    assert parse_settings(flags, environ=env).engine == EngineOptions(threads=2, first_window=12)
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


def test_subcommands_are_dispatched(monkeypatch) -> None:
    from wyoming_hayakoe.__main__ import main

    seen: list[list[str]] = []
    fake = types.ModuleType("wyoming_hayakoe.commands.export_bert")
    fake.main = lambda argv: seen.append(argv) or 7  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wyoming_hayakoe.commands.export_bert", fake)
    assert main(["export-bert", "--out", "x"]) == 7
    assert seen == [["--out", "x"]]


# -- the real program --------------------------------------------------------------------------


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
    port = free_port()  # the client stops reading: the drain (test_drain.py) times out
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
