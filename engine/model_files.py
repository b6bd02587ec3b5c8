"""Which model file is damaged, when a voice or the BERT cannot be loaded.

ONNX Runtime and protobuf report a truncated or corrupted file as "Wire format was
corrupt" or "Protobuf parsing failed", without saying which of a voice's files it was.
The loaders catch such a failure and call `explain_load_failure`, which reads each of the
voice's files (only then: nothing is read twice on a good start) and names the first one
that is not whole. Nothing here is used on the hot path.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path

from .errors import EngineError

__all__ = ["DamagedModelFileError", "damaged_file", "explain_load_failure"]

_LOGGER = logging.getLogger(__name__)


class DamagedModelFileError(EngineError, ValueError):
    """A model file that cannot be read: truncated, corrupted, or not what its name says."""

    def __init__(self, path: Path, detail: str, what: str | None = None) -> None:
        self.path = Path(path)
        self.detail = detail
        prefix = f"{what}: " if what else ""
        super().__init__(
            f"{prefix}{path} is damaged or incomplete ({detail}); delete it and download or "
            "export it again"
        )


def _problem(path: Path) -> str | None:
    """Why `path` cannot be read as what its suffix says (None: it reads fine)."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".onnx":
            import onnx

            onnx.load(str(path), load_external_data=False)
        elif suffix == ".npy":
            import numpy as np

            np.load(path, allow_pickle=False)
        elif suffix == ".json":
            json.loads(path.read_text(encoding="utf-8"))
        elif suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(path), framework="numpy") as f:
                for key in f.keys():  # noqa: SIM118 - safe_open has no __iter__
                    f.get_slice(key)
        else:
            return None
    except FileNotFoundError:
        return None  # a missing file is reported by the loaders with the folder's listing
    except Exception as exc:  # noqa: BLE001 - any parse failure means "damaged"
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"{type(exc).__name__}: {text}"
    return None


def damaged_file(
    paths: Iterable[Path | None], what: str | None = None
) -> DamagedModelFileError | None:
    """The first of `paths` that cannot be read, as an error naming it; None if all read."""
    for path in paths:
        if path is None:
            continue
        problem = _problem(Path(path))
        if problem is not None:
            return DamagedModelFileError(Path(path), problem, what)
    return None


def explain_load_failure(
    what: str, exc: Exception, paths: Iterable[Path | None], folder: Path | None = None
) -> Exception:
    """An error for `exc` (raised while loading `what` from `paths`) that names the damaged
    file when one is, else the folder. The caller raises it ``from exc``."""
    damaged = damaged_file(paths, what)
    if damaged is not None:
        _LOGGER.debug("%s failed to load: %s", what, exc)
        return damaged
    where = f" from {folder}" if folder is not None else ""
    return RuntimeError(f"{what}: cannot be loaded{where}: {exc}")
