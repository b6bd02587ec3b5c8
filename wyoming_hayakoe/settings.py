"""Command line → one typed, validated `Settings` object (configuration flows one way).

The flag names are a contract: the Home Assistant add-on maps its options to exactly these.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from engine import EMBEDDED_VOICE_NAME, OFFICIAL_SOURCE, EngineOptions, __version__
from engine.speaker import DEFAULT_STREAM_QUIET

from .apis.options import (
    EngineApiSettings,
    add_engine_api_arguments,
    engine_api_settings_from_args,
)
from .flags import (
    OutputDefaults,
    SettingsError,
    SynthesisDefaults,
    VoiceSpec,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from .knobs import (
    PRESET_KEYS,
    Section,
    add_knob_arguments,
    engine_options,
    output_defaults,
    synthesis_defaults,
)
from .library.options import LibrarySettings, add_library_arguments, library_settings_from_args
from .logs import LOG_FORMAT
from .net.options import ConnectionLimits, add_connection_arguments, connection_limits_from_args
from .speech.bounds import (
    DEFAULT_MAX_AUDIO_SECONDS,
    DEFAULT_MAX_QUERIES,
    DEFAULT_MAX_TEXT_LENGTH,
    RequestBounds,
)
from .subcommands import SUBCOMMANDS
from .web.options import HttpSettings, add_http_arguments, http_settings_from_args

if TYPE_CHECKING:
    from .presets import Preset

__all__ = [
    "DEFAULT_URI",
    "DEFAULT_ZEROCONF_NAME",
    "OutputDefaults",
    "Settings",
    "SettingsError",
    "SynthesisDefaults",
    "VoiceSpec",
    "add_voice_arguments",
    "build_parser",
    "parse_settings",
    "voice_fields",
]

DEFAULT_URI = "tcp://0.0.0.0:10200"
DEFAULT_ZEROCONF_NAME = "hayakoe"
DEFAULT_MAX_QUEUE = 10
DEFAULT_DRAIN_TIMEOUT = 10.0


@dataclass(frozen=True)
class Settings:
    """Everything the server needs, validated. `hf_token` never appears in `repr`."""

    uri: str = DEFAULT_URI
    zeroconf_name: str | None = None
    zeroconf_interfaces: tuple[str, ...] = ()
    """Addresses of the interfaces zeroconf uses; empty: all (tests pass 127.0.0.1)."""
    voices: tuple[VoiceSpec, ...] = (VoiceSpec(EMBEDDED_VOICE_NAME),)
    voice_dirs: tuple[Path, ...] = ()
    """Folders whose every .aivmx/.aivm file is served (AivisHub voices, `--voice-dir`)."""
    default_voice: str = EMBEDDED_VOICE_NAME
    """The voice of requests that name none; "" when only --voice-dir gives voices (then
    the first voice that loads)."""
    default_style: str | None = None
    samples_per_chunk: int = 1024
    streaming: bool = True
    device: str = "cpu"
    cache_dir: Path | None = None
    bert_source: str = OFFICIAL_SOURCE
    hf_token: str | None = field(default=None, repr=False)
    user_dicts: tuple[Path, ...] = ()
    """User dictionary files (CSV/JSON), later ones win; reloaded when they change and on SIGHUP."""
    rewrite: bool = True
    synthesis: SynthesisDefaults = SynthesisDefaults()
    output: OutputDefaults = OutputDefaults()
    """Output shaping for every voice (presets may override)."""
    presets: tuple[Preset, ...] = ()
    """Named bundles of voice, style and options, served as voices of their own."""
    max_text_length: int = DEFAULT_MAX_TEXT_LENGTH
    """Characters one request may carry, on every door (`RequestBounds`)."""
    max_audio_seconds: float = DEFAULT_MAX_AUDIO_SECONDS
    """Seconds of audio one request may make, silences included (`RequestBounds`)."""
    max_queries: int = DEFAULT_MAX_QUERIES
    """AudioQueries one ``/multi_synthesis`` may carry (`RequestBounds`)."""
    stream_quiet: float = DEFAULT_STREAM_QUIET
    """Seconds without a ``synthesize-chunk`` after which a stream's finished sentences are
    spoken without waiting for the next chunk; 0: they wait for it (or the stop)."""
    max_event_payload_bytes: int = 1 << 20
    """Largest binary payload accepted in one event (a TTS server receives no audio)."""
    max_queue: int = DEFAULT_MAX_QUEUE
    """Requests that may wait for one voice behind the one it is speaking; more get ``busy``."""
    drain_timeout: float = DEFAULT_DRAIN_TIMEOUT
    """Seconds a stopping server (SIGTERM) gives requests in flight to finish."""
    warmup: bool = True
    compile: bool | None = None
    """`torch.compile` the neural voices at start; None: on for cuda devices, off otherwise."""
    debug: bool = False
    log_format: str = LOG_FORMAT
    http: HttpSettings | None = None
    """The web page (`wyoming_hayakoe.web`); None: off."""
    engine_api: EngineApiSettings | None = None
    """The VOICEVOX / AivisSpeech and OpenAI APIs (`wyoming_hayakoe.apis`); None: off."""
    connections: ConnectionLimits = ConnectionLimits()
    """What a slow, stuck or greedy client may hold on each port (`wyoming_hayakoe.net`)."""
    library: LibrarySettings = LibrarySettings()
    """The voice library (`wyoming_hayakoe.library`): its folder, the hub, the upload limit."""
    engine: EngineOptions = EngineOptions()
    """Engine tuning (threads, streaming windows, memory, offline): flags, else the documented
    environment variables (`EngineOptions.from_env`)."""

    @property
    def use_compile(self) -> bool:
        """Whether to `torch.compile` at start (explicit setting, else cuda devices only)."""
        if self.compile is not None:
            return self.compile
        return self.device.startswith("cuda")

    @property
    def bounds(self) -> RequestBounds:
        """Every request's bounds, on every door."""
        return RequestBounds(self.max_text_length, self.max_audio_seconds, self.max_queries)

    @property
    def max_event_data_bytes(self) -> int:
        """Largest JSON data block accepted in one event (text may be \\u-escaped: 6 B/char)."""
        return max(1 << 20, 8 * self.max_text_length)


