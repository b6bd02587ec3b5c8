"""Pre-optimised ONNX graphs, made once and cached, so sessions start lean.

Creating an ONNX Runtime session runs its graph optimisations; for the int8 DeBERTa-v2-large
BERT that briefly needs about 0.8 GB on top of the final session (measured: peak RSS 1.43 GB
for a 0.58 GB session), so every server start touched a memory peak far above what it then
uses. ORT can save the graph after its portable (`ORT_ENABLE_EXTENDED`: fusions, constant
folding; no hardware-specific layouts) optimisations; a session made from that file skips
that work (peak ≈ final size, and it starts faster).

`optimized_model(path)` returns such a file, made on first use in a child process (so the
peak never lands in the server's own memory) and cached under `<cache>/derived/` (the voice
folder stays as it was), or beside `path` (`<stem>.ort-opt.onnx`) if the cache is not
writable. A stamp (source size and mtime, ORT version) makes a changed source or an
ORT upgrade re-optimise. On any failure the original path is returned: slower start, same
results.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..sources.cache import CacheDir, StampValue

_LOGGER = logging.getLogger(__name__)

SUFFIX = ".ort-opt.onnx"
FORMAT = 1

_CHILD = r"""
import sys
import onnxruntime as ort
src, dst = sys.argv[1], sys.argv[2]
opts = ort.SessionOptions()
opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
opts.optimized_model_filepath = dst
opts.intra_op_num_threads = 1
ort.InferenceSession(src, sess_options=opts, providers=["CPUExecutionProvider"])
"""


def _stamp(source: Path) -> dict[str, StampValue]:
    import onnxruntime as ort

    from ..sources.cache import file_stamp

    return file_stamp(source, format=FORMAT, ort=ort.__version__)


def _candidates(source: Path, cache_dir: CacheDir = None) -> list[Path]:
    from ..sources.cache import derived_dir

    name = source.stem + SUFFIX
    return [derived_dir(source, cache_dir) / name, source.parent / name]


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".json")


def _optimize(source: Path, target: Path) -> None:
    """Write the optimised graph of `source` to `target` (child process, else here)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    # a name of this process's own: replicas sharing a cache volume may start together
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
    tmp.unlink(missing_ok=True)
    try:
        subprocess.run(
            [sys.executable, "-c", _CHILD, str(source), str(tmp)],
            check=True,
            capture_output=True,
            timeout=3600,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        _LOGGER.debug("child optimisation failed (%s); optimising in this process", exc)
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        opts.optimized_model_filepath = str(tmp)
        ort.InferenceSession(str(source), sess_options=opts, providers=["CPUExecutionProvider"])
    if not tmp.is_file():
        raise OSError(f"ONNX Runtime wrote no optimised model for {source}")
    os.replace(tmp, target)


def optimized_model(source: str | os.PathLike[str], cache_dir: CacheDir = None) -> Path:
    """A pre-optimised copy of the ONNX file `source` (see the module doc), or `source`."""
    source = Path(source)
    try:
        want = _stamp(source)
    except (OSError, ImportError):
        return source
    targets = _candidates(source, cache_dir)
    from ..sources.cache import stamp_matches, write_stamp

    for target in targets:
        if target.is_file() and stamp_matches(_stamp_path(target), want):
            return target
    for target in targets:
        try:
            _optimize(source, target)
            write_stamp(_stamp_path(target), want)
        except Exception as exc:  # noqa: BLE001 - ORT raises its own types; fall back
            _LOGGER.debug("cannot write %s: %s", target, exc)
            continue
        _LOGGER.info("Optimised %s once → %s", source, target)
        return target
    _LOGGER.warning("Could not cache an optimised copy of %s; using it as is", source)
    return source
