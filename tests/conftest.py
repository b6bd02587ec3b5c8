"""Shared fixtures: the embedded voice (prepared once), in-process servers on loopback, a
stand-in Hub, and a small hayakoe-layout root."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.event import Event

from engine import EMBEDDED_VOICE_NAME, TTS, Speaker, layout
from tests.helpers.stores import FakeHub, hayakoe_tree


def _logging_state() -> tuple[list[logging.Handler], int, dict[str, int]]:
    from wyoming_hayakoe.logs import NOISY_LIBRARIES

    root = logging.getLogger()
    levels = {name: logging.getLogger(name).level for name in NOISY_LIBRARIES}
    return list(root.handlers), root.level, levels


_PRISTINE_LOGGING = _logging_state()
"""Logging as the interpreter had it before any test (pytest's own handlers included)."""


@pytest.fixture(autouse=True)
def logging_as_it_was() -> Iterator[None]:
    """The root logger's handlers and level, and those of the libraries
    `wyoming_hayakoe.logs.setup_logging` quiets, back as they were before any test, after
    each test: a command run in-process (`main([...])`, in a test or a module fixture) sets
    logging up for the whole interpreter, and the tests after it would read its handler's
    lines on stderr and miss DEBUG records."""
    yield
    handlers, level, levels = _PRISTINE_LOGGING
    root = logging.getLogger()
    root.handlers[:] = [h for h in root.handlers if h in handlers or _pytest_handler(h)]
    root.setLevel(level)
    for name, old in levels.items():
        logging.getLogger(name).setLevel(old)


def _pytest_handler(handler: logging.Handler) -> bool:
    """pytest's capture handlers (caplog, the report's log capture) stay: pytest removes
    them itself."""
    return type(handler).__module__.startswith("_pytest")


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache root of the test session's own (derived graphs, int8 graphs, exports), so
    tests never write into the user's ~/.cache/hayakoe; tests that set HAYAKOE_CACHE or pass
    a cache_dir still get theirs."""
    import os

    root = tmp_path_factory.mktemp("hayakoe-cache")
    old = os.environ.get("HAYAKOE_CACHE")
    os.environ.setdefault("HAYAKOE_CACHE", str(root))
    yield Path(os.environ["HAYAKOE_CACHE"])
    if old is None:
        os.environ.pop("HAYAKOE_CACHE", None)


@pytest.fixture(scope="session")
def embedded_speakers() -> dict[str, Speaker]:
    """The embedded OpenJTalk voice, prepared once for the whole session."""
    return TTS().load(EMBEDDED_VOICE_NAME).prepare().speakers


@pytest.fixture
def embedded(embedded_speakers: dict[str, Speaker]) -> Speaker:
    return embedded_speakers[EMBEDDED_VOICE_NAME]


@pytest.fixture
async def start_server(embedded_speakers):
    """`await start_server(speakers=None, **settings_fields)` → a running `HayakoeServer` on
    127.0.0.1 (default: the embedded voice)."""
    from wyoming_hayakoe.server import HayakoeServer
    from wyoming_hayakoe.settings import Settings

    servers: list[Any] = []

    async def start(speakers: dict[str, Speaker] | None = None, **fields: Any):
        fields.setdefault("uri", "tcp://127.0.0.1:0")
        if speakers is not None:
            fields.setdefault("voices", ())
            fields.setdefault("default_voice", next(iter(speakers)))
        server = HayakoeServer(Settings(**fields), speakers or embedded_speakers)
        await server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()


class Wy:
    """Small client-side helpers for the server tests."""

    @staticmethod
    def client(server: Any, timeout: float = 20.0) -> AsyncTcpClient:
        return AsyncTcpClient("127.0.0.1", server.port, read_timeout=timeout)

    @staticmethod
    async def read_until(client: AsyncTcpClient, event_type: str) -> list[Event]:
        """Events up to and including the first of `event_type` (fails on EOF)."""
        events: list[Event] = []
        while True:
            event = await client.read_event()
            assert event is not None, (
                f"connection closed before {event_type}; got {[e.type for e in events]}"
            )
            events.append(event)
            if event.type == event_type:
                return events

    @staticmethod
    async def quiet(client: AsyncTcpClient, seconds: float = 0.3) -> Event | None:
        """The next event if one arrives within `seconds`, else None."""
        try:
            return await asyncio.wait_for(client.read_event(), timeout=seconds)
        except asyncio.TimeoutError:
            return None

    @staticmethod
    def pcm(events: list[Event]) -> bytes:
        return b"".join(e.payload or b"" for e in events if e.type == "audio-chunk")

    @staticmethod
    def types(events: list[Event]) -> list[str]:
        return [e.type for e in events]

    @staticmethod
    def now() -> float:
        return time.monotonic()


@pytest.fixture
def wy() -> type[Wy]:
    return Wy


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    """A stand-in Hugging Face Hub on loopback serving hayakoe-layout trees: the official
    repository's name, `someone/voices` (voices alpha, beta) and `someone/private` (gamma)."""
    official = layout.OFFICIAL_SOURCE.removeprefix("hf://")
    server = FakeHub(
        {
            official: hayakoe_tree(),
            "someone/voices": hayakoe_tree(),
            "someone/private": hayakoe_tree(("gamma",)),
        }
    ).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def layout_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hayakoe's layout with small models, as an official repository would hold it: the test
    BERT (hidden 64, exported to int8 ONNX) and a random-weight synthesizer of matching BERT
    width named `LAYOUT_VOICE`, in both backends' folders (built once per session)."""
    from tests.helpers.voices import LAYOUT_VOICE, build_layout_root  # imports torch

    return build_layout_root(tmp_path_factory.mktemp("layout"), LAYOUT_VOICE)


@pytest.fixture(scope="session")
def aivm_files(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """AivisHub test files made by the real tools (`tests.helpers.aivm`), once per session:
    a one-speaker three-style .aivmx, a two-speaker .aivmx and an .aivm, in one folder."""
    from tests.helpers.aivm import build_fixtures  # imports torch

    return build_fixtures(tmp_path_factory.mktemp("aivm"))