def add_voice_arguments(p: argparse.ArgumentParser) -> None:
    """The flags that say how voices are loaded and how they speak (device, sources, user
    dictionaries, engine tuning, synthesis and output defaults): the server's, shared with
    ``wyoming-hayakoe say`` (`voice_fields` turns them into `Settings` fields)."""
    p.add_argument(
        "--device",
        default="cpu",
        help="cpu (ONNX Runtime) or cuda[:N] (PyTorch) (default: %(default)s)",
    )
    p.add_argument(
        "--cache-dir",
        type=Path,
        help="where downloaded voices are kept (default: $HAYAKOE_CACHE or the user cache)",
    )
    p.add_argument(
        "--bert-source",
        default=OFFICIAL_SOURCE,
        help="where the BERT comes from (default: %(default)s)",
    )
    p.add_argument(
        "--hf-token",
        default=None,
        help="Hugging Face token for private voices (default: $HF_TOKEN; never logged)",
    )
    p.add_argument(
        "--user-dict",
        type=Path,
        action="append",
        default=[],
        help="user dictionary file (CSV or JSON; repeatable, later files win); "
        "reloaded when it changes and on SIGHUP",
    )
    p.add_argument(
        "--no-rewrite",
        action="store_true",
        help="speak text as given (no times/units/Latin-word rewriting)",
    )
    p.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="torch.compile neural voices at start (PyTorch backend; default: on for cuda devices)",
    )
    e = p.add_argument_group("engine tuning (defaults from the environment, see engine/options.py)")
    add_knob_arguments(e, Section.ENGINE)
    g = p.add_argument_group("synthesis defaults (per voice when not given)")
    add_knob_arguments(g, Section.SYNTHESIS)
    o = p.add_argument_group("output (every voice; presets may override)")
    add_knob_arguments(o, Section.OUTPUT)


