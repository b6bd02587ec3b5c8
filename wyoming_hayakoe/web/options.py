"""The web page's flags → `HttpSettings` (part of `wyoming_hayakoe.settings.Settings`)."""

from __future__ import annotations

import argparse
import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..flags import SettingsError

__all__ = [
    "DEFAULT_HTTP_HOST",
    "INGRESS_PROXY",
    "MIN_TOKEN_LENGTH",
    "HttpSettings",
    "add_http_arguments",
    "allowed_host_name",
    "check_token",
    "http_settings_from_args",
    "is_loopback",
]

DEFAULT_HTTP_HOST = "127.0.0.1"
INGRESS_PROXY = "172.30.32.2"
"""The Home Assistant Supervisor's ingress proxy: the only peer an ingress panel serves."""
MIN_TOKEN_LENGTH = 16
"""Characters a token (the page's, the engine APIs') has at least: a secret, not a word."""


@dataclass(frozen=True)
class HttpSettings:
    """Where the page listens and who may use it. `token` never appears in `repr`."""

    host: str = DEFAULT_HTTP_HOST
    port: int = 8080
    token: str | None = field(default=None, repr=False)
    """Required (Bearer header, cookie or ``?token=``) when set."""
    ingress: bool = False
    """Home Assistant ingress: only `allowed_peers` are served, under ``X-Ingress-Path``."""
    allowed_peers: tuple[str, ...] = (INGRESS_PROXY,)
    dictionary: Path | None = None
    """The CSV file the page edits (also read by the server as a user dictionary)."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names (lower case, no port) the page answers to besides `host` and loopback
    (``localhost``, 127.0.0.1, ::1): checked against ``Host`` and ``Origin`` when no token
    is set, so that a name rebound to 127.0.0.1 reaches nothing (DNS rebinding)."""


def add_http_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("web page (off unless --http is given)")
    g.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help=f"serve the web page (voices, try it, readings, dictionary, status) on HOST:PORT "
        f"(default host {DEFAULT_HTTP_HOST}; another host needs --http-token)",
    )
    g.add_argument(
        "--http-token",
        help=f"token the page asks for (at least {MIN_TOKEN_LENGTH} visible ASCII characters; "
        "compared in constant time)",
    )
    g.add_argument("--http-token-file", type=Path, help="file holding the token")
    g.add_argument(
        "--http-ingress",
        action="store_true",
        help=f"Home Assistant ingress panel: serve only the Supervisor's proxy ({INGRESS_PROXY}) "
        "under its X-Ingress-Path",
    )
    g.add_argument(
        "--http-allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="without a token the page answers only requests addressed to its own address, "
        "localhost or a loopback address (a name rebound to 127.0.0.1 by another site is "
        "refused); also answer to NAME (a host name or address, no port; repeatable), e.g. "
        "the name of a local reverse proxy",
    )
    g.add_argument(
        "--http-dict",
        type=Path,
        metavar="FILE",
        help="CSV user dictionary the page edits (created when missing; read like --user-dict, "
        "whose files win for the same word)",
    )


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address) is this machine's loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_port(text: str) -> tuple[str, int]:
    value = text.strip()
    host, sep, port_text = value.rpartition(":")
    if not sep:
        host, port_text = "", value
    host = host.strip("[]") or DEFAULT_HTTP_HOST
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise SettingsError(f"--http {text!r}: give HOST:PORT or PORT, e.g. 127.0.0.1:8080")
    return host, port


_HOST_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$")


def allowed_host_name(text: str) -> str:
    """`text` as an allowed host: a DNS name or an IP address, lower case, brackets and a
    trailing dot dropped; `SettingsError` for anything else (a port, a scheme, a path)."""
    value = text.strip().lower()
    bare = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    try:
        return ipaddress.ip_address(bare).compressed
    except ValueError:
        pass
    if len(value) > 253 or not _HOST_NAME.match(value):
        raise SettingsError(
            f"--http-allowed-host {text!r}: give a host name or an address, without a port "
            "(e.g. hayakoe.lan)"
        )
    return value.rstrip(".")


def check_token(flag: str, token: str) -> str:
    """`token` as given by `flag` (``--http-token``, or the file of ``--http-token-file``),
    or `SettingsError` in one line: empty or only spaces, a character other than visible
    ASCII inside (a space, a control character, a letter a header cannot carry:
    ``Authorization: Bearer TOKEN``), or shorter than
    `MIN_TOKEN_LENGTH` characters (one that can be guessed guards nothing)."""
    if not token.strip():
        raise SettingsError(f"{flag}: the token is empty (or only spaces)")
    if any(not "!" <= c <= "~" for c in token):
        raise SettingsError(
            f"{flag}: the token may hold only visible ASCII characters (no spaces, no "
            "control characters)"
        )
    if len(token) < MIN_TOKEN_LENGTH:
        raise SettingsError(
            f"{flag}: the token has {len(token)} characters; give at least "
            f"{MIN_TOKEN_LENGTH} (e.g. `openssl rand -hex 16`)"
        )
    return token


def http_settings_from_args(args: argparse.Namespace) -> HttpSettings | None:
    """The page's settings, or None when ``--http`` is not given (its other flags need it)."""
    if args.http is None:
        others = [
            name
            for name, value in (
                ("--http-token", args.http_token),
                ("--http-token-file", args.http_token_file),
                ("--http-dict", args.http_dict),
                ("--http-allowed-host", args.http_allowed_host),
            )
            if value
        ] + (["--http-ingress"] if args.http_ingress else [])
        if others:
            raise SettingsError(f"{', '.join(others)} need(s) --http HOST:PORT")
        return None
    host, port = _host_port(args.http)
    token = args.http_token
    if token is not None:
        token = check_token("--http-token", token)
    if args.http_token_file is not None:
        if token:
            raise SettingsError("give --http-token or --http-token-file, not both")
        try:
            token = args.http_token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise SettingsError(f"--http-token-file {args.http_token_file}: {exc}") from None
        if not token:
            raise SettingsError(f"--http-token-file {args.http_token_file}: the file is empty")
        token = check_token(f"--http-token-file {args.http_token_file}", token)
    if not args.http_ingress and not is_loopback(host) and not token:
        raise SettingsError(
            f"--http {args.http!r}: a page reachable from other machines needs "
            "--http-token or --http-token-file (or bind 127.0.0.1)"
        )
    dictionary = args.http_dict
    if dictionary is not None and dictionary.suffix.lower() != ".csv":
        raise SettingsError(f"--http-dict {dictionary}: the page writes CSV; name a .csv file")
    allowed = tuple(dict.fromkeys(allowed_host_name(h) for h in args.http_allowed_host))
    return HttpSettings(
        host=host,
        port=port,
        token=token or None,
        ingress=args.http_ingress,
        dictionary=dictionary,
        allowed_hosts=allowed,
    )
