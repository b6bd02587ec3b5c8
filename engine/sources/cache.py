"""The one cache root shared by every remote source.

Layout under the root:

    <root>/hf/   huggingface_hub's own cache (models--owner--repo/{blobs,snapshots,refs,trees})
    <root>/s3/<store>/<bucket>/<key prefix>/...   S3 copies (+ .hayakoe_manifest.json,
                                                   .hayakoe_synced)

Local sources are never copied here.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "HAYAKOE_CACHE"


def default_cache_root() -> Path:
    """`$XDG_CACHE_HOME/hayakoe`, else `~/.cache/hayakoe`.

    A user-level default (rather than hayakoe's `$CWD/hayakoe_cache`) keeps a server's cache
    in one place whatever directory it is started from. Containers set `HAYAKOE_CACHE`."""
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "hayakoe"


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cache root: `cache_dir` if given, else `$HAYAKOE_CACHE`, else the default.

    The result is absolute (relative values are taken from the current directory now, so a
    later `chdir` does not move the cache). Nothing is created here."""
    if cache_dir is not None and str(cache_dir).strip():
        chosen = Path(cache_dir)
    elif os.environ.get(ENV_VAR, "").strip():
        chosen = Path(os.environ[ENV_VAR].strip())
    else:
        chosen = default_cache_root()
    return chosen.expanduser().absolute()


def hf_cache_dir(root: Path) -> Path:
    """Where huggingface_hub keeps its files under `root`."""
    return Path(root) / "hf"


def s3_cache_dir(root: Path) -> Path:
    """Where S3 copies live under `root`."""
    return Path(root) / "s3"
