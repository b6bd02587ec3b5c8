"""`wyoming-hayakoe say`: the real program, speaking to a WAV file, to stdout, and to a
stand-in ``aplay``, with the voice loaded in-process or asked of a real server on loopback."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import wave
from pathlib import Path

import numpy as np
import pytest
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event, async_read_event, async_write_event

from engine import EMBEDDED_VOICE_NAME, Speaker
from tests.helpers.net import free_port
from tests.helpers.program import Finished, run_program

pytestmark = pytest.mark.timeout(180)

TEXT = "おはようございます。七時になりました。"
RATE = 48000  # the embedded voice's own rate


def read_wav(data: bytes) -> tuple[int, int, int, np.ndarray]:
    """(rate, channels, width, int16 samples) of a whole WAV file."""
    with wave.open(io.BytesIO(data)) as wav:
        frames = wav.readframes(wav.getnframes())
        return (
            wav.getframerate(),
            wav.getnchannels(),
            wav.getsampwidth(),
            np.frombuffer(frames, dtype=np.int16),
        )


def assert_speech(samples: np.ndarray, rate: int) -> None:
    """Non-silent audio of a length plausible for TEXT (about 2.5 s when spoken)."""
    seconds = samples.size / rate
    assert 1.0 < seconds < 8.0, f"{seconds:.2f} s of audio for {TEXT!r}"
    rms = float(np.sqrt(np.mean(samples.astype(np.float64) ** 2)))
    assert rms > 300, f"audio is (nearly) silent: RMS {rms:.1f}"


def assert_one_line_failure(result: Finished, *words: str, code: int = 1) -> None:
    """Exit status `code` and one line on stderr that says `words`."""
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert result.stdout == b""


FAKE_APLAY = """#!{python}
import json, os, socket, sys

record = os.environ["FAKE_APLAY_RECORD"]
with open(record + ".argv", "w") as f:
    json.dump(sys.argv[1:], f)
if os.environ.get("FAKE_APLAY_FAIL"):
    print("ALSA lib confmisc.c:855: cannot find card '0'", file=sys.stderr)
    print(os.environ["FAKE_APLAY_FAIL"], file=sys.stderr)
    sys.exit(1)
data = sys.stdin.buffer.read1(1 << 20)
notify = os.environ.get("FAKE_APLAY_NOTIFY")
if notify:  # tell the test that the first audio arrived (before the rest is sent)
    host, port = notify.split(":")
    with socket.create_connection((host, int(port))) as s:
        s.sendall(str(len(data)).encode())
data += sys.stdin.buffer.read()
with open(record + ".pcm", "wb") as f:
    f.write(data)
