"""`quantize_voice`: make one voice's int8 graphs and fidelity report, ahead of time.

What `wyoming-hayakoe quantize` runs (and Docker builds, to bake int8 voices into an image):
find the voice as the server would (`locate_voice`; PyTorch weights are exported to ONNX into
the cache first), load the BERT, cut the fp32 synthesizer at the decoder, then
`engine.int8.make.make_int8`. The result goes either into a hayakoe-layout root
(`OUT_ROOT/onnx/speakers/NAME/` gets the voice's files and an `int8/` folder) or, without
one, into the cache folder the loader looks in (`engine.int8.store.cache_dir_for`).

It does its work once: graphs already made from the same synthesizer with the same recipe
(their stamp matches) are kept and returned in seconds, unless `force`. With `measure`
(`MeasureWhen`), it then takes the speed measurement `precision="auto"` chooses by
(`engine.int8.measure`), as a server with default options would and into the same cache:
when none is stored, or the stored one is incomplete or stale (`OWED`), or in any case
(`AGAIN`); the server's next start then runs the fastest choice at once.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

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
from ..options import Choice, EngineOptions, Precision

if TYPE_CHECKING:
    import numpy as np

    from ..bert.features import BertBackend
    from ..int8.calibrate import FeatureSource
    from ..layout import OnnxFolderFiles
    from ..sources import Source
    from ..sources.cache import CacheDir

_LOGGER = logging.getLogger(__name__)


class MeasureWhen(Choice):
    """When `quantize_voice` takes the speed measurement."""

    SKIP = "skip"
    """Never (graphs only)."""
    OWED = "owed"
    """When no complete measurement matching this machine and these graphs is stored."""
    AGAIN = "again"
    """Always: the stored one is taken again."""


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
    force: bool = False,
    measure: MeasureWhen = MeasureWhen.SKIP,
) -> Int8Graphs:
    """Make voice `name`'s int8 graphs (see the module doc); returns where they are and
    their fidelity report. `bert` (anything with `features`) replaces loading one from
    `bert_source`; `calibration` / `heldout` replace the shipped sentence sets (tests);
    `force` makes them again where valid ones are; `measure` says when to take the speed
    measurement afterwards."""
    from ..int8.store import read_int8_dir
    from ..sources import parse_source
    from .build import split_synthesizer, voice_spec

    files, out_dir = _voice_files(name, source, out_root, cache_dir, token)
    settings = QuantSettings(method=method) if method else QuantSettings()
    say = progress or (lambda message: _LOGGER.info("%s", message))
    graphs = None if force else read_int8_dir(out_dir, files.synthesizer, settings)
    if graphs is not None:
        say(
            f"{name}: int8 graphs already made in {out_dir} from this synthesizer with this "
            "recipe: kept (--force makes them again)"
        )
    if graphs is not None and measure == MeasureWhen.SKIP:
        return graphs
    features = _BertOnce(
        bert,
        lambda: parse_source(str(bert_source), cache_dir=cache_dir, token=token),
        threads,
        cache_dir,
    )
    if graphs is None:
        synth = split_synthesizer(
            files, EngineOptions(threads=threads, precision=Precision.FP32), cache_dir
        )
        say(f"{name}: {files.directory} → {out_dir}")
        graphs = make_int8(
            synth,
            synth.fp32_decoder_path,
            features,
            voice_spec(name, files),
            out_dir,
            stamp_for(files.synthesizer, settings),
            settings=settings,
            calibration=calibration,
            heldout=heldout,
            progress=say,
            threads=threads,
        )
        del synth
    if measure != MeasureWhen.SKIP:
        _measure_here(name, files, graphs, features, cache_dir, measure, heldout, say)
    return graphs


def _voice_files(
    name: str,
    source: str | os.PathLike[str],
    out_root: str | os.PathLike[str] | None,
    cache_dir: CacheDir,
    token: str | None,
) -> tuple[OnnxFolderFiles, Path]:
    """The voice's ONNX files (copied into `out_root` when given; PyTorch weights exported
    into the cache first) and where its int8 graphs go."""
    from ..int8.store import cache_dir_for
    from ..sources import parse_source
    from .exported import exported_onnx_dir
    from .loader import locate_voice

    loc = locate_voice(name, parse_source(str(source), cache_dir=cache_dir, token=token), "cpu")
    if loc.kind == "onnx":
        files = onnx_folder_files(loc.directory)
    else:
        files = onnx_folder_files(
            exported_onnx_dir(name, plain_folder_files(loc.directory), cache_dir)
        )
    if out_root is None:
        return files, cache_dir_for(name, files.synthesizer, cache_dir)
    voice_dir = Path(out_root) / speaker_prefix(name, "onnx")
    _copy_voice(files, voice_dir)
    return onnx_folder_files(voice_dir), voice_dir / INT8_SUBDIR


class _BertOnce:
    """The BERT given, or loaded on first use: graphs and a measurement already made need
    none, so a second `quantize` returns in seconds."""

    def __init__(
        self,
        given: FeatureSource | None,
        source: Callable[[], Source],
        threads: int | None,
        cache_dir: CacheDir,
    ) -> None:
        self._bert = given
        self._source = source
        self._threads = threads
        self._cache_dir = cache_dir

    def features(self, bert_texts: list[str], word2phs: list[list[int]]) -> list[np.ndarray]:
        if self._bert is None:
            from ..bert import load_bert

            self._bert = load_bert(
                self._source(), "cpu", threads=self._threads, cache_dir=self._cache_dir
            )
        return self._bert.features(bert_texts, word2phs)


def _measure_here(
    name: str,
    files: OnnxFolderFiles,
    graphs: Int8Graphs,
    bert: FeatureSource,
    cache_dir: CacheDir,
    when: MeasureWhen,
    heldout: list[str] | None,
    say: Callable[[str], None],
) -> None:
    """The speed measurement of a server with default options (its threads, its cache
    folder), taken unless a complete one is stored (`MeasureWhen.OWED`) or always
    (`AGAIN`); its outcome said in one line."""
    from ..int8.plan import fixed_runtime, verdict
    from .build import int8_job

    options = EngineOptions(precision=Precision.AUTO)
    job = int8_job(name, files, options, cast("BertBackend", bert), cache_dir)
    gate = verdict(Precision.AUTO, name, graphs, job.thresholds, fixed_runtime(job.runtime, name))
    choice = job.measured(
        graphs, gate, again=when == MeasureWhen.AGAIN, heldout=heldout, progress=say
    )
    assert choice is not None  # None only with cached_only
    if choice.unmeasured:
        say(
            f"{name}: precision auto runs {choice.short} by the fidelity gate until a "
            "measurement can finish (a server measures again at a quiet moment; "
            "`wyoming-hayakoe quantize --measure` takes it again)"
        )
    elif choice.measurement is None:
        say(f"{name}: precision auto runs {choice.short} (nothing to measure: {choice.reason})")
    else:
        say(f"{name}: precision auto runs {choice.measurement.summary()}")
