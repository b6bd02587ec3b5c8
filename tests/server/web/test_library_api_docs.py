"""docs/web.md's "HTTP API of the library" examples, run as written (bash and curl) against
the real program with a stand-in AivisHub behind `--aivishub-api`: install by page URL with
its job followed to the end, a cancel refused once the job has ended (then dismissed), an
upload, an update that finds no newer version, a remove; the library's listing agrees
afterwards."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import aiohttp
import pytest

from tests.helpers.aivishub import HubModel, StandInHub
from tests.helpers.net import free_port
from tests.helpers.paths import REPO_ROOT
from tests.helpers.program import Program

pytestmark = [
    pytest.mark.timeout(600),  # the fixtures too: minutes on a loaded machine
    pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed"),
]

SECTION = "## HTTP API of the library"


def _example() -> str:
    text = (REPO_ROOT / "docs" / "web.md").read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    match = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert match is not None, "no sh example in the section"
    return match.group(1)


async def test_the_documented_curl_calls_work(aivm_files, layout_root: Path, tmp_path: Path):
    hub = await StandInHub().start()
    model = hub.add(HubModel(aivm_files.one))
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(aivm_files.multi, work / "voice.aivmx")
    port, http = free_port(), free_port()
    page = f"http://127.0.0.1:{http}"
    script = _example()
    assert "PAGE=http://127.0.0.1:8080\n" in script and "<uuid>" in script
    script = script.replace("PAGE=http://127.0.0.1:8080", f"PAGE={page}")
    script = script.replace("<uuid>", model.uuid)
    args = ["--uri", f"tcp://127.0.0.1:{port}", "--http", f"127.0.0.1:{http}"]
    args += ["--library-dir", str(tmp_path / "library"), "--cache-dir", str(tmp_path / "cache")]
    args += ["--aivishub-api", hub.api, "--bert-source", str(layout_root)]
    args += ["--threads", "1", "--no-warmup", "--precision", "fp32"]
    try:
        async with Program(*args) as prog:
            await prog.wait_ready(timeout=240)
            proc = await asyncio.create_subprocess_exec(
                "bash",
                "-euo",
                "pipefail",
                "-c",
                script,
                cwd=work,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(proc.communicate(), 180)
            output = out.decode()
            assert proc.returncode == 0, (output, err.decode(), prog.log)
            lines = output.splitlines()
            assert json.loads(lines[0])["installed"] == []
            size = aivm_files.one.stat().st_size
            ended = [line for line in lines if line.split(" ")[0] in ("ready", "failed")]
            assert ended[0] == f"ready {size} {size} ", output  # the install, followed
            assert ended[1].startswith("ready "), output  # the upload
            assert ended[2].startswith("ready "), output  # the update: no newer version
            refused = json.loads(next(line for line in lines if '"field": "job"' in line))
            assert "has ended" in refused["error"], refused
            assert refused["code"] == "job_ended", refused
            dismissed = json.loads(next(line for line in lines if '"dismissed"' in line))
            assert json.loads(lines[-1]) == {"removed": ["mai"]}
            async with aiohttp.ClientSession() as s, s.get(page + "/api/library") as r:
                listing = await r.json()
            installed = {e["name"]: e for e in listing["installed"]}
            assert dismissed["dismissed"] not in {j["id"] for j in listing["jobs"]}, listing
            assert len(listing["jobs"]) == 2, listing  # the upload and the update
            assert installed["mine"]["served"] is True and installed["mine"]["problem"] is None
            assert set(installed) == {"mine"}, listing
            assert installed["mine"]["voices"] == ["mine-alice", "mine-bob"]
            assert installed["mine"]["source"] == "upload:voice.aivmx"
            await prog.stop()
    finally:
        await hub.stop()
