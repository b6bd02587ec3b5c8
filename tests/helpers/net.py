"""Loopback ports for servers started by tests."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def closed_endpoint() -> str:
    """An http URL on loopback where nothing listens (connections are refused at once)."""
    return f"http://127.0.0.1:{free_port()}"
