"""`quantize_voice`: make one voice's int8 graphs and fidelity report, ahead of time.

What `wyoming-hayakoe quantize` runs (and Docker builds, to bake int8 voices into an image):
find the voice as the server would (`locate_voice`; PyTorch weights are exported to ONNX into
the cache first), load the BERT, cut the fp32 synthesizer at the decoder, then
`engine.int8.make.make_int8`. The result goes either into a hayakoe-layout root
(`OUT_ROOT/onnx/speakers/NAME/` gets the voice's files and an `int8/` folder) or, without
one, into the cache folder the loader looks in (`engine.int8.store.cache_dir_for`).
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..int8.make import make_int8
from ..int8.recipe import QuantSettings, stamp_for
from ..int8.store import Int8Graphs
from ..layout import (
    INT8_SUBDIR,
    OFFICIAL_SOURCE,
    onnx_folder_files,
    plain_folder_files,
    speaker_prefix,
)
from ..options import EngineOptions, Precision

if TYPE_CHECKING:
    from ..int8.calibrate import FeatureSource
    from ..layout import OnnxFolderFiles
    from ..sources.cache import CacheDir

_LOGGER = logging.getLogger(__name__)


def _copy_voice(files: OnnxFolderFiles, out_dir: Path) -> Path:
    """Copy the voice's ONNX files into `out_dir` (hard links where possible); returns the
    synthesizer's path there."""
    out_dir.mkdir(parents=True, exist_ok=True)
    wanted = [files.config, files.style_vectors, files.synthesizer]
    if files.duration_predictor is not None:
        wanted.append(files.duration_predictor)
    for src in wanted:
        dst = out_dir / src.name
        if dst.exists() and os.path.samefile(src, dst):
            continue
        tmp = dst.with_name(f".{dst.name}.partial")
        tmp.unlink(missing_ok=True)
        try:
            os.link(src, tmp)
        except OSError:
            shutil.copy2(src, tmp)
        os.replace(tmp, dst)
    return out_dir / Path(files.synthesizer).name


def quantize_voice(
    name: str,
    source: str | os.PathLike[str],
    out_root: str | os.PathLike[str] | None = None,
    *,
    bert_source: str | os.PathLike[str] = OFFICIAL_SOURCE,
    bert: FeatureSource | None = None,
    cache_dir: CacheDir = None,
    token: str | None = None,
    method: str | None = None,
    threads: int | None = None,
    calibration: list[str] | None = None,
    heldout: list[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Int8Graphs:
    """Make voice `name`'s int8 graphs (see the module doc); returns where they are and
    their fidelity report. `bert` (anything with `features`) replaces loading one from
    `bert_source`; `calibration` / `heldout` replace the shipped sentence sets (tests)."""
    from ..int8.store import cache_dir_for
    from ..sources import parse_source
    from .build import split_synthesizer, voice_spec
    from .exported import exported_onnx_dir
    from .loader import locate_voice

    src = parse_source(str(source), cache_dir=cache_dir, token=token)
    loc = locate_voice(name, src, "cpu")
    if loc.kind == "onnx":
        files = onnx_folder_files(loc.directory)
    else:
        files = onnx_folder_files(
            exported_onnx_dir(name, plain_folder_files(loc.directory), cache_dir)
        )
    if out_root is not None:
        voice_dir = Path(out_root) / speaker_prefix(name, "onnx")
        _copy_voice(files, voice_dir)
        files = onnx_folder_files(voice_dir)
        out_dir = voice_dir / INT8_SUBDIR
    else:
        out_dir = cache_dir_for(name, files.synthesizer, cache_dir)
    settings = QuantSettings(method=method) if method else QuantSettings()
    if bert is None:
        from ..bert import load_bert

        bert = load_bert(
            parse_source(str(bert_source), cache_dir=cache_dir, token=token),
            "cpu",
            threads=threads,
            cache_dir=cache_dir,
        )
    fp32 = EngineOptions(threads=threads, precision=Precision.FP32)
    synth = split_synthesizer(files, fp32, cache_dir)
    say = progress or (lambda message: _LOGGER.info("%s", message))
    say(f"{name}: {files.directory} → {out_dir}")
    return make_int8(
        synth,
        synth.fp32_decoder_path,
        bert,
        voice_spec(name, files),
        out_dir,
        stamp_for(files.synthesizer, settings),
        settings=settings,
        calibration=calibration,
        heldout=heldout,
        progress=say,
        threads=threads,
    )
