"""Issue 54 finding 12, through the real program and its page's HTTP API: uploads arriving
together share ``--library-max-upload`` (six begun at once under a 4 MB limit never hold
more than 4 MB; the one that would pass it is refused while it arrives, 413 ``too_large``,
and the room is given back however an upload ends), and a voice name is one name in any
Unicode form (``café`` composed and decomposed is one voice; ``.``, ``..`` and names with
characters no one sees are refused)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import unicodedata
from pathlib import Path

import pytest

from tests.helpers.net import closed_endpoint, free_port
from tests.helpers.program import Program
from tests.server.library.test_library_server import Page, _server_args
from wyoming_hayakoe.client import WyomingClient
from wyoming_hayakoe.library.state import PARTIAL_DIR, read_state

pytestmark = pytest.mark.timeout(600)

MB = 1024 * 1024
LIMIT_MB = 4
UPLOADS = 6
FIRST = 1 * MB
"""Bytes each upload sends before it waits for the others (6 × 1 MB > 4 MB)."""
SIZE = 2 * MB
"""Bytes of each upload's file."""


class SlowUpload:
    """One multipart upload on a raw connection: the head and `FIRST` bytes of its file, then
    the rest once `go` is set; the answer read meanwhile (a refusal may come mid-body)."""

    BOUNDARY = "hayakoe-bounds-boundary"

    def __init__(self, port: int, index: int, go: asyncio.Event, size: int = SIZE) -> None:
        self.port, self.index, self.go, self.size = port, index, go, size
        self.answered = asyncio.Event()
        self.status = 0
        """0: the connection was reset with no answer."""
        self.body: dict = {}
        self.reset = False

    def _parts(self) -> tuple[bytes, bytes]:
        b = self.BOUNDARY
        head = (
            f'--{b}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="voice{self.index}.aivmx"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        return head, f"\r\n--{b}--\r\n".encode()

    async def run(self) -> None:
        head, tail = self._parts()
        length = len(head) + self.size + len(tail)
        request = (
            f"POST /api/library/install HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            f"Origin: http://127.0.0.1:{self.port}\r\n"
            f"Content-Type: multipart/form-data; boundary={self.BOUNDARY}\r\n"
            f"Content-Length: {length}\r\nConnection: close\r\n\r\n"
        ).encode()
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        data = bytes([self.index]) * self.size

        async def send() -> None:
            with contextlib.suppress(ConnectionError):
                writer.write(request + head + data[:FIRST])
                await writer.drain()
                await self.go.wait()
                writer.write(data[FIRST:] + tail)
                await writer.drain()

        sender = asyncio.create_task(send())
        answer = b""
        try:
            while chunk := await asyncio.wait_for(reader.read(1 << 16), 120):
                answer += chunk
        except ConnectionResetError:  # the answer, if any, came before
            self.reset = True
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender
            writer.close()
        if answer:
            status_line, _, rest = answer.partition(b"\r\n")
            self.status = int(status_line.split()[1])
            self.body = json.loads(rest.partition(b"\r\n\r\n")[2])
        self.answered.set()


async def _jobs_ended(page: Page, timeout: float = 120) -> list[dict]:
    end = time.monotonic() + timeout
    while True:
        _, listing = await page.get("/api/library")
        jobs = listing["jobs"]
        if all(j["state"] in ("ready", "failed", "cancelled") for j in jobs):
            return jobs
        assert time.monotonic() < end, jobs
        await asyncio.sleep(0.1)


async def test_uploads_arriving_together_share_the_limit(layout_root: Path, tmp_path: Path) -> None:
    library, cache = tmp_path / "library", tmp_path / "cache"
    port, http = free_port(), free_port()
    args = _server_args(port, http, closed_endpoint(), library, cache, layout_root)
    args += ["--library-max-upload", str(LIMIT_MB)]
    page = Page(http)
    async with Program(*args) as prog:
        await prog.wait_ready(timeout=300)
        go = asyncio.Event()
        uploads = [SlowUpload(http, i, go) for i in range(UPLOADS)]
        tasks = [asyncio.create_task(u.run()) for u in uploads]
        # the rest of each file goes once one upload is answered (a refusal while the
        # first megabytes arrive), or after 20 s (before the fix: nothing is refused)
        waiters = [asyncio.create_task(u.answered.wait()) for u in uploads]
        await asyncio.wait(waiters, timeout=20, return_when=asyncio.FIRST_COMPLETED)
        refused_early = sum(u.answered.is_set() for u in uploads)
        go.set()
        await asyncio.gather(*tasks)
        for w in waiters:
            w.cancel()
        accepted = [u for u in uploads if u.status == 202]
        refused = [u for u in uploads if u.status != 202]
        answers = [(u.status, u.reset, u.body) for u in uploads]
        assert refused_early >= 1, answers
        assert len(accepted) * SIZE <= LIMIT_MB * MB, answers  # never more than the limit
        assert accepted, answers
        told = [u for u in refused if u.status]  # the others were cut off with no answer
        assert told, answers
        for u in told:
            assert (u.status, u.body["code"], u.body["field"]) == (413, "too_large", "file")
            assert "--library-max-upload" in u.body["error"], u.body
        # the accepted files are not voices: their jobs fail, and every byte is given back
        jobs = await _jobs_ended(page)
        assert {j["error_code"] for j in jobs} == {"file_invalid"}, jobs
        partial = library / PARTIAL_DIR
        assert not partial.is_dir() or list(partial.iterdir()) == []
        # the room is whole again: an upload of the whole limit is taken in full
        whole = SlowUpload(http, 9, go, size=LIMIT_MB * MB)
        await whole.run()
        assert whole.status == 202, whole.body
        await _jobs_ended(page)
        assert await prog.stop() == 0, prog.log


NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")


async def test_a_name_is_one_name_in_any_unicode_form(
    aivm_files, layout_root: Path, tmp_path: Path
) -> None:
    assert NFC != NFD
    library, cache = tmp_path / "library", tmp_path / "cache"
    port, http = free_port(), free_port()
    args = _server_args(port, http, closed_endpoint(), library, cache, layout_root)
    page = Page(http)
    client = WyomingClient(f"tcp://127.0.0.1:{port}", timeout=120)
    async with Program(*args) as prog:
        await prog.wait_ready(timeout=300)
        for bad in (".", "..", "....", "a\u200bb", "a\u00a0b", "\u3164"):
            status, answer = await page.upload(aivm_files.one, bad)
            assert (status, answer["code"], answer["field"]) == (400, "name_invalid", "name"), (
                bad,
                answer,
            )
        job = await page.finished(*await page.upload(aivm_files.one, NFD))
        assert job["state"] == "ready", job
        assert job["voices"] == [NFC], job  # stored composed
        job = await page.finished(*await page.upload(aivm_files.one, NFC))
        assert (job["state"], job["error_code"]) == ("failed", "name_taken"), job
        assert [e.name for e in read_state(library).entries] == [NFC]
        info = await client.describe()
        names = [v.name for p in info.tts for v in p.voices]
        assert NFC in names and NFD not in names, names
        # a request naming the voice decomposed is spoken by it, with no fallback
        audio = await client.speak("こんにちは。", NFD)
        assert audio.pcm
        end = time.monotonic() + 30
        while not any(" Spoke " in line for line in prog.lines):
            assert time.monotonic() < end, prog.log
            await asyncio.sleep(0.05)
        spoke = next(line for line in prog.lines if " Spoke " in line)
        assert f" with {NFC}/" in spoke, prog.log
        assert "unknown voice" not in prog.log.lower(), prog.log
        assert await prog.stop() == 0, prog.log
