"""The voices and texts the benchmarks speak with.

- `TEXTS`, `OPTIONS`, `VOICE_NAME` (from `texts`): the full-size voice's texts and generation
  options (hayakoe and ours alike);
- `fullsize_root()`: the full-size random-weight voice in hayakoe's layout (`fullsize.py`
  builds it once into `benchmarks/.cache/fullsize/`; needs torch, minutes);
- `small_root()`: the tests' small random-weight voice (`SMALL_VOICE`) and tiny BERT in
  hayakoe's layout, built once into `benchmarks/.cache/small/` (seconds; `--quick` runs).

Standard library only at import: hayakoe's own venv imports the texts.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.lib import CACHE
from benchmarks.lib.texts import OPTIONS, TEXTS, VOICE_NAME

__all__ = [
    "OPTIONS",
    "SMALL_VOICE",
    "TEXTS",
    "VOICE_NAME",
    "fullsize_root",
    "small_root",
    "server_args",
]


SMALL_VOICE = "tiny"
"""Name of the tests' small voice under `small_root()`."""


def fullsize_root() -> Path:
    """The full-size voice's root (built if missing)."""
    from benchmarks.lib import fullsize

    return fullsize.build()


def small_root() -> Path:
    """The tests' small voice and tiny BERT in hayakoe's layout (built once, cached)."""
    root = CACHE / "small"
    marker = root / ".complete"
    if not marker.exists():
        import shutil

        from tests.helpers.voices import build_layout_root

        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        build_layout_root(root, SMALL_VOICE)
        marker.write_text("ok\n")
    return root


def server_args(root: Path, name: str = VOICE_NAME) -> list[str]:
    """The server's flags for voice `name` of `root` (its BERT from there too) with
    `OPTIONS` (the style is the request's)."""
    args = ["--voice", f"{name}={root}", "--bert-source", str(root)]
    for key in ("speed", "sdp_ratio", "noise", "noise_w"):
        args += [f"--{key.replace('_', '-')}", str(OPTIONS[key])]
    return args
