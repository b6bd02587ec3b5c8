"""Voices installed, updated and removed through the voice library while the engine APIs
serve (issue 47: "installing, updating and removing voices while requests run on these APIs
fails none of them"), in the lifecycle users give it: the real program on loopback with the
library, the page and the engine API on; the stand-in AivisHub (`tests.helpers.aivishub`)
publishing small random-weight `.aivmx` files; real clients someone else wrote
(`voicevox-client`, the `openai` SDK with `base_url`, streaming included).

Requests go back to back on voice A (VOICEVOX: ``/audio_query`` + ``/synthesis``; OpenAI:
every ``response_format``, whole and streamed) while voice B is installed through the page's
API (its download held half-way by the hub), updated to a new version and removed; requests
on B run from its install to past its removal. Then A is updated, and removed, each while an
OpenAI stream on A is in flight: the stream's reader pauses after its first bytes, and its
audio outgrows every buffer on the way (the kernel's, the client's small receive buffer), so
the server cannot finish it before the test reads on. That it is still running server-side
is what the server itself says: the update's job stays ``loading`` (it waits for the old
version's requests) and the remove does not answer, while both lists already show the
change.

Every answer is checked: a VOICEVOX WAV through the `wave` module (all its frames there), the
OpenAI formats decoded by PyAV (``pcm`` raw), each one equal in length and samples to the
first answer to the same request (the seed is fixed, and a new version of these files has the
same weights), the held streams equal to the same text read whole before any change. A
request on a voice being removed either finishes whole or gets the documented refusal (404
``{"detail"}`` for a style ID, OpenAI's 400 listing the voices), and every request after the
removal gets that refusal. ``GET /speakers`` and ``GET /v1/audio/voices`` follow each change;
A's style IDs (AivisSpeech's, from the speaker UUID) never move. Every wait is bounded by an
event (a job's state, a list's change, a number of answers, a stream's first bytes)."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import math
import socket
import time
import wave
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest

from engine.aivm import read_metadata
from tests.helpers.aivishub import HubModel, StandInHub, later_version
from tests.helpers.net import free_port
from tests.helpers.program import Program
from tests.server.library.test_library_server import Page, _server_args
from wyoming_hayakoe.apis.style_ids import aivis_style_id

openai = pytest.importorskip("openai")
av = pytest.importorskip("av")
vvclient = pytest.importorskip("vvclient")
httpx = pytest.importorskip("httpx2")

pytestmark = pytest.mark.timeout(400)

EMBEDDED = "openjtalk-mei"
VOICE_A = "tsukuyomi-test"
TEXT = "はい、元気です。"
SENTENCE = "今日は晴れです。"
FORMATS = ("wav", "flac", "mp3", "opus", "aac", "pcm")
WAIT_S = 120.0
"""Bound of every wait for an event (a hang fails the test instead of stopping it)."""
RECEIVE_BUFFER = 64 * 1024
"""The held stream's receive buffer (small, so that the server's writes wait for the
reader; big enough that the rest is read in a second once the reader goes on)."""


def _later_multi(aivm_files: Any, out: Path, version: str) -> Path:
    """The two-speaker test file published again as `version` (same UUID and weights)."""
    from tests.helpers.aivm import write_aivmx

    spec = dataclasses.replace(aivm_files.multi_spec, version=version)
    graph = aivm_files.graphs / "multi.onnx"
    return write_aivmx(graph, out, aivm_files.configs["multi"], aivm_files.vectors, spec)


# -- decoding and comparing answers ---------------------------------------------------------


def wav_samples(data: bytes) -> np.ndarray:
    """A VOICEVOX WAV's samples, every frame its header declares present."""
    with wave.open(io.BytesIO(data)) as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1
        frames = w.readframes(w.getnframes())
        assert len(frames) == 2 * w.getnframes(), "the WAV is cut short"
        rate = w.getframerate()
    samples = np.frombuffer(frames, np.int16)
    assert samples.size > rate // 10 and np.abs(samples).max() > 100, "no speech in the WAV"
    return samples


