"""A Wyoming ``describe`` prober in a process of its own (`python -m
tests.helpers.describe_probe PORT`): asks every 50 ms on one connection until its stdin
closes; prints ``ready`` once the first answer came back, and at the end the latencies
(seconds, one per line). A process of its own, so that what the test itself does (reading a
large answer, say) does not delay the prober's own loop."""

from __future__ import annotations

import json
import select
import socket
import sys
import time


def _read_event(buffered: bytearray, sock: socket.socket) -> str:
    """The next event's type (its data and payload skipped)."""
    while b"\n" not in buffered:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        buffered.extend(chunk)
    line, _, rest = bytes(buffered).partition(b"\n")
    header = json.loads(line)
    skip = int(header.get("data_length") or 0) + int(header.get("payload_length") or 0)
    while len(rest) < skip:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        rest += chunk
    buffered[:] = rest[skip:]
    return str(header["type"])


def main(port: int) -> None:
    sock = socket.create_connection(("127.0.0.1", port))
    buffered = bytearray()
    latencies: list[float] = []
    while True:
        started = time.monotonic()
        sock.sendall(b'{"type": "describe"}\n')
        while _read_event(buffered, sock) != "info":
            pass
        latencies.append(time.monotonic() - started)
        if len(latencies) == 1:
            print("ready", flush=True)
        ready, _, _ = select.select([sys.stdin], [], [], 0.05)
        if ready and not sys.stdin.buffer.read1(1):
            break
    sock.close()
    print("\n".join(f"{s:.6f}" for s in latencies), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
