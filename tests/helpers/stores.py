"""Test helpers for the source tests: a tiny stand-in for the Hugging Face Hub on loopback,
an S3 server (moto) on loopback, and a small hayakoe-layout tree of files.

Only the endpoints huggingface_hub's `snapshot_download`, `file_exists` and `list_repo_tree`
use are served: repo info, tree listing, and `resolve` (HEAD/GET) for files.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def hayakoe_tree(voices: tuple[str, ...] = ("alpha", "beta")) -> dict[str, bytes]:
    """Small stand-in files laid out like hayakoe's repository (the bytes are not models)."""
    files = {
        "README.md": b"# stand-in\n",
        "bert/tokenizer/tokenizer_config.json": b'{"tokenizer_class": "BertJapaneseTokenizer"}',
        "bert/tokenizer/vocab.txt": b"[PAD]\n[CLS]\n[SEP]\n",
        "bert/tokenizer/special_tokens_map.json": b"{}",
        "onnx/bert/q8/bert_q8.onnx": b"onnx-bert-q8" * 100,
        "pytorch/bert/fp32/config.json": b'{"model_type": "deberta-v2"}',
        "pytorch/bert/fp32/model.safetensors": b"pt-bert" * 200,
    }
    for name in voices:
        files[f"onnx/speakers/{name}/config.json"] = json.dumps({"name": name}).encode()
        files[f"onnx/speakers/{name}/style_vectors.npy"] = b"npy" + name.encode()
        files[f"onnx/speakers/{name}/synthesizer.onnx"] = f"synth-{name}".encode() * 50
        files[f"onnx/speakers/{name}/duration_predictor.onnx"] = f"dp-{name}".encode() * 10
        files[f"pytorch/speakers/{name}/config.json"] = json.dumps({"name": name}).encode()
        files[f"pytorch/speakers/{name}/style_vectors.npy"] = b"npy" + name.encode()
        files[f"pytorch/speakers/{name}/{name}_e100_s1000.safetensors"] = f"pt-{name}".encode() * 50
    return files


def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def _blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    """A loopback HTTP server answering like the Hub for the repositories in `repos`.

    `required_token`: when set, requests without `Authorization: Bearer <token>` get 401.
    `requests` records (method, path) of every request, for "nothing else was fetched"."""

    def __init__(
        self, repos: dict[str, dict[str, bytes]], *, required_token: str | None = None
    ) -> None:
        self.repos = repos
        self.required_token = required_token
        self.requests: list[tuple[str, str]] = []
        self.auth_headers: list[str] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def downloaded(self) -> list[str]:
        """Paths of files whose bytes were served (GET on resolve URLs)."""
        out = []
        for method, path in self.requests:
            parts = path.split("/resolve/", 1)
            if method == "GET" and len(parts) == 2:
                out.append(parts[1].split("/", 1)[1])
        return out

    def start(self) -> FakeHub:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def do_HEAD(self) -> None:
                self._serve(head=True)

            def do_GET(self) -> None:
                self._serve(head=False)

            def _reply(
                self,
                status: int,
                body: bytes = b"",
                headers: dict | None = None,
                head: bool = False,
            ) -> None:
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                # No keep-alive: once stopped, the stand-in must be gone for every client.
                self.send_header("Connection", "close")
                self.close_connection = True
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def _json(self, data: object) -> None:
                self._reply(200, json.dumps(data).encode(), {"Content-Type": "application/json"})

            def _serve(self, head: bool) -> None:
                path = urlsplit(self.path).path
                hub.requests.append((self.command, path))
                auth = self.headers.get("Authorization", "")
                hub.auth_headers.append(auth)
                if hub.required_token and auth != f"Bearer {hub.required_token}":
                    self._reply(
                        401,
                        b"unauthorized",
                        {"X-Error-Message": "Invalid username or password."},
                        head,
                    )
                    return
                segments = [unquote(s) for s in path.split("/") if s]
                if segments[:2] == ["api", "models"] and len(segments) >= 6:
                    repo_id = "/".join(segments[2:4])
                    files = hub.repos.get(repo_id)
                    if files is None:
                        self._reply(404, b"", {"X-Error-Code": "RepoNotFound"}, head)
                        return
                    if segments[4] == "revision":
                        self._json(
                            {
                                "id": repo_id,
                                "sha": COMMIT,
                                "private": False,
                                "siblings": [{"rfilename": p} for p in sorted(files)],
                            }
                        )
                        return
                    if segments[4] == "tree":
                        sub = "/".join(segments[6:])
                        entries = [
                            {"type": "file", "oid": _blob_oid(d), "size": len(d), "path": p}
                            for p, d in sorted(files.items())
                            if not sub or p.startswith(sub + "/")
                        ]
                        if sub and not entries:
                            self._reply(404, b"", {"X-Error-Code": "EntryNotFound"}, head)
                            return
                        self._json(entries)
                        return
                if len(segments) >= 5 and segments[2] == "resolve":
                    repo_id = "/".join(segments[:2])
                    files = hub.repos.get(repo_id)
                    if files is None:
                        self._reply(404, b"", {"X-Error-Code": "RepoNotFound"}, head)
                        return
                    rel = "/".join(segments[4:])
                    if rel not in files:
                        self._reply(
                            404,
                            b"",
                            {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": COMMIT},
                            head,
                        )
                        return
                    data = files[rel]
                    self._reply(
                        200,
                        data,
                        {"X-Repo-Commit": COMMIT, "ETag": f'"{_blob_oid(data)}"'},
                        head,
                    )
                    return
                self._reply(404, b"", {}, head)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


@contextmanager
def moto_server() -> Iterator[str]:
    """moto's S3-compatible server on 127.0.0.1 (random free port); yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def isolate_aws(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    *,
    secret: str = "testing-secret",
    endpoint: str | None = None,
) -> dict[str, str]:
    """Test credentials for a loopback S3 store, and nothing of the host's AWS or hayakoe
    configuration (profiles, endpoints, instance metadata, offline mode, cache root)."""
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": secret,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
    }
    if endpoint is not None:
        env["AWS_ENDPOINT_URL_S3"] = endpoint
    for key in (
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "HAYAKOE_OFFLINE",
        "HAYAKOE_CACHE",
    ):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def isolate_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing of the host's Hugging Face or hayakoe configuration (offline switches, token,
    cache root), and no progress bars in the test output."""
    for key in (
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "HAYAKOE_OFFLINE",
        "HF_TOKEN",
        "HAYAKOE_CACHE",
    ):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
