"""The scripts inside the images, run for real: entrypoint, bake-voices, health check.

`wyoming-hayakoe` is replaced by a stub that records argv and environment
(tests/stubs/bin); what it recorded is parsed by the server's and the download command's
own parsers. The health check talks to real Wyoming servers over loopback TCP.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from wyoming.event import async_read_event, async_write_event
from wyoming.info import Attribution, Describe, Info, TtsProgram, TtsVoice

from tests.helpers.paths import REPO_ROOT
from wyoming_hayakoe.commands.download import build_parser as download_parser
from wyoming_hayakoe.settings import VoiceSpec, parse_settings

DOCKER = REPO_ROOT / "docker"
STUBS = REPO_ROOT / "tests" / "stubs"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HF_", "HAYAKOE_", "VOICES", "AWS_"))
    }
    env["PATH"] = f"{STUBS / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["STUB_RECORD"] = str(tmp_path / "record")
    env.update(extra)
    return env


def _recorded(tmp_path: Path) -> tuple[list[str], dict[str, str]] | None:
    if not (tmp_path / "record.argv").exists():
        return None
    argv = [a.decode() for a in (tmp_path / "record.argv").read_bytes().split(b"\0")[:-1]]
    env = dict(
        e.decode().split("=", 1)
        for e in (tmp_path / "record.env").read_bytes().split(b"\0")
        if b"=" in e
    )
    return argv, env


# --- entrypoint -------------------------------------------------------------------------------


def _entrypoint(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(DOCKER / "entrypoint.sh"), *args],
        env=_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_entrypoint_starts_the_server_with_the_baked_voices_then_the_given_flags(tmp_path):
    proc = _entrypoint(
        tmp_path,
        "--default-style",
        "Happy",
        "--speed",
        "1.2",
        HAYAKOE_URI="tcp://0.0.0.0:10200",
        HAYAKOE_DEVICE="cuda",
        HAYAKOE_CACHE="/var/lib/hayakoe",
        HAYAKOE_VOICES="jvnv-F1-jp, mine=hf://someone/voices",
    )
    assert proc.returncode == 0, proc.stderr
    argv, _ = _recorded(tmp_path)
    s = parse_settings(argv, environ={})
    assert s.uri == "tcp://0.0.0.0:10200"
    assert s.device == "cuda"
    assert s.cache_dir == Path("/var/lib/hayakoe")
    assert s.voices == (VoiceSpec("jvnv-F1-jp"), VoiceSpec("mine", "hf://someone/voices"))
    assert s.default_style == "Happy" and s.synthesis.get("speed") == 1.2


def test_entrypoint_with_no_baked_voices_and_no_environment(tmp_path):
    proc = _entrypoint(tmp_path)
    assert proc.returncode == 0, proc.stderr
    argv, _ = _recorded(tmp_path)
    assert "--voice" not in argv and "--cache-dir" not in argv
    s = parse_settings(argv, environ={})
    assert s.device == "cpu" and s.uri == "tcp://0.0.0.0:10200"


def test_entrypoint_runs_download_and_other_commands(tmp_path):
    proc = _entrypoint(tmp_path, "download", "--voice", "jvnv-M1-jp", HAYAKOE_VOICES="x")
    assert proc.returncode == 0, proc.stderr
    assert _recorded(tmp_path)[0] == ["download", "--voice", "jvnv-M1-jp"]
    proc = _entrypoint(tmp_path, "library", "add", "jvnv-M2-jp", HAYAKOE_VOICES="x")
    assert proc.returncode == 0, proc.stderr
    assert _recorded(tmp_path)[0] == ["library", "add", "jvnv-M2-jp"]
    proc = _entrypoint(tmp_path, "echo", "hello from the container")
    assert proc.stdout.strip() == "hello from the container"


def test_entrypoint_passes_the_server_exit_code(tmp_path):
    proc = _entrypoint(tmp_path, STUB_EXIT_CODE="3")
    assert proc.returncode == 3


# --- bake-voices ------------------------------------------------------------------------------


def _bake(tmp_path: Path, stub_dir: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    environ = _env(
        tmp_path,
        HAYAKOE_CACHE=str(tmp_path / "cache"),
        HAYAKOE_SECRETS_DIR=str(tmp_path / "secrets"),
        **env,
    )
    if stub_dir is not None:
        environ["PATH"] = f"{stub_dir}{os.pathsep}{environ['PATH']}"
    return subprocess.run(
        [str(DOCKER / "bake-voices.sh")],
        env=environ,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_bake_downloads_every_voice_for_the_device_with_the_token_from_the_secret_file(tmp_path):
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "hf_token").write_text("hf_build_secret_42\n")
    (secrets / "aws").write_text("[default]\naws_access_key_id = x\n")
    proc = _bake(
        tmp_path,
        VOICES="jvnv-F1-jp,mine=s3://bucket/voices  other=hf://a/b",
        DEVICE="cuda",
        BERT_SOURCE="hf://someone/bert",
    )
    assert proc.returncode == 0, proc.stderr
    argv, env = _recorded(tmp_path)
    assert argv[0] == "download"
    args = download_parser().parse_args(argv[1:])
    assert args.voice == ["jvnv-F1-jp", "mine=s3://bucket/voices", "other=hf://a/b"]
    assert args.device == ["cuda"]
    assert args.cache_dir == tmp_path / "cache"
    assert args.bert_source == "hf://someone/bert"
    assert args.hf_token_file == secrets / "hf_token"
    # The token is read from the file by the command: not an argument, not in the environment.
    assert not any("hf_build_secret_42" in a for a in argv)
    assert not any("hf_build_secret_42" in v for v in env.values())
    assert env["AWS_SHARED_CREDENTIALS_FILE"] == str(secrets / "aws")


def test_bake_without_secrets_or_bert_source(tmp_path):
    proc = _bake(tmp_path, VOICES="jvnv-F1-jp", DEVICE="cpu")
    assert proc.returncode == 0, proc.stderr
    argv, env = _recorded(tmp_path)
    args = download_parser().parse_args(argv[1:])
    assert args.hf_token_file is None and "--bert-source" not in argv
    assert args.device == ["cpu"]
    assert "AWS_SHARED_CREDENTIALS_FILE" not in env


def test_bake_int8_quantizes_each_neural_voice_after_the_download(tmp_path):
    from wyoming_hayakoe.commands.quantize import build_parser as quantize_parser

    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "hf_token").write_text("hf_build_secret_43\n")
    voices = "openjtalk-mei,jvnv-F1-jp mine=s3://bucket/voices"
    proc = _bake(tmp_path, VOICES=voices, DEVICE="cpu", INT8="1", BERT_SOURCE="hf://x/bert")
    assert proc.returncode == 0, proc.stderr
    assert "int8 graphs for jvnv-F1-jp" in proc.stderr and "int8 graphs for mine" in proc.stderr
    assert "openjtalk-mei (" not in proc.stderr  # the embedded voice has no decoder to quantize
    argv, env = _recorded(tmp_path)  # the stub keeps the last call: the last voice's
    assert argv[0] == "quantize"
    args = quantize_parser().parse_args(argv[1:])
    assert (args.src, args.name, args.out_root) == ("s3://bucket/voices", "mine", None)
    assert args.cache_dir == tmp_path / "cache" and args.bert_source == "hf://x/bert"
    assert args.hf_token_file == secrets / "hf_token"
    assert not any("hf_build_secret_43" in a for a in argv)
    # CUDA images (PyTorch) have no int8 decoder: download only.
    proc = _bake(tmp_path, VOICES="jvnv-F1-jp", DEVICE="cuda", INT8="1")
    assert proc.returncode == 0, proc.stderr
    assert _recorded(tmp_path)[0][0] == "download"


def test_bake_with_no_voices_downloads_nothing(tmp_path):
    proc = _bake(tmp_path, VOICES=" ")
    assert proc.returncode == 0, proc.stderr
    assert _recorded(tmp_path) is None
    assert (tmp_path / "cache").is_dir(), "the runtime stage copies the folder: it must exist"


def test_bake_fails_when_the_download_fails(tmp_path):
    proc = _bake(tmp_path, VOICES="jvnv-F1-jp", STUB_EXIT_CODE="1")
    assert proc.returncode != 0


def test_bake_refuses_a_cache_that_contains_the_token(tmp_path):
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "hf_token").write_text("hf_leaky_token_7")
    leaky = tmp_path / "leaky"
    leaky.mkdir()
    stub = leaky / "wyoming-hayakoe"
    stub.write_text(
        "#!/usr/bin/env bash\n"
        "# a download that writes the token into the cache (as a careless tool might)\n"
        'while [[ $# -gt 0 ]]; do case "$1" in --cache-dir) c="$2"; shift;; --hf-token-file) '
        't="$2"; shift;; esac; shift; done\n'
        'mkdir -p "$c/hf" && cp "$t" "$c/hf/token"\n'
    )
    stub.chmod(0o755)
    proc = _bake(tmp_path, stub_dir=leaky, VOICES="jvnv-F1-jp")
    assert proc.returncode != 0
    assert "token" in proc.stderr and "refusing" in proc.stderr
    assert "hf_leaky_token_7" not in proc.stderr + proc.stdout


# --- health check -----------------------------------------------------------------------------

Behaviour = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def _info(installed_voices: int) -> Info:
    attribution = Attribution(name="test", url="https://example.invalid")
    voices = [
        TtsVoice(
            name=f"v{i}",
            attribution=attribution,
            installed=True,
            description=None,
            version=None,
            languages=["ja"],
        )
        for i in range(installed_voices)
    ]
    return Info(
        tts=[
            TtsProgram(
                name="hayakoe",
                attribution=attribution,
                installed=True,
                description=None,
                version="0",
                voices=voices,
            )
        ]
    )


def _answers(info: Info) -> Behaviour:
    async def behave(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (event := await async_read_event(reader)) is not None:
            if Describe.is_type(event.type):
                await async_write_event(info.event(), writer)
        writer.close()

    return behave


async def _silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await asyncio.sleep(30)
    writer.close()


async def _hangs_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await async_read_event(reader)
    writer.close()


class _Server:
    """A Wyoming-speaking TCP server on 127.0.0.1 in a background event loop."""

    def __init__(self, behave: Behaviour) -> None:
        self.loop = asyncio.new_event_loop()
        self.behave = behave
        started = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(self.loop)

            async def start() -> None:
                self.server = await asyncio.start_server(self.behave, "127.0.0.1", 0)
                self.port = self.server.sockets[0].getsockname()[1]
                started.set()

            self.loop.run_until_complete(start())
            self.loop.run_forever()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        assert started.wait(10)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def _healthcheck(*args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "HAYAKOE_URI"}
    environ.update(env)
    return subprocess.run(
        [sys.executable, str(DOCKER / "healthcheck.py"), *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("behave", "healthy", "reason"),
    [
        (_answers(_info(2)), True, ""),
        (_answers(_info(0)), False, "no installed text-to-speech voice"),
        (_answers(Info()), False, "no installed text-to-speech voice"),
        (_hangs_up, False, "closed the connection"),
        (_silent, False, "within 2 s"),
    ],
    ids=["two-voices", "no-voices", "no-tts", "hangs-up", "silent"],
)
def test_healthcheck_is_healthy_only_when_describe_lists_a_voice(behave, healthy, reason):
    server = _Server(behave)
    try:
        proc = _healthcheck("--uri", f"tcp://127.0.0.1:{server.port}", "--timeout", "2")
    finally:
        server.close()
    assert (proc.returncode == 0) == healthy, proc.stderr
    assert reason in proc.stderr


def test_healthcheck_follows_the_port_in_hayakoe_uri():
    server = _Server(_answers(_info(1)))
    try:
        proc = _healthcheck(HAYAKOE_URI=f"tcp://0.0.0.0:{server.port}")
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr


def test_healthcheck_reports_a_closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = _healthcheck("--uri", f"tcp://127.0.0.1:{port}", "--timeout", "2")
    assert proc.returncode == 1
    assert "cannot connect to" in proc.stderr and "connection refused" in proc.stderr
