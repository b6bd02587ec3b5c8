"""`wyoming-hayakoe download`: fetch the BERT and voices into the cache ahead of time.

Used by Docker builds so that the running container needs no network and no credentials::

    wyoming-hayakoe download --device cpu --cache-dir /var/lib/hayakoe \\
        --voice jvnv-F1-jp --voice mine=s3://company-voices/hayakoe

Tokens are never arguments (they would show in `ps` and in shell history): the Hub token
comes from `HF_TOKEN` (or `--hf-token-file`, e.g. a BuildKit secret), S3 credentials from
boto3's usual chain (`AWS_ACCESS_KEY_ID`..., `AWS_SHARED_CREDENTIALS_FILE`, a role).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from engine import OFFICIAL_SOURCE, EngineOptions
from engine.download import pre_download
from engine.sources.cache import cache_root
from engine.sources.redact import redact

from ..logs import setup_logging

_LOGGER = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser (also used by the top-level CLI's help)."""
    parser = argparse.ArgumentParser(
        prog="wyoming-hayakoe download",
        description=(
            "Download the BERT and voices a device needs into the cache, building no model, "
            "so that the server later runs with the network gone."
        ),
    )
    parser.add_argument(
        "--voice",
        action="append",
        default=[],
        metavar="NAME[=SOURCE]",
        help=(
            "a voice to fetch (repeatable): an official hayakoe voice by NAME, or NAME=SOURCE "
            "with SOURCE hf://user/repo[@rev], s3://bucket/prefix, file:///path or a path"
        ),
    )
    parser.add_argument(
        "--device",
        action="append",
        choices=["cpu", "cuda"],
        default=None,
        help="whose files to fetch: cpu (ONNX) or cuda (PyTorch); repeat for both (default cpu)",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="cache root (default: $HAYAKOE_CACHE, else ~/.cache/hayakoe)",
    )
    parser.add_argument(
        "--bert-source",
        default=OFFICIAL_SOURCE,
        metavar="URI",
        help=f"where the BERT comes from (default {OFFICIAL_SOURCE})",
    )
    parser.add_argument(
        "--hf-token-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="read the Hugging Face token from this file (default: $HF_TOKEN or the stored login)",
    )
    parser.add_argument("--debug", action="store_true", help="debug logging")
    return parser


def parse_voice(text: str) -> tuple[str, str | None]:
    """`NAME` → (NAME, None); `NAME=SOURCE` → (NAME, SOURCE)."""
    name, sep, source = text.partition("=")
    name, source = name.strip(), source.strip()
    if not name or (sep and not source):
        raise ValueError(f"--voice expects NAME or NAME=SOURCE, got {redact(text)!r}")
    return name, (source or None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (0 ok, 1 download failed, 2 bad arguments)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(args.debug)
    try:
        voices = [parse_voice(v) for v in args.voice]
    except ValueError as exc:
        parser.error(str(exc))
    token = None
    if args.hf_token_file is not None:
        try:
            token = args.hf_token_file.read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            parser.error(f"--hf-token-file: cannot read {args.hf_token_file}: {exc.strerror}")
    devices = list(dict.fromkeys(args.device or ["cpu"]))
    root = cache_root(args.cache_dir)
    try:
        folders: list[Path] = []
        for device in devices:
            folders += pre_download(
                voices,
                bert_source=args.bert_source,
                device=device,
                cache_dir=root,
                token=token,
                offline=EngineOptions.from_env().offline,
            )
    except (OSError, ValueError, ImportError) as exc:
        _LOGGER.error("download failed: %s", redact(exc))
        if args.debug:
            _LOGGER.debug("details", exc_info=True)
        return 1
    print(f"Ready in {root}:")
    for folder in dict.fromkeys(folders):
        print(f"  {folder}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
