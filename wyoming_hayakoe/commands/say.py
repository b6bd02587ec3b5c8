"""`wyoming-hayakoe say TEXT`: speak once, to a WAV file, to stdout or to the sound card.

    wyoming-hayakoe say "おはようございます。" --play                  # embedded voice
    echo "七時です。" | wyoming-hayakoe say --voice jvnv-F1-jp --style Happy -o alarm.wav
    wyoming-hayakoe say "起きて" --preset alarm=openjtalk-mei:High,volume=6dB --play
    wyoming-hayakoe say "起きて" --server tcp://speaker.local:10200 --voice alarm --play

Either the command loads the voice itself (the server's voice, engine, synthesis and output
flags, parsed by `wyoming_hayakoe.settings`/`presets`, the voices built by the server's
`wyoming_hayakoe.voices`, so a voice speaks here exactly as the server would make it speak
for a one-shot request), or it asks a running server
(``--server``): the project's Wyoming client (`wyoming_hayakoe.client`) sends one
``synthesize``, and the command writes or plays the
audio as it arrives (the server's options and presets are its own there; ``--voice`` names
any voice it serves, ``VOICE:STYLE`` or a preset).

``--play`` pipes raw PCM to ALSA's ``aplay`` (found on PATH) chunk by chunk, so playback
starts with the first audio; ``-o FILE`` writes the WAV as the audio arrives (to a temporary
file renamed at the end: an alarm never finds half a file); ``-o -`` writes the WAV to
stdout once it is complete (a WAV header holds its length and a pipe cannot be rewound).

Voice names follow the server's rule (`wyoming_hayakoe.resolve`: case-insensitive,
``VOICE:STYLE``, presets), checked against the voice loaded here or the server's
``describe``; unlike the server, which speaks an unknown name with its default voice,
``say`` refuses it.

Exit status, for cron jobs and systemd timers: 0 when the audio was written or played, 2 for
bad arguments (argparse's own), no text, or a voice, style or preset that names nothing (one
line on stderr: the asked name and the available ones), 1 for anything else, with one line
on stderr naming what failed (the server that refused the connection, the player that is
missing or could not open a sound device).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import io
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import wave
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO, NoReturn, Protocol

from wyoming.info import Info

from engine import EMBEDDED_VOICE_NAME
from engine.sources.redact import redact

from ..admission import Admission
from ..client import AddressError, ClientError, ServerAddress, WyomingClient
from ..errors import HayakoeError
from ..logs import setup_logging
from ..presets import PresetError
from ..resolve import STYLE_SEPARATOR, UnknownNameError, VoiceNames, resolve_name
from ..speech import SpeechError, SpeechRequest, SpeechService, TooLarge, UnknownVoice
from .errors import UsageError

_LOGGER = logging.getLogger(__name__)

PROG = "wyoming-hayakoe say"
PLAYER = "aplay"
"""The ALSA player `--play` runs (alsa-utils)."""
DEFAULT_TIMEOUT_S = 120.0
EXIT_STATUS = {
    0: "done",
    1: "failed (one line on stderr says what)",
    2: "bad arguments, no text, or an unknown voice, style or preset",
}
"""What each exit status means, as `--help` and docs/say.md say it (a test compares them)."""
SAMPLE_WIDTH = 2
"""The engine's audio: 16-bit mono."""

_APLAY_FORMATS = {1: "U8", 2: "S16_LE", 3: "S24_3LE", 4: "S32_LE"}
"""Bytes per sample → aplay's ``-f`` (Wyoming audio is little-endian; 8-bit is unsigned)."""


class SayError(HayakoeError):
    """What failed, in one line for stderr (exit status 1)."""


# -- audio sinks -------------------------------------------------------------------------
class AudioSink(Protocol):
    """Where the audio goes: `start` once with its format, `write` per chunk, `close`."""

    def start(self, rate: int, width: int, channels: int) -> None: ...

    def write(self, pcm: bytes) -> None: ...

    def close(self) -> None:
        """Finish (the file is complete, the player has played it all); `SayError` if not."""
        ...

    def abort(self) -> None:
        """Give up after a failure: leave nothing half-made behind."""
        ...