"""


@pytest.fixture
def fake_aplay(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An ``aplay`` that records its arguments and every byte it was given, first on PATH:
    (the environment for the program, the record's path prefix)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    player = bin_dir / "aplay"
    player.write_text(FAKE_APLAY.format(python=sys.executable))
    player.chmod(0o755)
    record = tmp_path / "aplay"
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "FAKE_APLAY_RECORD": str(record),
    }
    return env, record


def aplay_format(rate: int) -> list[str]:
    return ["-q", "-t", "raw", "-f", "S16_LE", "-r", str(rate), "-c", "1", "-"]


# -- in-process ----------------------------------------------------------------------------
async def test_say_writes_a_wav_file_with_the_embedded_voice(tmp_path: Path) -> None:
    out = tmp_path / "alarm.wav"
    result = await run_program("say", TEXT, "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and result.stdout == b""  # quiet: cron mails any output
    rate, channels, width, samples = read_wav(out.read_bytes())
    assert (rate, channels, width) == (RATE, 1, 2)
    assert_speech(samples, rate)
    assert [p.name for p in tmp_path.iterdir()] == ["alarm.wav"]  # no temporary file left


async def test_say_reads_stdin_and_writes_the_wav_to_stdout(embedded: Speaker) -> None:
    result = await run_program("say", "-", "-o", "-", stdin=TEXT.encode())
    assert result.returncode == 0, result.stderr
    rate, channels, width, samples = read_wav(result.stdout)
    assert (rate, channels, width) == (RATE, 1, 2)
    assert_speech(samples, rate)
    assert samples.tobytes() == embedded.generate(TEXT).pcm_bytes()  # what the engine makes


async def test_say_speaks_with_a_preset(tmp_path: Path, embedded: Speaker) -> None:
    out = tmp_path / "alarm.wav"
    preset = "alarm=openjtalk-mei:High,volume=2,lead_silence=0.5,output_rate=16000"
    result = await run_program("say", TEXT, "--preset", preset, "-o", str(out))
    assert result.returncode == 0, result.stderr
    rate, _, _, samples = read_wav(out.read_bytes())
    assert rate == 16000
    assert not samples[:8000].any(), "the preset's half second of lead silence is missing"
    plain = embedded.generate(TEXT, style="High")
    assert abs(samples.size / rate - (plain.duration + 0.5)) < 0.05
    assert_speech(samples[8000:], rate)


async def test_say_plays_through_aplay_on_path(
    fake_aplay: tuple[dict[str, str], Path], embedded: Speaker
) -> None:
    env, record = fake_aplay
    result = await run_program("say", TEXT, "--style", "calm", "--play", env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(Path(f"{record}.argv").read_text()) == aplay_format(RATE)
    pcm = Path(f"{record}.pcm").read_bytes()
    assert pcm == embedded.generate(TEXT, style="Calm").pcm_bytes()


@pytest.mark.timeout(600)  # builds the session's small layout root when run alone (~1 min idle)
async def test_say_plays_a_neural_voice_through_the_playback_guard(
    fake_aplay: tuple[dict[str, str], Path], layout_root: Path
) -> None:
    """A neural voice loaded here: warmed up (its speed for the guard), then paced to the
    player; the tests' small random-weight voice at 44.1 kHz."""
    from tests.helpers.voices import LAYOUT_VOICE

    env, record = fake_aplay
    root = str(layout_root)
    voice = ["--voice", f"{LAYOUT_VOICE}={root}", "--bert-source", root, "--offline"]
    result = await run_program("say", TEXT, *voice, "--threads", "1", "--play", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert json.loads(Path(f"{record}.argv").read_text()) == aplay_format(44100)
    samples = np.frombuffer(Path(f"{record}.pcm").read_bytes(), dtype=np.int16)
    seconds = samples.size / 44100
    assert 1.0 < seconds < 8.0, f"{seconds:.2f} s of audio for {TEXT!r}"
    assert float(np.sqrt(np.mean(samples.astype(np.float64) ** 2))) > 30  # random weights


async def test_say_play_without_a_player_fails_clearly(tmp_path: Path) -> None:
    result = await run_program("say", TEXT, "--play", env={"PATH": str(tmp_path)})
    assert_one_line_failure(result, "aplay not found on PATH")


async def test_say_play_without_a_sound_device_fails_clearly(
    fake_aplay: tuple[dict[str, str], Path],
) -> None:
    env, _ = fake_aplay
    error = "aplay: main:850: audio open error: No such file or directory"
    result = await run_program(
        "say", TEXT, "--play", "--audio-device", "hw:7", env={**env, "FAKE_APLAY_FAIL": error}
    )
    assert_one_line_failure(result, "cannot play", "exit status 1", "audio open error")


async def test_say_names_voices_by_the_servers_rule(tmp_path: Path, embedded: Speaker) -> None:
    """Case-insensitive ``VOICE:STYLE`` and presets, as Wyoming and the page take them."""
    out = tmp_path / "calm.wav"
    result = await run_program(
        "say", TEXT, "--voice", f"{EMBEDDED_VOICE_NAME}:CALM", "-o", str(out)
    )
    assert result.returncode == 0, result.stderr
    assert (
        read_wav(out.read_bytes())[3].tobytes() == embedded.generate(TEXT, style="Calm").pcm_bytes()
    )
    low = "alarm=openjtalk-mei:low"  # the preset's style, found case-insensitively
    result = await run_program("say", TEXT, "--preset", low, "--style", "HIGH", "-o", str(out))
    assert result.returncode == 0, result.stderr  # a style apart wins over the preset's
    assert (
        read_wav(out.read_bytes())[3].tobytes() == embedded.generate(TEXT, style="High").pcm_bytes()
    )


@pytest.mark.timeout(600)  # builds the session's AivisHub files when run alone
async def test_say_builds_voices_as_the_server_does(
    aivm_files, layout_root: Path, tmp_path: Path
) -> None:
    """A two-speaker AivisHub file is two voices here as in the server (`voices`), so the
    file's name alone chooses neither: exit 2, listing the speakers' voices and styles."""
    voice = f"duo=file://{aivm_files.multi}"
    result = await run_program(
        "say",
        TEXT,
        *("--voice", voice, "--bert-source", str(layout_root), "--offline", "--threads", "1"),
        *("--cache-dir", str(tmp_path / "cache"), "-o", "-"),
    )
    assert_one_line_failure(
        result, "unknown voice 'duo'; available: duo-alice, ", "duo-bob:Sad", code=2
    )


@pytest.mark.parametrize(
    "args, says",
    [
        (["--voice", f"{EMBEDDED_VOICE_NAME}:Sleepy"], "unknown style 'Sleepy' of voice"),
        (["--style", "Sleepy"], "unknown style 'Sleepy' of voice"),
        (["--preset", "alarm=openjtalk-mei:Sleepy"], "--preset 'alarm': unknown style 'Sleepy'"),
    ],
)
async def test_say_refuses_an_unknown_style_listing_the_styles(
    tmp_path: Path, args: list[str], says: str
) -> None:
    """Unlike the server (which falls back), `say` stops: exit 2, the asked name and what
    exists on one line, nothing written."""
    out = tmp_path / "x.wav"
    result = await run_program("say", TEXT, *args, "-o", str(out))
    assert_one_line_failure(result, says, "available: Neutral, Bright, Calm, High, Low", code=2)
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args, stdin, says",
    [
        (["-o", "-"], b"", "the text is empty"),
        (["x"], b"", "one of the arguments -o/--output --play is required"),
        (["x", "-o", "-", "--server", "tcp://127.0.0.1:9", "--speed", "2"], b"", "--speed"),
        (["x", "-o", "-", "--server", "tcp://127.0.0.1:9", "--preset", "a=b"], b"", "--preset"),
        (
            ["x", "--play", "--server", "tcp://127.0.0.1:9", "--playback-guard", "off"],
            b"",
            "--playback-guard",
        ),
        (["x", "-o", "-", "--server", "http://127.0.0.1:9"], b"", "tcp://HOST:PORT"),
        (["x", "-o", "-", "--preset", "alarm=openjtalk-mei,loud=1"], b"", "unknown key 'loud'"),
        (["x", "-o", "-", "--no-such-flag"], b"", "unrecognized arguments: --no-such-flag"),
        (["x", "-o", "-", "--timeout", "0"], b"", "--timeout must be > 0"),
        (["x", "--audio-device", "hw:0", "-o", "-"], b"", "--audio-device needs --play"),
    ],
)
async def test_say_usage_errors_exit_2(args: list[str], stdin: bytes, says: str) -> None:
    """Each refusal is one line, ``say: error: ...`` (issue 54 finding 15: the README
    promises one line; an empty text or ``--speed`` beside ``--server`` printed 27 lines
    of usage)."""
    result = await run_program("say", *args, stdin=stdin)
    assert_one_line_failure(result, says, code=2)
    assert result.stderr.startswith("say: error: "), result.stderr


