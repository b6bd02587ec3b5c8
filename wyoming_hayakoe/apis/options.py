"""The engine API's flags → `EngineApiSettings` (part of `wyoming_hayakoe.settings.Settings`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from ..flags import SettingsError
from ..web.options import MIN_TOKEN_LENGTH, allowed_host_name, check_token, is_loopback
from .openai_voices import OpenAIVoiceError, assigned_voices, parse_openai_voice

__all__ = [
    "AIVISSPEECH_PORT",
    "DEFAULT_API_HOST",
    "VOICEVOX_PORT",
    "EngineApiSettings",
    "add_engine_api_arguments",
    "engine_api_settings_from_args",
]

DEFAULT_API_HOST = "127.0.0.1"
AIVISSPEECH_PORT = 10101
"""AivisSpeech Engine's port: what a client set up for AivisSpeech already names."""
VOICEVOX_PORT = 50021


@dataclass(frozen=True)
class EngineApiSettings:
    """Where the engine APIs listen and who may use them. `token` never appears in `repr`."""

    host: str = DEFAULT_API_HOST
    port: int = AIVISSPEECH_PORT
    token: str | None = field(default=None, repr=False)
    """Required as ``Authorization: Bearer T`` when set (OpenAI clients send their API key
    so); needed for any bind other than loopback."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names answered besides `host`, ``localhost`` and loopback when no token is set."""
    openai_voices: tuple[tuple[str, str], ...] = ()
    """``--openai-voice NAME=VOICE``: an OpenAI voice name (lower case) → the served voice it
    speaks with; OpenAI's names not given speak with the default voice."""

    def openai_voice_table(self, default_voice: str) -> dict[str, str]:
        """Each OpenAI voice name → the voice it speaks with (the page shows it)."""
        return assigned_voices(dict(self.openai_voices), default_voice)


def add_engine_api_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group(
        "engine APIs: VOICEVOX / AivisSpeech and OpenAI speech (off unless --engine-api-port)"
    )
    g.add_argument(
        "--engine-api-port",
        type=int,
        metavar="PORT",
        help=f"serve the VOICEVOX / AivisSpeech engine API and OpenAI's /v1/audio/speech on "
        f"PORT (AivisSpeech uses {AIVISSPEECH_PORT}, VOICEVOX {VOICEVOX_PORT}; 0: any free port)",
    )
    g.add_argument(
        "--engine-api-host",
        default=DEFAULT_API_HOST,
        metavar="HOST",
        help="address the engine APIs bind (default %(default)s; another needs a token)",
    )
    g.add_argument(
        "--engine-api-token",
        help="token asked as 'Authorization: Bearer TOKEN' (at least "
        f"{MIN_TOKEN_LENGTH} visible ASCII characters)",
    )
    g.add_argument("--engine-api-token-file", type=Path, help="file holding the token")
    g.add_argument(
        "--engine-api-allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="without a token the engine APIs answer only requests addressed to their own "
        "address, localhost or loopback; also answer to NAME (repeatable)",
    )
    g.add_argument(
        "--openai-voice",
        action="append",
        default=[],
        metavar="NAME=VOICE",
        help="OpenAI's voice NAME (alloy, ash, ... cedar) speaks with the served VOICE "
        "(a voice, VOICE:STYLE or a preset; repeatable); OpenAI's names not given speak "
        "with the default voice",
    )


def engine_api_settings_from_args(args: argparse.Namespace) -> EngineApiSettings | None:
    """The engine APIs' settings, or None when ``--engine-api-port`` is not given."""
    if args.engine_api_port is None:
        if args.engine_api_token or args.engine_api_token_file or args.engine_api_allowed_host:
            raise SettingsError("--engine-api-token/-allowed-host need --engine-api-port")
        if args.openai_voice:
            raise SettingsError("--openai-voice needs --engine-api-port")
        return None
    if not 0 <= args.engine_api_port <= 65535:
        raise SettingsError(f"--engine-api-port {args.engine_api_port}: a port, 0 to 65535")
    token = args.engine_api_token
    if token is not None:
        token = check_token("--engine-api-token", token)
    if args.engine_api_token_file is not None:
        if token:
            raise SettingsError("give --engine-api-token or --engine-api-token-file, not both")
        try:
            token = args.engine_api_token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise SettingsError(f"--engine-api-token-file: {exc}") from None
        if not token:
            raise SettingsError("--engine-api-token-file: the file is empty")
        token = check_token("--engine-api-token-file", token)
    host = args.engine_api_host.strip().strip("[]") or DEFAULT_API_HOST
    if not is_loopback(host) and not token:
        raise SettingsError(
            f"--engine-api-host {host}: engine APIs reachable from other machines need "
            "--engine-api-token or --engine-api-token-file (or bind 127.0.0.1)"
        )
    allowed = tuple(dict.fromkeys(allowed_host_name(h) for h in args.engine_api_allowed_host))
    voices: dict[str, str] = {}
    for spec in args.openai_voice:
        try:
            name, voice = parse_openai_voice(spec)
        except OpenAIVoiceError as exc:
            raise SettingsError(str(exc)) from None
        voices[name] = voice  # the last one given for a name wins
    return EngineApiSettings(
        host=host,
        port=args.engine_api_port,
        token=token or None,
        allowed_hosts=allowed,
        openai_voices=tuple(voices.items()),
    )
