"""A stand-in AivisHub API on loopback (aiohttp), answering as AivisHub's does:
``GET /v1/aivm-models/<uuid>`` (the model's JSON) and
``GET /v1/aivm-models/<uuid>/download?model_type=AIVMX`` (the file, through a redirect as
the real one answers). Models can lie about their size or checksum, or never answer, and a
download can be held part-way until the test lets it go on (`HubModel.hold`). A new version
is published by adding a model with the same UUID (`StandInHub.add` replaces it), as a model
page on AivisHub lists only its newest file."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from engine.aivm import read_metadata


def later_version(aivm_files: Any, out: Path, version: str) -> Path:
    """The one-speaker test file (`tests.helpers.aivm`'s fixtures) published again as
    `version`: the same UUID, name and voice, another version."""
    from tests.helpers.aivm import write_aivmx  # imports torch

    spec = dataclasses.replace(aivm_files.one_spec, version=version)
    graph = aivm_files.graphs / "one.onnx"
    return write_aivmx(graph, out, aivm_files.configs["one"], aivm_files.vectors, spec)


@dataclass
class HubModel:
    file: Path
    uuid: str = ""
    version: str = ""
    checksum: str | None = None
    file_size: int | None = None
    architecture: str = "Style-Bert-VITS2 (JP-Extra)"
    hang: bool = False
    """Never answer (a hub that does not respond)."""
    hold: asyncio.Event | None = None
    """Send the file's first half, then wait for this event before the rest (a download held
    part-way: what the server does meanwhile is timed by events, however fast the machine)."""
    reached: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once a held download has sent its first half."""

    def __post_init__(self) -> None:
        if not self.uuid or not self.version:
            manifest = read_metadata(self.file).manifest
            self.uuid = self.uuid or manifest.uuid
            self.version = self.version or manifest.version
        data = self.file.read_bytes()
        if self.checksum is None:
            self.checksum = hashlib.sha256(data).hexdigest()
        if self.file_size is None:
            self.file_size = len(data)

    def json(self) -> dict:
        return {
            "aivm_model_uuid": self.uuid,
            "name": self.file.stem,
            "description": "",
            "user": {"handle": "tester", "name": "Tester"},
            "speakers": [],
            "model_files": [
                {
                    "model_type": "AIVMX",
                    "version": self.version,
                    "file_size": self.file_size,
                    "checksum": self.checksum,
                    "license_type": "ACML 1.0",
                    "creators": ["Test Creator"],
                    "model_architecture": self.architecture,
                }
            ],
        }


@dataclass
class StandInHub:
    models: dict[str, HubModel] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    _runner: web.AppRunner | None = None
    _release: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0

    def add(self, model: HubModel) -> HubModel:
        """Serve `model`; one with the UUID of a model served already replaces it (a new
        version published)."""
        self.models[model.uuid] = model
        return model

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _model(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request.path)
        model = self.models.get(request.match_info["uuid"])
        if model is None:
            raise web.HTTPNotFound()
        if model.hang:
            await self._release.wait()  # until the hub stops
        return web.json_response(model.json())

    async def _download(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request.path)
        model = self.models.get(request.match_info["uuid"])
        if model is None or request.query.get("model_type") != "AIVMX":
            raise web.HTTPNotFound()
        raise web.HTTPFound(f"/files/{model.uuid}.aivmx")

    async def _file(self, request: web.Request) -> web.StreamResponse:
        model = self.models[request.match_info["uuid"]]
        if model.hold is None:
            return web.FileResponse(model.file)
        data = model.file.read_bytes()
        response = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        response.content_length = len(data)
        await response.prepare(request)
        half = len(data) // 2
        with contextlib.suppress(ConnectionResetError):  # the server stopped (a failed test)
            await response.write(data[:half])
            model.reached.set()
            await model.hold.wait()
            await response.write(data[half:])
            await response.write_eof()
        return response

    async def start(self) -> StandInHub:
        app = web.Application()
        app.router.add_get("/v1/aivm-models/{uuid}", self._model)
        app.router.add_get("/v1/aivm-models/{uuid}/download", self._download)
        app.router.add_get("/files/{uuid}.aivmx", self._file)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = getattr(site, "_server", None)
        self.port = int(server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        self._release.set()
        for model in self.models.values():
            if model.hold is not None:
                model.hold.set()
        if self._runner is not None:
            await self._runner.cleanup()
