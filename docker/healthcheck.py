#!/usr/bin/env python3
"""Container health check: a Wyoming `describe` round trip, not a bare port probe.

Healthy (exit 0) when the server at the URI answers `describe` with an `info` event that holds
an installed text-to-speech program with at least one installed voice; unhealthy (exit 1)
otherwise, with the reason on stderr (Docker keeps it in `docker inspect`). An open port alone
proves nothing: the server listens before its voices are loaded only if it is broken.

The URI defaults to $HAYAKOE_URI with a wildcard host (0.0.0.0, ::) replaced by loopback, so a
container whose port was changed through the environment is still checked on the right port.
The round trip is the project's Wyoming client (`wyoming_hayakoe.client`, installed in the
image's environment; importing it loads no engine): the image runs this file as
`python /opt/hayakoe/healthcheck.py`, the add-on as `hayakoe-healthcheck`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

from wyoming_hayakoe.client import ClientError, WyomingClient, installed_voices

DEFAULT_URI = "tcp://0.0.0.0:10200"
_WILDCARD_HOSTS = {"", "0.0.0.0", "::"}


def default_uri(environ: Mapping[str, str] = os.environ) -> str:
    """The server's URI from $HAYAKOE_URI, with a wildcard bind address made loopback."""
    uri = environ.get("HAYAKOE_URI") or DEFAULT_URI
    parts = urlsplit(uri)
    if parts.scheme != "tcp":
        return uri
    host = parts.hostname or ""
    if host in _WILDCARD_HOSTS:
        loopback = "[::1]" if ":" in host else "127.0.0.1"
        netloc = loopback if parts.port is None else f"{loopback}:{parts.port}"
        return urlunsplit(parts._replace(netloc=netloc))
    return uri


async def probe(uri: str, timeout: float) -> str | None:
    """Ask for `describe`; return why the server is unhealthy, or None."""
    info = await WyomingClient(uri, timeout=timeout).describe()
    if not installed_voices(info):
        return "the server's info lists no installed text-to-speech voice"
    return None


def check(uri: str, timeout: float) -> str | None:
    """Run `probe`, `timeout` seconds for the connection and for the answer; a failure to
    get it (no connection, no answer, a closed connection, an error event) is the reason."""
    try:
        return asyncio.run(probe(uri, timeout))
    except ClientError as err:
        return str(err)


def main(argv: list[str] | None = None) -> int:
    """Command line: exit 0 when healthy, 1 when not."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uri", default=None, help="server URI (default: from $HAYAKOE_URI)")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds (default 5)")
    args = parser.parse_args(argv)
    uri = args.uri or default_uri()
    reason = check(uri, args.timeout)
    if reason is not None:
        sys.stderr.write(f"unhealthy: {reason}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
