"""Every ``curl`` example of docs/engine-api.md and docs/openai-api.md, run as written (bash,
``set -euo pipefail``) against a real server on loopback: only the port, the style ID and the
voice name are put in (the docs' 10101, ``ID`` and ``jvnv-F1-jp``); each example's output
file is the audio it says."""

from __future__ import annotations

import asyncio
import io
import json
import re
import shutil
import wave
from pathlib import Path

import pytest

from engine import EMBEDDED_VOICE_NAME
from tests.helpers.paths import REPO_ROOT
from wyoming_hayakoe.apis.options import EngineApiSettings

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")

DOCS = ("engine-api.md", "openai-api.md")


def _curl_examples(name: str) -> list[str]:
    text = (REPO_ROOT / "docs" / name).read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, re.DOTALL)
    return [b for b in blocks if re.search(r"^\s*(q=\$\()?curl ", b, re.MULTILINE)]


def test_the_docs_have_curl_examples():
    assert [len(_curl_examples(n)) for n in DOCS] == [1, 1]


async def _run(script: str, cwd: Path) -> str:
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-euo",
        "pipefail",
        "-c",
        script,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, (script, out.decode(), err.decode())
    return out.decode()


@pytest.mark.parametrize("doc", DOCS)
async def test_each_curl_example_runs_as_written(start_server, tmp_path: Path, doc: str):
    server = await start_server(engine_api=EngineApiSettings(port=0))
    assert server.engine_api is not None
    port = server.engine_api.port
    style_id = await _run(
        f"curl -fsS http://127.0.0.1:{port}/speakers", tmp_path
    )  # the ID a reader looks up first
    sid = json.loads(style_id)[0]["styles"][0]["id"]
    for script in _curl_examples(doc):
        assert "10101" in script
        script = script.replace("10101", str(port)).replace("speaker=ID", f"speaker={sid}")
        script = script.replace("jvnv-F1-jp", EMBEDDED_VOICE_NAME)
        out = await _run(script, tmp_path)
        with wave.open(io.BytesIO((tmp_path / "hello.wav").read_bytes())) as w:
            assert w.getnframes() > w.getframerate() // 4  # speech, not an error body
        if doc == "openai-api.md":
            assert json.loads(out)["default"] == EMBEDDED_VOICE_NAME
        (tmp_path / "hello.wav").unlink()