class WavFileSink:
    """A WAV file, written as the audio arrives into a temporary file next to it that
    replaces `path` when the audio is complete."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tmp: Path | None = None
        self._wav: wave.Wave_write | None = None

    def start(self, rate: int, width: int, channels: int) -> None:
        directory = self.path.parent
        try:
            fd, name = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=directory)
        except OSError as exc:
            raise SayError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        os.close(fd)
        self._tmp = Path(name)
        self._wav = wave.open(name, "wb")
        self._wav.setnchannels(channels)
        self._wav.setsampwidth(width)
        self._wav.setframerate(rate)

    def write(self, pcm: bytes) -> None:
        assert self._wav is not None, "write before start"
        try:
            self._wav.writeframes(pcm)
        except OSError as exc:
            raise SayError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def close(self) -> None:
        assert self._wav is not None and self._tmp is not None, "close before start"
        try:
            self._wav.close()
            self._tmp.chmod(0o644)
            self._tmp.replace(self.path)
        except OSError as exc:
            self.abort()
            raise SayError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        self._tmp = None

    def abort(self) -> None:
        if self._wav is not None:
            with contextlib.suppress(Exception):
                self._wav.close()
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)
            self._tmp = None


class StdoutSink:
    """The whole WAV file on stdout once the audio is complete."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._format: tuple[int, int, int] | None = None
        self._pcm: list[bytes] = []

    def start(self, rate: int, width: int, channels: int) -> None:
        self._format = (rate, width, channels)

    def write(self, pcm: bytes) -> None:
        self._pcm.append(pcm)

    def close(self) -> None:
        assert self._format is not None, "close before start"
        rate, width, channels = self._format
        wav_bytes = io.BytesIO()
        with wave.open(wav_bytes, "wb") as wav:  # sizes in the header need a seekable file
            wav.setnchannels(channels)
            wav.setsampwidth(width)
            wav.setframerate(rate)
            wav.writeframes(b"".join(self._pcm))
        try:
            self._stream.write(wav_bytes.getvalue())
            self._stream.flush()
        except (OSError, ValueError) as exc:
            raise SayError(f"cannot write to stdout: {exc}") from None

    def abort(self) -> None:
        self._pcm.clear()


