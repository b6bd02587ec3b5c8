"""Command line → one typed, validated `Settings` object (configuration flows one way).

The flag names are a contract: the Home Assistant add-on maps its options to exactly these.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from engine import DEFAULT_SOURCE, EMBEDDED_VOICE_NAME, __version__

__all__ = [
    "DEFAULT_URI",
    "DEFAULT_ZEROCONF_NAME",
    "Settings",
    "SettingsError",
    "SynthesisDefaults",
    "VoiceSpec",
    "build_parser",
    "parse_settings",
]

DEFAULT_URI = "tcp://0.0.0.0:10200"
DEFAULT_ZEROCONF_NAME = "hayakoe"
DEFAULT_MAX_TEXT_LENGTH = 100_000
DEFAULT_MAX_QUEUE = 10
DEFAULT_DRAIN_TIMEOUT = 10.0


class SettingsError(ValueError):
    """A command-line value that cannot be used; the message names the flag."""


@dataclass(frozen=True)
class VoiceSpec:
    """A voice to load: its name, and where it comes from (None: the default source)."""

    name: str
    source: str | None = None

    @staticmethod
    def parse(text: str) -> VoiceSpec:
        """``NAME`` or ``NAME=SOURCE``."""
        name, sep, source = text.partition("=")
        name, source = name.strip(), source.strip()
        if not name:
            raise SettingsError(f"--voice {text!r}: the voice name is empty")
        if sep and not source:
            raise SettingsError(f"--voice {text!r}: the source after '=' is empty")
        if name == EMBEDDED_VOICE_NAME and source:
            raise SettingsError(
                f"--voice {text!r}: {EMBEDDED_VOICE_NAME} is the embedded voice and takes no source"
            )
        return VoiceSpec(name, source or None)


@dataclass(frozen=True)
class SynthesisDefaults:
    """Server-wide synthesis options (None: the voice's own default)."""

    speed: float | None = None
    sentence_silence: float | None = None
    sdp_ratio: float | None = None
    noise: float | None = None
    noise_w: float | None = None
    style_weight: float | None = None
    pitch_scale: float | None = None
    intonation_scale: float | None = None

    def as_options(self) -> dict[str, float]:
        """The set values, as keyword options for `Speaker.stream`."""
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class Settings:
    """Everything the server needs, validated. `hf_token` never appears in `repr`."""

    uri: str = DEFAULT_URI
    zeroconf_name: str | None = None
    zeroconf_interfaces: tuple[str, ...] = ()
    """Addresses of the interfaces zeroconf uses; empty: all (tests pass 127.0.0.1)."""
    voices: tuple[VoiceSpec, ...] = (VoiceSpec(EMBEDDED_VOICE_NAME),)
    default_voice: str = EMBEDDED_VOICE_NAME
    default_style: str | None = None
    samples_per_chunk: int = 1024
    streaming: bool = True
    device: str = "cpu"
    cache_dir: Path | None = None
    bert_source: str = DEFAULT_SOURCE
    hf_token: str | None = field(default=None, repr=False)
    user_dicts: tuple[Path, ...] = ()
    """User dictionary files (CSV/JSON), later ones win; reloaded when they change and on SIGHUP."""
    rewrite: bool = True
    synthesis: SynthesisDefaults = SynthesisDefaults()
    max_text_length: int = DEFAULT_MAX_TEXT_LENGTH
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
    log_format: str = logging.BASIC_FORMAT

    @property
    def use_compile(self) -> bool:
        """Whether to `torch.compile` at start (explicit setting, else cuda devices only)."""
        if self.compile is not None:
            return self.compile
        return self.device.startswith("cuda")

    @property
    def max_event_data_bytes(self) -> int:
        """Largest JSON data block accepted in one event (text may be \\u-escaped: 6 B/char)."""
        return max(1 << 20, 8 * self.max_text_length)


def _number(flag: str, cast: type, noun: str, *, allow_zero: bool):
    """An argparse `type` that parses `cast` and refuses negatives (and 0 unless allowed),
    naming the flag in the message."""

    def convert(text: str):
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} expects {noun}, got {text!r}") from None
        if (value < 0) if allow_zero else not value > 0:
            bound = ">= 0" if allow_zero else "> 0"
            raise argparse.ArgumentTypeError(f"{flag} must be {bound}, got {text!r}")
        return value

    return convert


def _positive_float(flag: str):
    return _number(flag, float, "a number", allow_zero=False)


def _non_negative_float(flag: str):
    return _number(flag, float, "a number", allow_zero=True)


def _positive_int(flag: str):
    return _number(flag, int, "an integer", allow_zero=False)


def _non_negative_int(flag: str):
    return _number(flag, int, "an integer", allow_zero=True)


