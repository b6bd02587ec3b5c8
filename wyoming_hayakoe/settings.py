"""Command line → one typed, validated `Settings` object (configuration flows one way).

The flag names are a contract: the Home Assistant add-on maps its options to exactly these.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from engine import DEFAULT_SOURCE, EMBEDDED_VOICE_NAME, OUTPUT_RATES, __version__

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
    "build_parser",
    "parse_settings",
]

DEFAULT_URI = "tcp://0.0.0.0:10200"
DEFAULT_ZEROCONF_NAME = "hayakoe"
DEFAULT_MAX_TEXT_LENGTH = 100_000


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
class OutputDefaults:
    """Output shaping from the flags, or from a preset's keys (None: not set here)."""

    volume: float | None = None
    """Linear gain factor (``--volume 6dB`` is stored as 1.995...)."""
    loudness: float | None = None
    """Target integrated loudness, LUFS."""
    lead_silence: float | None = None
    """Seconds of silence before the speech."""
    tail_silence: float | None = None
    """Seconds of silence after the speech."""
    output_rate: int | None = None
    """Sample rate sent to the client, Hz (None: the voice's own)."""
    chime: Path | None = None
    """WAV file played before the speech."""

    def merged(self, over: OutputDefaults) -> OutputDefaults:
        """These values with every value set in `over` taking precedence."""
        return OutputDefaults(
            **{f.name: (getattr(over, f.name) if getattr(over, f.name) is not None else getattr(self, f.name))
               for f in fields(self)}
        )


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
    output: OutputDefaults = OutputDefaults()
    """Output shaping for every voice (presets may override)."""
    presets: tuple[Preset, ...] = ()
    """Named bundles of voice, style and options, served as voices of their own."""
    max_text_length: int = DEFAULT_MAX_TEXT_LENGTH
    max_event_payload_bytes: int = 1 << 20
    """Largest binary payload accepted in one event (a TTS server receives no audio)."""
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


MAX_VOLUME_DB = 40.0
MIN_VOLUME_DB = -60.0
MAX_ADDED_SILENCE_S = 60.0

_VOLUME = re.compile(r"\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*(db)?\s*", re.IGNORECASE)


def _volume(flag: str):
    """``6dB`` / ``-3 dB`` (decibels) or ``2`` / ``0.5`` (a factor) → the linear factor."""

    def convert(text: str) -> float:
        m = _VOLUME.fullmatch(text)
        if not m:
            raise argparse.ArgumentTypeError(
                f"{flag} expects a factor (2, 0.5) or decibels (6dB, -3dB), got {text!r}"
            )
        value = float(m.group(1))
        if m.group(2):
            if not MIN_VOLUME_DB <= value <= MAX_VOLUME_DB:
                raise argparse.ArgumentTypeError(
                    f"{flag} must be within {MIN_VOLUME_DB:g}..+{MAX_VOLUME_DB:g} dB, got {text!r}"
                )
            return 10.0 ** (value / 20.0)
        low, high = 10.0 ** (MIN_VOLUME_DB / 20.0), 10.0 ** (MAX_VOLUME_DB / 20.0)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{flag} factor must be within {low:g}..{high:g}, got {text!r}")
        return value

    return convert


