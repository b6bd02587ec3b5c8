"""A user-dictionary word past the engine's bounds, on the real program (issue 54, finding 1):
the engine API and its import refuse it with a 422 naming the field and go on answering; a
dictionary file that already holds one (as an old version saved it), or a ``--user-dict``
file, or a watched file changed while serving, loads with the word skipped and a warning
naming the file and line, and the server starts and speaks. Before, each of these killed the
process in OpenJTalk's C code (a segfault, or a bus error)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize

from tests.helpers.net import free_port
from tests.helpers.program import Program
from tests.helpers.waiting import until

pytestmark = pytest.mark.timeout(240)

HEADER = "surface,reading,accent,priority,pos\n"


@contextlib.asynccontextmanager
async def _program(tmp_path: Path, *extra: str) -> AsyncIterator[tuple[Program, str, int]]:
    """The program with the page's dictionary, the engine API and Wyoming, on loopback."""
    wyoming, page, api = free_port(), free_port(), free_port()
    args = ["--uri", f"tcp://127.0.0.1:{wyoming}", "--http", f"127.0.0.1:{page}"]
    args += ["--engine-api-port", str(api), "--voice", "openjtalk-mei", "--no-warmup"]
    args += ["--http-dict", str(tmp_path / "page.csv"), "--cache-dir", str(tmp_path / "cache")]
    args += ["--library-dir", str(tmp_path / "library"), *extra]
    async with Program(*args) as prog:
        await prog.wait_ready(timeout=120)
        yield prog, f"http://127.0.0.1:{api}", wyoming


async def _speak(port: int, text: str) -> int:
    """Bytes of audio Wyoming answers for `text`."""
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Synthesize(text=text).event())
        audio = 0
        while (event := await client.read_event()) is not None:
            assert event.type != "error", event
            if event.type == "audio-chunk":
                audio += len(event.payload or b"")
            if event.type == "audio-stop":
                return audio
    raise AssertionError("closed before audio-stop")


async def _morae(s: aiohttp.ClientSession, base: str, text: str) -> list[str]:
    async with s.get(f"{base}/speakers") as r:
        style = (await r.json())[0]["styles"][0]["id"]
    async with s.post(f"{base}/audio_query", params={"text": text, "speaker": style}) as r:
        assert r.status == 200, await r.text()
        query = await r.json()
    return [m["text"] for p in query["accent_phrases"] for m in p["moras"]]


async def test_a_long_surface_is_422_on_the_engine_api_and_the_server_goes_on(
    tmp_path: Path,
) -> None:
    async with _program(tmp_path) as (prog, base, wyoming):
        async with aiohttp.ClientSession() as s:
            for length in (2048, 5000):
                word = {"surface": "a" * length, "pronunciation": "エー", "accent_type": "1"}
                async with s.post(f"{base}/user_dict_word", params=word) as r:
                    assert r.status == 422, await r.text()
                    detail = (await r.json())["detail"]
                assert detail[0]["loc"] == ["query", "surface"]
                assert f"at most 64 characters, got {length}" in detail[0]["msg"]
            key = "00000000-0000-4000-8000-000000000000"
            bad = {key: {"surface": "b" * 2048, "pronunciation": "ビー", "accent_type": 1}}
            async with s.post(f"{base}/import_user_dict", json=bad) as r:
                assert r.status == 422, await r.text()
                assert (await r.json())["detail"][0]["loc"] == ["body", key, "surface"]
            word = {"surface": "早声", "pronunciation": "ハヤコエ", "accent_type": "1"}
            async with s.post(f"{base}/user_dict_word", params=word) as r:
                assert r.status == 200, await r.text()
            async with s.get(f"{base}/user_dict") as r:
                assert [w["surface"] for w in (await r.json()).values()] == ["早声"]
            assert await _morae(s, base, "早声") == ["ハ", "ヤ", "コ", "エ"]
        assert await _speak(wyoming, "早声です。") > 0
        assert await prog.stop() == 0
    assert (tmp_path / "page.csv").read_text("utf-8").splitlines()[1:] == [
        "早声,ハヤコエ,1,5,proper_noun"
    ]


async def test_saved_and_given_long_words_are_skipped_at_start_and_reload(tmp_path: Path) -> None:
    page = tmp_path / "page.csv"  # as an old version saved it through the engine API
    page.write_text(HEADER + f"{'a' * 2048},エー,1,5,proper_noun\n鬼滅,キメツ,0,5,proper_noun\n")
    given = tmp_path / "words.json"
    given.write_text(
        json.dumps(
            [{"surface": "b" * 5000, "reading": "ビー"}, {"surface": "呪術", "reading": "ジュツ"}]
        ),
        encoding="utf-8",
    )
    watched = tmp_path / "words.csv"
    watched.write_text(f"{'c' * 2048},シー\n早声,ハヤコエ,1\n", encoding="utf-8")
    extra = ("--user-dict", str(given), "--user-dict", str(watched))
    async with _program(tmp_path, *extra) as (prog, base, wyoming):
        log = prog.log
        assert f"{page}:2: surface must be at most 64 characters, got 2048" in log
        assert f"{given}: words[0]: surface must be at most 64 characters, got 5000" in log
        assert f"{watched}:1: surface must be at most 64 characters, got 2048" in log
        async with aiohttp.ClientSession() as s:
            assert await _morae(s, base, "鬼滅") == ["キ", "メ", "ツ"]
            assert await _morae(s, base, "呪術") == ["ジュ", "ツ"]
        assert await _speak(wyoming, "鬼滅の呪術、早声。") > 0
        # the watcher: a file changed while serving, with a 5,000-character word
        watched.write_text(f"早声,ハヤコエ,1\n{'d' * 5000},ディー\n", encoding="utf-8")
        st = watched.stat()
        os.utime(watched, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
        assert await _speak(wyoming, "早声です。") > 0  # a request reloads the changed file
        await until(lambda: f"{watched}:2: surface must be at most 64" in prog.log, 30)
        assert await _speak(wyoming, "鬼滅です。") > 0
        assert await prog.stop() == 0