class PlayerSink:
    """Raw PCM piped to ``aplay`` chunk by chunk: playback starts with the first chunk, and
    `close` returns when the player has played everything."""

    def __init__(self, player: str, device: str | None = None) -> None:
        self.player = player
        self.device = device
        self._proc: subprocess.Popen[bytes] | None = None
        self._errors: IO[bytes] | None = None

    def command(self, rate: int, width: int, channels: int) -> list[str]:
        """The player's command line for this format."""
        fmt = _APLAY_FORMATS.get(width)
        if fmt is None:
            raise SayError(f"cannot play {8 * width}-bit audio")
        args = [self.player, "-q", "-t", "raw", "-f", fmt, "-r", str(rate), "-c", str(channels)]
        if self.device:
            args += ["-D", self.device]
        return [*args, "-"]

    def start(self, rate: int, width: int, channels: int) -> None:
        command = self.command(rate, width, channels)
        self._errors = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._errors
            )
        except OSError as exc:
            raise SayError(f"cannot start {self.player}: {exc.strerror or exc}") from None

    def write(self, pcm: bytes) -> None:
        assert self._proc is not None and self._proc.stdin is not None, "write before start"
        try:
            self._proc.stdin.write(pcm)
            self._proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise self._failure() from None

    def close(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None, "close before start"
        with contextlib.suppress(BrokenPipeError):
            self._proc.stdin.close()
        if self._proc.wait() != 0:
            raise self._failure()
        self._cleanup()

    def _failure(self) -> SayError:
        """The player's own reason (its last stderr line), e.g. no sound device."""
        assert self._proc is not None
        with contextlib.suppress(BrokenPipeError, OSError):
            if self._proc.stdin is not None:
                self._proc.stdin.close()
        code = self._proc.wait()
        said = ""
        if self._errors is not None:
            self._errors.seek(0)
            lines = self._errors.read().decode(errors="replace").strip().splitlines()
            said = lines[-1].strip() if lines else ""
        self._cleanup()
        return SayError(
            f"cannot play: {self.player} failed (exit status {code})"
            + (f": {said}" if said else "")
        )

    def abort(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._cleanup()

    def _cleanup(self) -> None:
        if self._errors is not None:
            self._errors.close()
            self._errors = None


def find_player() -> str:
    """The path of ``aplay`` on PATH; `SayError` when there is none."""
    found = shutil.which(PLAYER)
    if found is None:
        raise SayError(
            f"cannot play: no audio player: {PLAYER} not found on PATH "
            "(install alsa-utils, or write a file with -o)"
        )
    return found


# -- the command line ----------------------------------------------------------------------
class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose refusals are one line, ``say: error: ...`` (exit 2), not
    the usage of every voice flag: a cron job's mail says what was wrong (``--help`` has
    the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"say: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser (the server's voice flags, and its own)."""
    from ..settings import add_voice_arguments

    parser = _OneLineParser(
        prog=PROG,
        description=(
            "Speak TEXT once: to a WAV file, to stdout or to the sound card, with a voice "
            "loaded here or by asking a running server (--server). Exit status: "
            + ", ".join(f"{code} {meaning}" for code, meaning in EXIT_STATUS.items())
            + "."
        ),
    )
    parser.add_argument(
        "text",
        nargs="*",
        metavar="TEXT",
        help="what to say (words are joined with spaces); '-' or nothing: read stdin",
    )
    out = parser.add_mutually_exclusive_group(required=True)
    out.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write a WAV file ('-': the WAV on stdout)",
    )
    out.add_argument(
        "--play",
        action="store_true",
        help=f"play on the sound card through ALSA's {PLAYER} (on PATH), as the audio arrives",
    )
    parser.add_argument(
        "--audio-device",
        metavar="PCM",
        help=f"with --play: the ALSA device ({PLAYER} -D), e.g. plughw:1,0 (default: ALSA's)",
    )
    parser.add_argument(
        "--server",
        metavar="URI",
        help="ask a running server (tcp://HOST:PORT or unix://PATH) instead of loading the voice",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help="with --server: longest wait for the server to connect or send the next event "
        "(default: %(default)g)",
    )
    parser.add_argument(
        "--voice",
        metavar="NAME[=SOURCE]",
        help=f"the voice that speaks (default: {EMBEDDED_VOICE_NAME}; with --server, the "
        "server's default voice). NAME may be VOICE:STYLE; with --server, any voice the server "
        "serves, presets included. Here, =SOURCE says where to load it from (hf://user/repo, "
        "s3://bucket/prefix, file:///path, /path)",
    )
    parser.add_argument("--style", help="the voice's style (default: Neutral, else its first)")
    parser.add_argument(
        "--preset",
        metavar="NAME=VOICE[:STYLE],KEY=VALUE,...",
        help="speak with a preset, written as for the server's --preset (not with --server: "
        "there name the server's preset with --voice)",
    )
    add_voice_arguments(parser)
    parser.add_argument("--debug", action="store_true", help="log DEBUG messages")
    return parser


def _voice_flag_defaults() -> dict[str, object]:
    """`add_voice_arguments`' flags and their defaults (to tell which were given)."""
    from ..settings import add_voice_arguments

    probe = argparse.ArgumentParser(add_help=False)
    add_voice_arguments(probe)
    return vars(probe.parse_args([]))


def read_text(words: Sequence[str], stdin: IO[str]) -> str:
    """TEXT, or stdin for '-' / nothing; `UsageError` when there is nothing to say."""
    if list(words) in ([], ["-"]):
        if stdin.isatty():
            raise UsageError("no TEXT given (give it as an argument or pipe it on stdin)")
        text = stdin.read()
    else:
        text = " ".join(words)
    if not text.strip():
        raise UsageError("the text is empty")
    return text.strip()


@dataclass(frozen=True)
class Request:
    """What to say, with which voice and style (names as the user wrote them)."""

    text: str
    voice: str | None
    style: str | None


def _make_sink(args: argparse.Namespace, stdout: BinaryIO) -> AudioSink:
    if args.play:
        return PlayerSink(find_player(), args.audio_device)
    if args.output == "-":
        return StdoutSink(stdout)
    return WavFileSink(Path(args.output))


# -- speaking here -------------------------------------------------------------------------
def speak_here(
    args: argparse.Namespace,
    request: Request,
    sink: AudioSink,
    environ: Mapping[str, str],
) -> float:
    """Load the voice (as the server would) and speak; returns the seconds of audio.
    `UnknownVoice` when the voice, preset or style names nothing loaded, `TooLarge` past
    the server's bounds (``--max-text-length``)."""
    from ..flags import SettingsError, VoiceSpec
    from ..presets import parse_presets
    from ..settings import Settings, voice_fields
    from ..voices import build_catalog, prepare_tts

    try:
        spec = VoiceSpec.parse(request.voice) if request.voice else None
        presets = parse_presets([args.preset] if args.preset else [])
    except SettingsError as exc:
        raise UsageError(str(exc)) from None
    if presets:
        preset = presets[0]
        if spec is not None and spec.name != preset.voice:
            raise UsageError(
                f"--preset {preset.name!r} speaks with {preset.voice!r} but --voice names "
                f"{spec.name!r}"
            )
        voices = (VoiceSpec(preset.voice, spec.source if spec else None),)
        asked_name = preset.name
    else:
        spec = spec or VoiceSpec(EMBEDDED_VOICE_NAME)
        asked_name = spec.name
        load = spec.name  # VOICE:STYLE loads VOICE; the name is resolved once it is loaded
        if STYLE_SEPARATOR in load:
            load = load.rpartition(STYLE_SEPARATOR)[0] or load
        voices = (VoiceSpec(load, spec.source),)
    # Played as it is made: the playback guard paces the audio for a player that starts at
    # the first chunk, with this voice's speed measured by the warm-up (a voice slower than
    # speech then plays without gaps). A file or stdout is not played in real time: no guard,
    # no warm-up. The embedded voice reports no audio still to come, so the guard has nothing
    # to hold it back by and its warm-up would only delay the first audio.
    try:
        settings = Settings(
            voices=voices,
            default_voice="",  # the first voice that loads (a multi-speaker file: several)
            presets=presets,
            debug=args.debug,
            **voice_fields(args, environ),
        )
    except (SettingsError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    guard = isinstance(sink, PlayerSink) and settings.engine.playback_guard != "off"
    settings = dataclasses.replace(
        settings,
        warmup=guard and voices[0].name != EMBEDDED_VOICE_NAME,
        # One request and out: the library's contract, not the server's background work.
        # `auto` takes what the cache holds (int8 a server or `quantize` made, else fp32 at
        # once with one line on stderr); only `--precision int8` makes graphs here (minutes,
        # progress on stderr, a stopped run resumes).
        engine=dataclasses.replace(settings.engine, quantize_in_background=False),
    )
    try:
        tts = prepare_tts(settings, watch_dictionaries=False, skip_failed=False)
        tts.close()
    except Exception as exc:  # noqa: BLE001 - one line naming what failed, the rest at DEBUG
        _LOGGER.debug("Loading failed", exc_info=True)
        raise SayError(f"cannot load voice {voices[0].name}: {redact(str(exc))}") from None
    catalog = build_catalog(settings, tts.speakers)  # the server's voices: PresetError
    service = SpeechService(catalog, Admission(max_queue=0), settings.bounds)
    asked = SpeechRequest(  # the page's rule: UnknownVoice; the server's bounds: TooLarge
        request.text,
        asked_name,
        request.style,
        guard=guard,  # one-shot, as the server's: one loudness for the whole text
        door="say",
    )
    return asyncio.run(_speak_to_sink(service, asked, sink))


async def _speak_to_sink(service: SpeechService, asked: SpeechRequest, sink: AudioSink) -> float:
    """The request through the one way in (`SpeechService`) into `sink`; seconds of audio."""
    with service.open(asked) as speech:
        sink.start(speech.rate, SAMPLE_WIDTH, 1)
        total = 0
        try:
            async with contextlib.aclosing(speech.stream()) as chunks:  # closing frees the voice
                async for chunk in chunks:
                    pcm = chunk.pcm_bytes()
                    if pcm:
                        sink.write(pcm)
                        total += len(pcm)
        except (SayError, SpeechError):
            raise
        except Exception as exc:  # noqa: BLE001 - one line naming what failed
            _LOGGER.debug("Synthesis failed", exc_info=True)
            raise SayError(f"synthesis failed with {speech.voice}: {exc}") from None
        rate = speech.rate
    sink.close()
    return total / SAMPLE_WIDTH / rate


# -- asking a server -----------------------------------------------------------------------
def _check_server_voice(info: Info, request: Request, label: str) -> None:
    """`UnknownNameError` listing what the server serves when the voice or style names
    nothing there (the rule the server applies, `wyoming_hayakoe.resolve`)."""
    if request.voice is None:
        return
    names = VoiceNames.from_info(info)
    if not names.voices:
        raise SayError(f"{label} serves no voices")
    resolve_name(names, request.voice, request.style, default=next(iter(names.voices))).exact(label)


async def _ask_server(client: WyomingClient, request: Request, sink: AudioSink) -> float:
    if request.voice is not None:  # check the name first: a server speaks unknown ones anyway
        _check_server_voice(await client.describe(), request, client.label)
    spoken = await client.speak(request.text, request.voice, request.style, listener=sink)
    sink.close()
    return spoken.seconds


def speak_via_server(
    address: ServerAddress, request: Request, sink: AudioSink, timeout: float
) -> float:
    """One ``synthesize`` to the server (`wyoming_hayakoe.client`), its audio into `sink` as
    it arrives; returns the seconds of audio."""
    try:
        return asyncio.run(_ask_server(WyomingClient(address, timeout=timeout), request, sink))
    except ClientError as exc:
        raise SayError(str(exc)) from None


# -- main ----------------------------------------------------------------------------------
def _check_server_flags(args: argparse.Namespace) -> None:
    """With --server, the voice is the server's: refuse flags that would be ignored."""
    if args.preset:
        raise UsageError("--preset is not for --server: name the server's preset with --voice")
    given = [
        dest for dest, default in _voice_flag_defaults().items() if vars(args)[dest] != default
    ]
    if given:
        flags = ", ".join("--" + d.replace("_", "-") for d in given)
        raise UsageError(
            f"{flags}: not with --server (the server's own flags and presets shape its voices)"
        )


def run(
    argv: Sequence[str],
    *,
    stdin: IO[str],
    stdout: BinaryIO,
    environ: Mapping[str, str],
) -> int:
    """The command with its streams given; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(list(argv))  # exits 2 on bad flags
    setup_logging(args.debug, level=logging.WARNING)
    sink: AudioSink | None = None
    try:
        if args.audio_device and not args.play:
            raise UsageError("--audio-device needs --play")
        if not args.timeout > 0:
            raise UsageError(f"--timeout must be > 0, got {args.timeout:g}")
        try:
            address = ServerAddress.parse(args.server) if args.server else None
        except AddressError as exc:
            raise UsageError(f"--server {exc}") from None
        if address is not None:
            _check_server_flags(args)
        request = Request(
            read_text(args.text, stdin),
            (args.voice or "").strip() or None,
            (args.style or "").strip() or None,
        )
        sink = _make_sink(args, stdout)  # finds the player before any slow work
        if address is not None:
            seconds = speak_via_server(address, request, sink, args.timeout)
        else:
            seconds = speak_here(args, request, sink, environ)
    except UsageError as exc:  # one line, as argparse's own refusals (`_OneLineParser`)
        if sink is not None:
            sink.abort()
        print(f"say: error: {exc}", file=sys.stderr)
        return 2
    except (UnknownNameError, UnknownVoice, TooLarge, PresetError) as exc:  # refused: exit 2
        if sink is not None:
            sink.abort()
        print(f"say: {exc}", file=sys.stderr)
        return 2
    except SayError as exc:
        if sink is not None:
            sink.abort()
        print(f"say: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if sink is not None:
            sink.abort()
        return 130
    except Exception as exc:  # noqa: BLE001 - a cron job gets one line, not a traceback
        if sink is not None:
            sink.abort()
        _LOGGER.debug("Failed", exc_info=True)
        print(f"say: {type(exc).__name__}: {redact(str(exc))}", file=sys.stderr)
        return 1
    _LOGGER.debug("Said %.2f s of audio", seconds)
    return 0


def main(argv: Sequence[str]) -> int:
    """Run the command; returns the exit status."""
    return run(argv, stdin=sys.stdin, stdout=sys.stdout.buffer, environ=os.environ)