def _loudness(flag: str):
    def convert(text: str) -> float:
        try:
            value = float(text.strip().removesuffix("LUFS").removesuffix("lufs"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} expects a loudness in LUFS (e.g. -16), got {text!r}") from None
        if not (math.isfinite(value) and -70.0 <= value <= 0.0):
            raise argparse.ArgumentTypeError(f"{flag} must be within -70..0 LUFS, got {text!r}")
        return value

    return convert


def _silence(flag: str):
    inner = _non_negative_float(flag)

    def convert(text: str) -> float:
        value = inner(text)
        if value > MAX_ADDED_SILENCE_S:
            raise argparse.ArgumentTypeError(f"{flag} must be at most {MAX_ADDED_SILENCE_S:g} s, got {text!r}")
        return value

    return convert


def _output_rate(flag: str):
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value not in OUTPUT_RATES:
            raise argparse.ArgumentTypeError(
                f"{flag} must be one of {', '.join(map(str, OUTPUT_RATES))}, got {text!r}"
            )
        return value

    return convert


def _wav_file(flag: str):
    def convert(text: str) -> Path:
        path = Path(text.strip()).expanduser()
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{flag} expects a WAV file, got an empty path")
        if not path.is_file():
            raise argparse.ArgumentTypeError(f"{flag}: file not found: {path}")
        return path

    return convert


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
    p.add_argument("--uri", default=DEFAULT_URI, help="tcp://HOST:PORT, unix://PATH or stdio:// (default: %(default)s)")
    p.add_argument(
        "--zeroconf", nargs="?", const=DEFAULT_ZEROCONF_NAME, default=None, metavar="NAME",
        help=f"advertise the server with zeroconf as NAME (default name: {DEFAULT_ZEROCONF_NAME}); tcp:// only",
    )
    p.add_argument("--zeroconf-interface", action="append", default=[], help=argparse.SUPPRESS)
    p.add_argument(
        "--voice", action="append", default=[], metavar="NAME[=SOURCE]",
        help="voice to load (repeatable): a name, or NAME=SOURCE (hf://user/repo, s3://bucket/prefix, "
        f"file:///path, /path); default: {EMBEDDED_VOICE_NAME}",
    )
    p.add_argument("--default-voice", help="voice used when a request names none (default: the first --voice)")
    p.add_argument("--default-style", help="style used when a request names none (default: Neutral, else the voice's first)")
    p.add_argument("--samples-per-chunk", type=_positive_int("--samples-per-chunk"), default=1024, help="samples per audio-chunk event (default: %(default)s)")
    p.add_argument("--no-streaming", action="store_true", help="do not advertise streaming synthesis (synthesize-start/chunk/stop)")
    p.add_argument("--device", default="cpu", help="cpu (ONNX Runtime) or cuda[:N] (PyTorch) (default: %(default)s)")
    p.add_argument("--cache-dir", type=Path, help="where downloaded voices are kept (default: $HAYAKOE_CACHE or the user cache)")
    p.add_argument("--bert-source", default=DEFAULT_SOURCE, help="where the BERT comes from (default: %(default)s)")
    p.add_argument("--hf-token", default=None, help="Hugging Face token for private voices (default: $HF_TOKEN; never logged)")
    p.add_argument("--user-dict", type=Path, action="append", default=[], help="user dictionary file (CSV or JSON; repeatable, later files win); reloaded when it changes and on SIGHUP")
    p.add_argument("--no-rewrite", action="store_true", help="speak text as given (no times/units/Latin-word rewriting)")
    p.add_argument("--no-warmup", action="store_true", help=argparse.SUPPRESS)
    p.add_argument(
        "--compile", action=argparse.BooleanOptionalAction, default=None,
        help="torch.compile neural voices at start (PyTorch backend; default: on for cuda devices)",
    )
    g = p.add_argument_group("synthesis defaults (per voice when not given)")
    g.add_argument("--speed", type=_positive_float("--speed"), help="speaking rate factor (2.0 = twice as fast)")
    g.add_argument("--sentence-silence", type=_non_negative_float("--sentence-silence"), help="seconds of silence between sentences")
    g.add_argument("--sdp-ratio", type=_non_negative_float("--sdp-ratio"))
    g.add_argument("--noise", type=_non_negative_float("--noise"))
    g.add_argument("--noise-w", type=_non_negative_float("--noise-w"))
    g.add_argument("--style-weight", type=_non_negative_float("--style-weight"))
    g.add_argument("--pitch-scale", type=_positive_float("--pitch-scale"))
    g.add_argument("--intonation-scale", type=_non_negative_float("--intonation-scale"))
    o = p.add_argument_group("output (every voice; presets may override)")
    o.add_argument("--volume", type=_volume("--volume"), help="gain: decibels (6dB; write --volume=-3dB for a cut) or a factor (2, 0.5); peaks are limited, never clipped")
    o.add_argument("--loudness", type=_loudness("--loudness"), metavar="LUFS", help="normalise to this integrated loudness (e.g. -16); streams are measured on their first sentence")
    o.add_argument("--lead-silence", type=_silence("--lead-silence"), metavar="SECONDS", help="silence before the speech, for speakers that wake up late (default: 0)")
    o.add_argument("--tail-silence", type=_silence("--tail-silence"), metavar="SECONDS", help="silence after the speech (default: 0)")
    o.add_argument("--output-rate", type=_output_rate("--output-rate"), metavar="HZ", help=f"sample rate sent to clients: {', '.join(map(str, OUTPUT_RATES))} (default: the voice's own)")
    o.add_argument("--chime", type=_wav_file("--chime"), metavar="FILE", help="WAV file played before the speech")
    p.add_argument(
        "--preset", action="append", default=[], metavar="NAME=VOICE[:STYLE],KEY=VALUE,...",
        help="a named voice with its own options (repeatable), e.g. alarm=openjtalk-mei:High,volume=6dB,lead_silence=0.5; "
        "keys: speed, sentence_silence, sdp_ratio, noise, noise_w, style_weight, pitch_scale, intonation_scale, "
        "volume, loudness, lead_silence, tail_silence, output_rate, chime",
    )
    p.add_argument(
        "--max-text-length", type=_positive_int("--max-text-length"), default=DEFAULT_MAX_TEXT_LENGTH,
        help="longest text (characters) one request may carry (default: %(default)s)",
    )
    p.add_argument("--debug", action="store_true", help="log DEBUG messages")
    p.add_argument("--log-format", default=logging.BASIC_FORMAT, help="format of log messages")
    p.add_argument("--version", action="version", version=__version__, help="print the version and exit")
    return p


def _check_uri(uri: str) -> str:
    parsed = urlparse(uri)
    if parsed.scheme == "tcp":
        try:
            port = parsed.port
        except ValueError:
            port = None
        if not parsed.hostname or port is None:
            raise SettingsError(f"--uri {uri!r}: tcp:// needs a host and a port, e.g. tcp://0.0.0.0:10200")
    elif parsed.scheme == "unix":
        if not parsed.path:
            raise SettingsError(f"--uri {uri!r}: unix:// needs a socket path, e.g. unix:///run/hayakoe.sock")
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
            raise SettingsError(f"--voice {text!r}: voice {spec.name!r} is given twice with different sources")
        if clash is None:
            voices.append(spec)
    default_voice = args.default_voice.strip() if args.default_voice else None
    if default_voice:
        if "=" in default_voice:
            raise SettingsError(f"--default-voice {args.default_voice!r}: give a name; put NAME=SOURCE in --voice")
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
    from .presets import parse_presets  # presets build on this module's types

    presets = parse_presets(args.preset)
    for preset in presets:  # a preset's voice is loaded like --default-voice's
        if all(v.name != preset.voice for v in voices):
            voices.append(VoiceSpec(preset.voice))
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
        output=OutputDefaults(
            volume=args.volume,
            loudness=args.loudness,
            lead_silence=args.lead_silence,
            tail_silence=args.tail_silence,
            output_rate=args.output_rate,
            chime=args.chime,
        ),
        presets=presets,
        max_text_length=args.max_text_length,
        warmup=not args.no_warmup,
        compile=args.compile,
        debug=args.debug,
        log_format=args.log_format,
    )


def parse_settings(argv: Sequence[str] | None = None, environ: dict[str, str] | None = None) -> Settings:
    """Parse the command line into `Settings` (argparse exits with a message on bad flags)."""
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        return settings_from_args(args, environ)
    except SettingsError as exc:
        parser.error(str(exc))
        raise  # unreachable: parser.error exits