def openai_samples(data: bytes, fmt: str) -> np.ndarray:
    """An OpenAI answer decoded back (24 kHz mono; Opus at its own 48 kHz)."""
    if fmt == "pcm":
        assert len(data) % 2 == 0
        samples = np.frombuffer(data, np.int16).astype(np.float32) / 32768
    else:
        with av.open(io.BytesIO(data)) as container:
            frames = list(container.decode(audio=0))
        rate = 48000 if fmt == "opus" else 24000  # Opus decodes at 48 kHz
        assert frames and all(f.sample_rate == rate for f in frames), fmt
        samples = np.concatenate([f.to_ndarray().astype(np.float32).reshape(-1) for f in frames])
        if samples.dtype != np.float32 or np.abs(samples).max() > 1.5:  # integer formats
            samples = samples / 32768
    assert samples.size > 2400 and np.abs(samples).max() > 0.003, f"no speech in the {fmt}"
    return samples


def assert_same_audio(first: np.ndarray, again: np.ndarray, what: str) -> None:
    """`again` is the whole of `first`: as long, the same samples (one step of int16 apart
    at most, as a streamed decode's windows may round)."""
    assert again.size == first.size, f"{what}: {again.size} samples, first {first.size}"
    scale = 32768 if first.dtype != np.int16 else 1
    diff = np.abs(first.astype(np.float64) - again.astype(np.float64)) * scale
    assert float(diff.max()) <= 64, f"{what}: samples differ by {diff.max()}"


@dataclass
class Answers:
    """The first answer to each request, and every answer after it compared to it."""

    first: dict[str, np.ndarray] = field(default_factory=dict)

    def check(self, key: str, samples: np.ndarray) -> None:
        known = self.first.setdefault(key, samples)
        assert_same_audio(known, samples, key)


# -- traffic: back-to-back requests on one voice through one client ------------------------


class Gone(Exception):
    """The documented refusal of a voice that is not served (any more)."""


@dataclass
class Outcome:
    phase: str
    started: float
    ended: float
    result: str
    """``ok``, ``gone`` or the failure in one line."""


class Traffic:
    """`request(i)` back to back until `stop`: each outcome kept with the phase it began in;
    `Gone` counts as the documented refusal, anything else raised as a failure."""

    def __init__(self, name: str, run: Run, request: Callable[[int], Awaitable[None]]) -> None:
        self.name = name
        self.run = run
        self.request = request
        self.outcomes: list[Outcome] = []
        self._stop = False
        self._changed = asyncio.Condition()
        self.task = asyncio.create_task(self._loop(), name=f"traffic-{name}")

    async def _loop(self) -> None:
        i = 0
        while not self._stop:
            phase, started = self.run.phase, time.monotonic()
            try:
                await self.request(i)
                result = "ok"
            except Gone:
                result = "gone"
            except Exception as exc:  # noqa: BLE001 - kept, the test fails on it
                result = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
            self.outcomes.append(Outcome(phase, started, time.monotonic(), result))
            i += 1
            async with self._changed:
                self._changed.notify_all()
            if result not in ("ok", "gone"):
                return  # one failure is enough to report

    def count(self, result: str = "ok") -> int:
        return sum(o.result == result for o in self.outcomes)

    async def more(self, n: int = 1, result: str = "ok", since: float | None = None) -> None:
        """Until `n` more requests ended with `result` (begun after `since`, if given)."""

        def seen() -> int:
            return sum(
                o.result == result and (since is None or o.started > since) for o in self.outcomes
            )

        goal = (0 if since is not None else seen()) + n
        async with asyncio.timeout(WAIT_S), self._changed:
            while seen() < goal:
                self.failed_check()
                await self._changed.wait()
        self.failed_check()

    def failed_check(self) -> None:
        bad = [o for o in self.outcomes if o.result not in ("ok", "gone")]
        assert not bad, f"{self.name}: {bad[0].result} (in phase {bad[0].phase})\n{self.run.log()}"

    async def stop(self) -> None:
        self._stop = True
        await asyncio.wait_for(self.task, WAIT_S)
        self.failed_check()