def build_parser() -> argparse.ArgumentParser:
    """The server's argument parser (wyoming-piper's style)."""
    p = argparse.ArgumentParser(
        prog="wyoming-hayakoe",
        description=(
            "Wyoming text-to-speech server for Japanese (Style-Bert-VITS2 JP-Extra voices; "
            f"the embedded OpenJTalk voice {EMBEDDED_VOICE_NAME!r} needs no download). "
            "Subcommands: export, download, export-bert (run `wyoming-hayakoe SUBCOMMAND -h`)."
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
        help=f"advertise the server with zeroconf as NAME (default name: {DEFAULT_ZEROCONF_NAME}); tcp:// only",
    )
    p.add_argument("--zeroconf-interface", action="append", default=[], help=argparse.SUPPRESS)
    p.add_argument(
        "--voice",
        action="append",
        default=[],
        metavar="NAME[=SOURCE]",
        help="voice to load (repeatable): a name, or NAME=SOURCE (hf://user/repo, s3://bucket/prefix, "
        f"file:///path, /path); default: {EMBEDDED_VOICE_NAME}",
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
        type=_positive_int("--samples-per-chunk"),
        default=1024,
        help="samples per audio-chunk event (default: %(default)s)",
    )
    p.add_argument(
        "--no-streaming",
        action="store_true",
        help="do not advertise streaming synthesis (synthesize-start/chunk/stop)",
    )
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
        default=DEFAULT_SOURCE,
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
        help="user dictionary file (CSV or JSON; repeatable, later files win); reloaded when it changes and on SIGHUP",
    )
    p.add_argument(
        "--no-rewrite",
        action="store_true",
        help="speak text as given (no times/units/Latin-word rewriting)",
    )
    p.add_argument("--no-warmup", action="store_true", help=argparse.SUPPRESS)
    p.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="torch.compile neural voices at start (PyTorch backend; default: on for cuda devices)",
    )
    g = p.add_argument_group("synthesis defaults (per voice when not given)")
    g.add_argument(
        "--speed",
        type=_positive_float("--speed"),
        help="speaking rate factor (2.0 = twice as fast)",
    )
    g.add_argument(
        "--sentence-silence",
        type=_non_negative_float("--sentence-silence"),
        help="seconds of silence between sentences",
    )
    g.add_argument("--sdp-ratio", type=_non_negative_float("--sdp-ratio"))
    g.add_argument("--noise", type=_non_negative_float("--noise"))
    g.add_argument("--noise-w", type=_non_negative_float("--noise-w"))
    g.add_argument("--style-weight", type=_non_negative_float("--style-weight"))
    g.add_argument("--pitch-scale", type=_positive_float("--pitch-scale"))
    g.add_argument("--intonation-scale", type=_non_negative_float("--intonation-scale"))
    p.add_argument(
        "--max-text-length",
        type=_positive_int("--max-text-length"),
        default=DEFAULT_MAX_TEXT_LENGTH,
        help="longest text (characters) one request may carry (default: %(default)s)",
    )
    p.add_argument(
        "--max-queue",
        type=_non_negative_int("--max-queue"),
        default=DEFAULT_MAX_QUEUE,
        help="requests that may wait for one voice while it speaks another; one more gets an "
        "error 'busy' at once (default: %(default)s)",
    )
    p.add_argument(
        "--drain-timeout",
        type=_non_negative_float("--drain-timeout"),
        default=DEFAULT_DRAIN_TIMEOUT,
        help="on SIGTERM, seconds to let requests in flight finish before closing (default: %(default)s)",
    )
    p.add_argument("--debug", action="store_true", help="log DEBUG messages")
    p.add_argument("--log-format", default=logging.BASIC_FORMAT, help="format of log messages")
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


def settings_from_args(args: argparse.Namespace, environ: dict[str, str] | None = None) -> Settings:
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
    if not voices:
        voices.append(VoiceSpec(EMBEDDED_VOICE_NAME))
    zeroconf_name = args.zeroconf
    if zeroconf_name is not None:
        zeroconf_name = zeroconf_name.strip()
        if not zeroconf_name:
            raise SettingsError("--zeroconf: the service name is empty")
        if not uri.startswith("tcp://"):
            raise SettingsError(f"--zeroconf needs a tcp:// --uri, not {uri!r}")
    token = args.hf_token or env.get("HF_TOKEN") or None
    return Settings(
        uri=uri,
        zeroconf_name=zeroconf_name,
        zeroconf_interfaces=tuple(args.zeroconf_interface),
        voices=tuple(voices),
        default_voice=default_voice or voices[0].name,
        default_style=(args.default_style or "").strip() or None,
        samples_per_chunk=args.samples_per_chunk,
        streaming=not args.no_streaming,
        device=args.device,
        cache_dir=args.cache_dir,
        bert_source=args.bert_source,
        hf_token=token,
        user_dicts=tuple(args.user_dict),
        rewrite=not args.no_rewrite,
        synthesis=SynthesisDefaults(
            speed=args.speed,
            sentence_silence=args.sentence_silence,
            sdp_ratio=args.sdp_ratio,
            noise=args.noise,
            noise_w=args.noise_w,
            style_weight=args.style_weight,
            pitch_scale=args.pitch_scale,
            intonation_scale=args.intonation_scale,
        ),
        max_text_length=args.max_text_length,
        max_queue=args.max_queue,
        drain_timeout=args.drain_timeout,
        warmup=not args.no_warmup,
        compile=args.compile,
        debug=args.debug,
        log_format=args.log_format,
    )


def parse_settings(
    argv: Sequence[str] | None = None, environ: dict[str, str] | None = None
) -> Settings:
    """Parse the command line into `Settings` (argparse exits with a message on bad flags)."""
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        return settings_from_args(args, environ)
    except SettingsError as exc:
        parser.error(str(exc))
        raise  # unreachable: parser.error exits