# -- via a server --------------------------------------------------------------------------
async def test_say_via_a_server_writes_the_same_wav(
    start_server, tmp_path: Path, embedded: Speaker
) -> None:
    server = await start_server()
    out = tmp_path / "served.wav"
    uri = f"tcp://127.0.0.1:{server.port}"
    result = await run_program(
        "say", TEXT, "--server", uri, "--voice", f"{EMBEDDED_VOICE_NAME}:High", "-o", str(out)
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    rate, channels, width, samples = read_wav(out.read_bytes())
    assert (rate, channels, width) == (RATE, 1, 2)
    assert_speech(samples, rate)
    assert samples.tobytes() == embedded.generate(TEXT, style="High").pcm_bytes()


async def test_say_via_a_server_unknown_voice_lists_the_voices(start_server) -> None:
    server = await start_server()
    uri = f"tcp://127.0.0.1:{server.port}"
    label = f"127.0.0.1:{server.port}"
    result = await run_program("say", TEXT, "--server", uri, "--voice", "nosuch", "-o", "-")
    assert_one_line_failure(
        result,
        f"unknown voice 'nosuch' on {label}; available: {EMBEDDED_VOICE_NAME}, ",
        f"{EMBEDDED_VOICE_NAME}:Calm",
        code=2,
    )
    result = await run_program(
        "say", TEXT, "--server", uri, "--voice", EMBEDDED_VOICE_NAME, "--style", "x", "-o", "-"
    )
    assert_one_line_failure(
        result, "unknown style 'x'", label, "Neutral, Bright, Calm, High, Low", code=2
    )


async def test_say_via_a_server_names_voices_by_the_servers_rule(
    start_server, embedded: Speaker
) -> None:
    server = await start_server()
    uri = f"tcp://127.0.0.1:{server.port}"
    voice = f"{EMBEDDED_VOICE_NAME.upper()}:calm"
    result = await run_program("say", TEXT, "--server", uri, "--voice", voice, "-o", "-")
    assert result.returncode == 0, result.stderr
    assert read_wav(result.stdout)[3].tobytes() == embedded.generate(TEXT, style="Calm").pcm_bytes()


async def test_say_reports_the_servers_error(start_server) -> None:
    server = await start_server(max_text_length=5)
    uri = f"tcp://127.0.0.1:{server.port}"
    result = await run_program("say", TEXT, "--server", uri, "-o", "-")
    assert_one_line_failure(result, f"127.0.0.1:{server.port}", "text too long", "text-too-long")


async def test_say_connection_refused_names_the_address() -> None:
    port = free_port()
    result = await run_program("say", TEXT, "--server", f"tcp://127.0.0.1:{port}", "-o", "-")
    assert_one_line_failure(result, f"cannot connect to 127.0.0.1:{port}", "connection refused")


async def test_say_plays_the_servers_audio_as_it_arrives(
    fake_aplay: tuple[dict[str, str], Path],
) -> None:
    """A stand-in server sends the first chunk and then waits until the player has it: a
    client that waited for the whole audio before playing would never finish."""
    env, record = fake_aplay
    rate = 22050
    first, rest = b"\x01\x02" * 1000, b"\x03\x04" * 3000
    heard: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def on_player(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heard.set_result(int(await reader.read()))
        writer.close()

    def chunk(audio: bytes) -> Event:
        return AudioChunk(rate=rate, width=2, channels=1, audio=audio).event()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await async_read_event(reader)
        assert request is not None and request.type == "synthesize"
        assert request.data["text"] == TEXT
        await async_write_event(AudioStart(rate=rate, width=2, channels=1).event(), writer)
        await async_write_event(
            AudioChunk(rate=rate, width=2, channels=1, audio=first).event(), writer
        )
        await asyncio.wait_for(asyncio.shield(heard), 60)
        await async_write_event(
            AudioChunk(rate=rate, width=2, channels=1, audio=rest).event(), writer
        )
        await async_write_event(AudioStop().event(), writer)
        writer.close()

    player_server = await asyncio.start_server(on_player, "127.0.0.1", 0)
    wyoming_server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    try:
        player_port = player_server.sockets[0].getsockname()[1]
        port = wyoming_server.sockets[0].getsockname()[1]
        result = await run_program(
            "say",
            TEXT,
            "--server",
            f"tcp://127.0.0.1:{port}",
            "--play",
            env={**env, "FAKE_APLAY_NOTIFY": f"127.0.0.1:{player_port}"},
            timeout=90,
        )
    finally:
        player_server.close()
        wyoming_server.close()
    assert result.returncode == 0, result.stderr
    assert heard.result() == len(first)
    assert json.loads(Path(f"{record}.argv").read_text()) == aplay_format(rate)
    assert Path(f"{record}.pcm").read_bytes() == first + rest