def build_parser() -> argparse.ArgumentParser:
    """The server's argument parser (wyoming-piper's style)."""
    p = argparse.ArgumentParser(
        prog="wyoming-hayakoe",
        description=(
            "Wyoming text-to-speech server for Japanese (Style-Bert-VITS2 JP-Extra voices; "
            f"the embedded OpenJTalk voice {EMBEDDED_VOICE_NAME!r} needs no download). "
            f"Subcommands: {', '.join(SUBCOMMANDS)} (run `wyoming-hayakoe SUBCOMMAND -h`)."
        ),
    )
    p.add_argument(
        "--uri",
        default=DEFAULT_URI,
        help="tcp://HOST:PORT, unix://PATH or stdio:// (default: %(default)s)",
    )
    p.add_argument(
        "--zeroconf",
        nargs="?",
        const=DEFAULT_ZEROCONF_NAME,
        default=None,
        metavar="NAME",
        help=f"advertise the server with zeroconf as NAME (default name: "
        f"{DEFAULT_ZEROCONF_NAME}); tcp:// only",
    )
    p.add_argument("--zeroconf-interface", action="append", default=[], help=argparse.SUPPRESS)
    p.add_argument(
        "--voice",
        action="append",
        default=[],
        metavar="NAME[=SOURCE]",
        help="voice to load (repeatable): a name, or NAME=SOURCE (hf://user/repo, "
        f"s3://bucket/prefix, file:///path, /path); default: {EMBEDDED_VOICE_NAME}",
    )
    p.add_argument(
        "--voice-dir",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="serve every AivisHub voice file (.aivmx, .aivm) in DIR, named from its manifest "
        "(repeatable); a NAME=FILE.aivmx --voice works too",
    )
    p.add_argument(
        "--default-voice", help="voice used when a request names none (default: the first --voice)"
    )
    p.add_argument(
        "--default-style",
        help="style used when a request names none (default: Neutral, else the voice's first)",
    )
    p.add_argument(
        "--samples-per-chunk",
        type=positive_int("--samples-per-chunk"),
        default=1024,
        help="samples per audio-chunk event (default: %(default)s)",
    )
    p.add_argument(
        "--no-streaming",
        action="store_true",
        help="do not advertise streaming synthesis (synthesize-start/chunk/stop)",
    )
    p.add_argument("--no-warmup", action="store_true", help=argparse.SUPPRESS)
    add_voice_arguments(p)
    p.add_argument(
        "--preset",
        action="append",
        default=[],
        metavar="NAME=VOICE[:STYLE],KEY=VALUE,...",
        help="a named voice with its own options (repeatable), "
        "e.g. alarm=openjtalk-mei:High,volume=6dB,lead_silence=0.5; "
        f"keys: {', '.join(PRESET_KEYS)}",
    )
    p.add_argument(
        "--max-text-length",
        type=positive_int("--max-text-length"),
        default=DEFAULT_MAX_TEXT_LENGTH,
        help="longest text (characters) one request may carry, on every door: Wyoming, the "
        "page, the engine APIs (default: %(default)s)",
    )
    p.add_argument(
        "--max-audio-seconds",
        type=positive_float("--max-audio-seconds"),
        default=DEFAULT_MAX_AUDIO_SECONDS,
        metavar="SECONDS",
        help="most audio one request may make, silences included; a longer one stops there "
        "with an error (default: %(default)s)",
    )
    p.add_argument(
        "--max-queries",
        type=positive_int("--max-queries"),
        default=DEFAULT_MAX_QUERIES,
        help="most AudioQueries one /multi_synthesis may carry (default: %(default)s)",
    )
    p.add_argument(
        "--stream-quiet",
        type=non_negative_float("--stream-quiet"),
        default=DEFAULT_STREAM_QUIET,
        metavar="SECONDS",
        help="streamed text: when no chunk came for this long, speak the sentences whose end "
        "was seen without waiting for the next chunk (an LLM calling a tool); 0: wait for it "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--max-queue",
        type=non_negative_int("--max-queue"),
        default=DEFAULT_MAX_QUEUE,
        help="requests that may wait for one voice while it speaks another; one more gets an "
        "error 'busy' at once (default: %(default)s)",
    )
    p.add_argument(
        "--drain-timeout",
        type=non_negative_float("--drain-timeout"),
        default=DEFAULT_DRAIN_TIMEOUT,
        help="on SIGTERM, seconds to let requests in flight finish before closing "
        "(default: %(default)s)",
    )
    add_http_arguments(p)
    add_engine_api_arguments(p)
    add_library_arguments(p)
    add_connection_arguments(p)
    p.add_argument("--debug", action="store_true", help="log DEBUG messages")
    p.add_argument(
        "--log-format",
        default=LOG_FORMAT,
        help="format of log messages (Python logging's %%-style; default: time, level, "
        "logger, message)",
    )
    p.add_argument(
        "--version", action="version", version=__version__, help="print the version and exit"
    )
    return p