@dataclass
class Run:
    """The test's shared facts: where the program listens, the phase now."""

    api: str
    page: Page
    log: Callable[[], str]
    """The program's log so far (for a failure's message)."""
    phase: str = "start"
    answers: Answers = field(default_factory=Answers)


# -- the clients ----------------------------------------------------------------------------


Request = Callable[[int], Awaitable[None]]


def vv_request(run: Run, client: Any, style_id: int, voice: str) -> Request:
    """VOICEVOX's two steps with voicevox-client: a query, then its WAV."""

    async def request(i: int) -> None:
        try:
            query = await client.create_audio_query(TEXT, style_id)
            wav = await query.synthesis(style_id)
        except vvclient.errors.NotFoundError:  # 404: no style has the ID
            raise Gone from None
        run.answers.check(f"voicevox {voice}", wav_samples(wav))

    return request


def openai_request(run: Run, client: Any, voice: str) -> Request:
    """OpenAI's speech, every format in turn, each whole and then streamed."""

    async def request(i: int) -> None:
        fmt = FORMATS[(i // 2) % len(FORMATS)]
        body = {"model": "tts-1", "voice": voice, "input": TEXT, "response_format": fmt}
        try:
            if i % 2 == 0:
                data = (await client.audio.speech.create(**body)).content
            else:
                async with client.audio.speech.with_streaming_response.create(**body) as r:
                    assert r.headers.get("transfer-encoding") == "chunked"
                    data = b"".join([c async for c in r.iter_bytes()])
        except openai.BadRequestError as exc:
            if f"available: {EMBEDDED}" in str(exc) and voice in str(exc):
                raise Gone from None  # 400 naming the voice, listing those served
            raise
        run.answers.check(f"openai {voice} {fmt}", openai_samples(data, fmt))

    return request


def openai_client(api: str, **kwargs: Any) -> Any:
    return openai.AsyncOpenAI(base_url=f"{api}/v1", api_key="unused", max_retries=0, **kwargs)


class HeldSpeech:
    """An OpenAI stream (pcm) whose reader pauses after the first bytes: its audio outgrows
    the buffers between the server and the reader, so the server cannot finish it (the voice
    stays busy) until `finish` reads on."""

    def __init__(self, api: str, voice: str, text: str) -> None:
        self.api, self.voice, self.text = api, voice, text
        self._stack = AsyncExitStack()
        self.first = b""

    async def __aenter__(self) -> HeldSpeech:
        options = [(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)]
        transport = httpx.AsyncHTTPTransport(socket_options=options)
        http = await self._stack.enter_async_context(
            httpx.AsyncClient(transport=transport, timeout=WAIT_S)
        )
        client = openai_client(self.api, http_client=http)
        self._response = await self._stack.enter_async_context(
            client.audio.speech.with_streaming_response.create(
                model="tts-1", voice=self.voice, input=self.text, response_format="pcm"
            )
        )
        self._chunks = self._response.iter_bytes()
        async with asyncio.timeout(WAIT_S):
            while not self.first:
                self.first = await anext(self._chunks)
        return self

    async def finish(self) -> bytes:
        async with asyncio.timeout(WAIT_S):
            rest = [c async for c in self._chunks]
        return self.first + b"".join(rest)

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()


# -- what the program lists -----------------------------------------------------------------


async def speakers(run: Run) -> dict[str, dict[str, Any]]:
    async with aiohttp.ClientSession() as s, s.get(f"{run.api}/speakers") as r:
        assert r.status == 200
        return {sp["name"]: sp for sp in await r.json()}


async def openai_voices(run: Run) -> list[str]:
    async with aiohttp.ClientSession() as s, s.get(f"{run.api}/v1/audio/voices") as r:
        assert r.status == 200
        return [v["id"] for v in (await r.json())["voices"]]  # Open WebUI's shape


def style_ids(listed: dict[str, Any]) -> dict[str, int]:
    return {st["name"]: st["id"] for st in listed["styles"]}


async def until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Until `check()` holds, asked again as soon as it answers (each ask is a request the
    program answers: the wait is bounded by its answers and `WAIT_S`)."""
    async with asyncio.timeout(WAIT_S):
        while not await check():
            await asyncio.sleep(0.02)
    assert await check(), what


async def job_state(run: Run, job_id: str) -> dict[str, Any]:
    status, job = await run.page.get(f"/api/library/jobs/{job_id}")
    assert status == 200, job
    return job


# -- the test ---------------------------------------------------------------------------------


async def test_installs_updates_and_removes_fail_no_request(
    aivm_files, layout_root: Path, tmp_path: Path
) -> None:
    a_next = later_version(aivm_files, tmp_path / "a-1.1.0.aivmx", "1.1.0")
    b_next = _later_multi(aivm_files, tmp_path / "b-1.1.0.aivmx", "1.1.0")
    a_meta = read_metadata(aivm_files.one).manifest
    b_meta = read_metadata(aivm_files.multi).manifest
    a_ids = {st.name: aivis_style_id(a_meta.speakers[0].uuid, st.local_id)
             for st in a_meta.speakers[0].styles}  # fmt: skip

    hub = await StandInHub().start()
    hub.add(HubModel(aivm_files.one))
    b_held = asyncio.Event()
    b_first = hub.add(HubModel(aivm_files.multi, hold=b_held))
    library, cache = tmp_path / "library", tmp_path / "cache"
    port, http, api_port = free_port(), free_port(), free_port()
    args = _server_args(port, http, hub.api, library, cache, layout_root)
    # a held download outlasts the hub's read timeout; removes wait for the held streams
    args += ["--aivishub-timeout", "60", "--drain-timeout", "90"]
    args += ["--engine-api-port", str(api_port)]
    traffic: list[Traffic] = []
    async with AsyncExitStack() as stack:
        stack.push_async_callback(hub.stop)
        prog = await stack.enter_async_context(Program(*args))
        run = Run(f"http://127.0.0.1:{api_port}", Page(http), lambda: prog.log[-6000:])
        page = run.page
        await prog.wait_ready(timeout=WAIT_S)
        vv = await stack.enter_async_context(vvclient.Client(run.api))
        oa = openai_client(run.api)
        stack.push_async_callback(oa.close)
        stack.push_async_callback(_stopped, traffic)

        # A from the hub, as the page installs it
        job = await page.finished(*await page.post("/api/library/install", {"source": a_meta.uuid}))
        assert job["state"] == "ready" and job["voices"] == [VOICE_A], job
        listed = await speakers(run)
        assert list(listed) == [EMBEDDED, VOICE_A]
        assert style_ids(listed[VOICE_A]) == a_ids  # AivisSpeech's IDs
        embedded_ids = style_ids(listed[EMBEDDED])
        a_style = a_ids["ノーマル"]
        voices = await openai_voices(run)
        assert VOICE_A in voices and f"{VOICE_A}:Happy" in voices

        async def lists_keep_a() -> dict[str, dict[str, Any]]:
            now = await speakers(run)
            assert style_ids(now[VOICE_A]) == a_ids and style_ids(now[EMBEDDED]) == embedded_ids
            return now

        # requests on A, back to back, from here to A's removal
        a_traffic = [
            Traffic("voicevox A", run, vv_request(run, vv, a_style, VOICE_A)),
            Traffic("openai A", run, openai_request(run, oa, VOICE_A)),
        ]
        traffic.extend(a_traffic)
        for t in a_traffic:
            await t.more()

        # B installed from the hub; its download held half-way
        run.phase = "B downloading"
        status, answer = await page.post("/api/library/install", {"source": b_meta.uuid})
        assert status == 202, answer
        b_job = answer["job"]
        await asyncio.wait_for(b_first.reached.wait(), WAIT_S)
        assert (await job_state(run, b_job))["state"] == "downloading"
        # A's reference for the held streams: the long text read whole, before any change
        per = len(await _pcm(oa, VOICE_A, SENTENCE * 2)) / 2
        wmem = int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
        long_text = SENTENCE * math.ceil((wmem + 4 * RECEIVE_BUFFER + 1.5 * 2**20) / per)
        assert len(long_text) <= 4096, len(long_text)
        reference = await _pcm(oa, VOICE_A, long_text)
        for t in a_traffic:
            await t.more()
        b_held.set()
        states = await _follow_job(run, b_job, a_traffic)
        assert "loading" in states, states
        job = await job_state(run, b_job)
        assert job["state"] == "ready", job
        b_voices = list(job["voices"])
        assert len(b_voices) == 2, b_voices
        listed = await lists_keep_a()
        assert list(listed) == [EMBEDDED, VOICE_A, *b_voices]
        b_ids = {v: style_ids(listed[v]) for v in b_voices}
        voices = await openai_voices(run)
        assert all(v in voices for v in b_voices)

        # requests on B too, from now to past its removal
        b_style = next(iter(b_ids[b_voices[0]].values()))
        b_traffic = [
            Traffic("voicevox B", run, vv_request(run, vv, b_style, b_voices[0])),
            Traffic("openai B", run, openai_request(run, oa, b_voices[1])),
        ]
        traffic.extend(b_traffic)
        for t in b_traffic:
            await t.more()

        # B updated to 1.1.0: the new version loads beside the old, swapped between requests
        run.phase = "B updating"
        hub.add(HubModel(b_next))
        status, answer = await page.post("/api/library/update", {"name": b_voices[0]})
        assert status == 202, answer
        states = await _follow_job(run, answer["job"], a_traffic + b_traffic)
        job = await job_state(run, answer["job"])
        assert job["state"] == "ready" and job["action"] == "update", job
        listed = await lists_keep_a()
        assert [listed[v]["version"] for v in b_voices] == ["1.1.0", "1.1.0"]
        assert {v: style_ids(listed[v]) for v in b_voices} == b_ids  # same UUIDs, same IDs
        for t in a_traffic + b_traffic:
            await t.more()

        # B removed while its requests run: each finishes whole or is refused as documented
        run.phase = "B removing"
        removing = time.monotonic()
        status, answer = await page.post("/api/library/remove", {"name": b_voices[0]})
        assert status == 200 and sorted(answer["removed"]) == sorted(b_voices), answer
        removed = time.monotonic()
        run.phase = "B removed"
        listed = await lists_keep_a()
        assert list(listed) == [EMBEDDED, VOICE_A]
        voices = await openai_voices(run)
        assert not any(v.startswith(b_voices[0].rsplit("-", 1)[0]) for v in voices), voices
        for t in b_traffic:
            await t.more(1, "gone", since=removed)
            await t.stop()
            assert t.count("ok") >= 2, t.outcomes
            early = [o for o in t.outcomes if o.result == "gone" and o.ended < removing]
            assert not early, early  # refused only once the remove was asked
            late = [o for o in t.outcomes if o.result == "ok" and o.started > removed]
            assert not late, late  # never served after the remove answered
        await _refused(run, oa, b_style, b_voices[0])
        for t in a_traffic:
            await t.more()

        # A updated while a stream on A (1.0.0) is in flight: the swap happens at once, the
        # job waits for the stream, which ends whole on the old version
        run.phase = "A updating"
        hub.add(HubModel(a_next))
        async with HeldSpeech(run.api, VOICE_A, long_text) as held:
            status, answer = await page.post("/api/library/update", {"name": VOICE_A})
            assert status == 202, answer
            a_job = answer["job"]

            async def swapped() -> bool:
                return (await speakers(run))[VOICE_A]["version"] == "1.1.0"

            await until(swapped, "A 1.1.0 never listed")
            job = await job_state(run, a_job)
            assert job["state"] == "loading", job  # the old version still has the stream
            await lists_keep_a()
            audio = await held.finish()
        assert audio == reference, (len(audio), len(reference))
        job = await page.finished(202, {"job": a_job}, timeout=WAIT_S)
        assert job["state"] == "ready" and job["voices"] == [VOICE_A], job
        for t in a_traffic:
            await t.more()

        # A removed while a stream on A (1.1.0) is in flight, and A's traffic goes on
        run.phase = "A removing"
        async with HeldSpeech(run.api, VOICE_A, long_text) as held:
            removing = time.monotonic()
            remove = asyncio.create_task(page.post("/api/library/remove", {"name": VOICE_A}))

            async def unlisted() -> bool:
                return VOICE_A not in await speakers(run) and VOICE_A not in await openai_voices(
                    run
                )

            await until(unlisted, "A still listed")
            assert not remove.done()  # it waits for the stream, which is still running
            audio = await held.finish()
        assert audio == reference, (len(audio), len(reference))
        status, answer = await asyncio.wait_for(remove, WAIT_S)
        assert status == 200 and answer["removed"] == [VOICE_A], answer
        removed = time.monotonic()
        run.phase = "A removed"
        for t in a_traffic:
            await t.more(1, "gone", since=removed)
            await t.stop()
            early = [o for o in t.outcomes if o.result == "gone" and o.ended < removing]
            assert not early, early
            late = [o for o in t.outcomes if o.result == "ok" and o.started > removed]
            assert not late, late
        await _refused(run, oa, a_style, VOICE_A)

        # the program serves on, and its lists are what is left
        listed = await speakers(run)
        assert list(listed) == [EMBEDDED] and style_ids(listed[EMBEDDED]) == embedded_ids
        assert all(v == EMBEDDED or v.startswith(f"{EMBEDDED}:") for v in await openai_voices(run))
        embedded_style = embedded_ids["Neutral"]
        await vv_request(run, vv, embedded_style, EMBEDDED)(0)
        for i in range(2 * len(FORMATS)):
            await openai_request(run, oa, EMBEDDED)(i)
        for bad in ("Traceback", "Engine API:", " ERROR "):
            assert bad not in prog.log, prog.log
        assert await prog.stop() == 0
    total = {t.name: (t.count("ok"), t.count("gone")) for t in traffic}
    print("answers (ok, refused) by traffic:", total)


async def _pcm(client: Any, voice: str, text: str) -> bytes:
    answer = await client.audio.speech.create(
        model="tts-1", voice=voice, input=text, response_format="pcm"
    )
    return bytes(answer.content)


async def _follow_job(run: Run, job_id: str, traffic: list[Traffic]) -> list[str]:
    """The job's states until it ends, each seen while every traffic answered a request
    begun after it was seen (the traffic runs on through each state)."""
    states: list[str] = []
    try:
        async with asyncio.timeout(WAIT_S):
            while True:
                state = (await job_state(run, job_id))["state"]
                if state in ("ready", "failed", "cancelled"):
                    return states
                states.append(state)
                run.phase = f"{run.phase.split(':')[0]}: {state}"
                seen = time.monotonic()
                for t in traffic:
                    await t.more(1, since=seen)
    except TimeoutError:
        last = {t.name: t.outcomes[-1] if t.outcomes else None for t in traffic}
        raise AssertionError(
            f"job {job_id} in {states} after {WAIT_S:g} s; last answers {last}\n{run.log()}"
        ) from None


async def _refused(run: Run, client: Any, style_id: int, voice: str) -> None:
    """A removed voice's requests get the documented refusals, not a 500 or a hang."""
    async with aiohttp.ClientSession() as s:
        params = {"speaker": style_id, "text": TEXT}
        async with s.post(f"{run.api}/audio_query", params=params) as r:
            assert r.status == 404, await r.text()
            assert str(style_id) in (await r.json())["detail"]
        query = {"accent_phrases": [], "speedScale": 1.0}
        async with s.post(f"{run.api}/synthesis", params={"speaker": style_id}, json=query) as r:
            assert r.status == 404, await r.text()
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.speech.create(model="tts-1", voice=voice, input=TEXT)
    assert voice in str(caught.value) and EMBEDDED in str(caught.value)


async def _stopped(traffic: list[Traffic]) -> None:
    for t in traffic:
        t._stop = True
        if not t.task.done():
            t.task.cancel()
    await asyncio.gather(*(t.task for t in traffic), return_exceptions=True)
