"""`LocalSource`: a directory on this machine, used in place (no copy, no cache)."""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

from .base import Source, SourceNotFoundError, normalize_prefix

_LOGGER = logging.getLogger(__name__)

_LOOKS_LIKE_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class LocalSource(Source):
    """Files under `root` on the local file system. `fetch` returns paths inside `root`."""

    is_local = True

    def __init__(self, root: str | os.PathLike[str], *, given: str | None = None) -> None:
        self.root = Path(root).expanduser().absolute()
        self._given = given if given is not None else str(root)
        self.uri = str(self.root)

    def __repr__(self) -> str:
        return f"LocalSource({self.uri!r})"

    def fetch(self, prefix: str) -> Path:
        """`root/prefix` if it is a directory; `SourceNotFoundError` otherwise."""
        rel = normalize_prefix(prefix)
        path = self.root / rel if rel else self.root
        if path.is_dir():
            return path
        detail = "no such directory" if not path.exists() else "not a directory"
        if not self.root.exists() and _LOOKS_LIKE_REPO.match(self._given):
            detail += f"; to use the Hugging Face repository, write hf://{self._given}"
        raise SourceNotFoundError(self.uri, rel, detail)

    def fetch_file(self) -> Path:
        """The root itself when it is a file (a voice file given by its path)."""
        if self.root.is_file():
            return self.root
        detail = "no such file" if not self.root.exists() else "not a file"
        raise SourceNotFoundError(self.uri, "", detail)

    def exists(self, prefix: str) -> bool:
        """True if `prefix` names a file or a non-empty directory under the root."""
        rel = normalize_prefix(prefix)
        path = self.root / rel if rel else self.root
        if path.is_file():
            return True
        return path.is_dir() and any(path.iterdir())

    def upload(self, prefix: str, local_dir: Path) -> None:
        """Copy the files of `local_dir` to `root/prefix`, each through a temporary name so
        that no half-copied file ever sits under its final name."""
        rel = normalize_prefix(prefix)
        src_dir = Path(local_dir)
        if not src_dir.is_dir():
            raise NotADirectoryError(f"upload: {src_dir} is not a directory")
        dest_dir = self.root / rel if rel else self.root
        if dest_dir.resolve() == src_dir.resolve():
            return
        count = 0
        for path in sorted(src_dir.rglob("*")):
            if not path.is_file() or path.name.startswith(".hayakoe_"):
                continue
            target = dest_dir / path.relative_to(src_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
            os.close(fd)
            try:
                shutil.copyfile(path, tmp)
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            count += 1
        _LOGGER.info("Copied %d files to %s", count, dest_dir)