def _check_uri(uri: str) -> str:
    parsed = urlparse(uri)
    if parsed.scheme == "tcp":
        try:
            port = parsed.port
        except ValueError:
            port = None
        if not parsed.hostname or port is None:
            raise SettingsError(
                f"--uri {uri!r}: tcp:// needs a host and a port, e.g. tcp://0.0.0.0:10200"
            )
    elif parsed.scheme == "unix":
        if not parsed.path:
            raise SettingsError(
                f"--uri {uri!r}: unix:// needs a socket path, e.g. unix:///run/hayakoe.sock"
            )
    elif parsed.scheme != "stdio":
        raise SettingsError(f"--uri {uri!r}: only tcp://, unix:// and stdio:// are supported")
    return uri


def settings_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> Settings:
    """Validate parsed arguments into `Settings`."""
    env = os.environ if environ is None else environ
    uri = _check_uri(args.uri)
    voices: list[VoiceSpec] = []
    for text in args.voice:
        spec = VoiceSpec.parse(text)
        clash = next((v for v in voices if v.name == spec.name), None)
        if clash is not None and clash != spec:
            raise SettingsError(
                f"--voice {text!r}: voice {spec.name!r} is given twice with different sources"
            )
        if clash is None:
            voices.append(spec)
    default_voice = args.default_voice.strip() if args.default_voice else None
    if default_voice:
        if "=" in default_voice:
            raise SettingsError(
                f"--default-voice {args.default_voice!r}: give a name; put NAME=SOURCE in --voice"
            )
        if all(v.name != default_voice for v in voices):
            voices.append(VoiceSpec(default_voice))
    voice_dirs = tuple(args.voice_dir)
    for d in voice_dirs:
        if not d.is_dir():
            raise SettingsError(f"--voice-dir {str(d)!r}: not a folder")
    if not voices and not voice_dirs:
        voices.append(VoiceSpec(EMBEDDED_VOICE_NAME))
    zeroconf_name = args.zeroconf
    if zeroconf_name is not None:
        zeroconf_name = zeroconf_name.strip()
        if not zeroconf_name:
            raise SettingsError("--zeroconf: the service name is empty")
        if not uri.startswith("tcp://"):
            raise SettingsError(f"--zeroconf needs a tcp:// --uri, not {uri!r}")
    from .presets import parse_presets  # presets build on this module's types

    presets = parse_presets(args.preset)
    http = http_settings_from_args(args)
    user_dicts = list(args.user_dict)
    if http is not None and http.dictionary is not None and http.dictionary not in user_dicts:
        user_dicts.insert(0, http.dictionary)  # first: the files given as --user-dict win
    for preset in presets:  # a preset's voice is loaded like --default-voice's
        if all(v.name.casefold() != preset.voice.casefold() for v in voices):  # as `resolve`
            voices.append(VoiceSpec(preset.voice))
    return Settings(
        uri=uri,
        zeroconf_name=zeroconf_name,
        zeroconf_interfaces=tuple(args.zeroconf_interface),
        voices=tuple(voices),
        voice_dirs=voice_dirs,
        default_voice=default_voice or (voices[0].name if voices else ""),
        default_style=(args.default_style or "").strip() or None,
        samples_per_chunk=args.samples_per_chunk,
        streaming=not args.no_streaming,
        presets=presets,
        max_text_length=args.max_text_length,
        max_audio_seconds=args.max_audio_seconds,
        max_queries=args.max_queries,
        stream_quiet=args.stream_quiet,
        max_queue=args.max_queue,
        drain_timeout=args.drain_timeout,
        warmup=not args.no_warmup,
        debug=args.debug,
        log_format=args.log_format,
        http=http,
        engine_api=engine_api_settings_from_args(args),
        library=library_settings_from_args(args),
        connections=connection_limits_from_args(args),
        **{**voice_fields(args, env), "user_dicts": tuple(user_dicts)},
    )


def voice_fields(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, Any]:
    """The `Settings` fields that `add_voice_arguments`' flags give."""
    return {
        "device": args.device,
        "cache_dir": args.cache_dir,
        "bert_source": args.bert_source,
        "hf_token": args.hf_token or env.get("HF_TOKEN") or None,
        "user_dicts": tuple(args.user_dict),
        "rewrite": not args.no_rewrite,
        "compile": args.compile,
        "synthesis": synthesis_defaults(args),
        "output": output_defaults(args),
        "engine": engine_options(args, env),
    }


def parse_settings(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Parse the command line into `Settings` (argparse exits with a message on bad flags;
    a value the flags cannot take exits 2 with one line naming the flag, not the usage)."""
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        return settings_from_args(args, environ)
    except SettingsError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
