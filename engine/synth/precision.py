"""Which graphs a CPU voice runs: fp32, or the int8 graphs (decoder, and the flow's
feed-forward convolutions in the front graph) that passed the fidelity gate.

`choose_precision` answers for one voice loaded on ONNX Runtime:

- ``"fp32"``: the fp32 graphs, nothing else is looked at;
- ``"int8"``: the int8 graphs (made once if none are found), even if their gate failed (with
  a warning naming the figures);
- ``"auto"`` (default): the int8 graphs when stamped int8 graphs are found (baked beside the
  voice by `wyoming-hayakoe quantize`, or made before into the cache) and their gate
  passed; fp32 otherwise. When none are found and the decoder is wide enough for int8 to pay
  (`AUTO_MIN_CHANNELS`), they are made now, once, into the cache (a minute or more: progress
  is logged). Narrow decoders (test-sized voices) stay fp32 under ``auto``: their int8
  graphs were measured slower than fp32 (docs/synthesizer.md).

With `defer`, graphs that would be made now are not: the answer is fp32 with `pending` set,
and the caller makes them later (`engine.background_int8`, through `engine.neural.int8`)
and asks `verdict` what to run then. A stored report is judged again against the
thresholds asked for (its figures are kept; only the verdict may change).

Every answer comes with the reason, which the loader logs.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..options import PRECISIONS
from .fidelity import FidelityReport, GateThresholds, judge
from .quantize import (
    FeatureSource,
    Int8Graphs,
    QuantSettings,
    VoiceSpec,
    make_int8,
    read_int8_dir,
    stamp_for,
)

_LOGGER = logging.getLogger(__name__)

AUTO_MIN_CHANNELS = 256
"""`auto` makes int8 graphs at load only for decoders at least this wide (the first
upsampling layer's input channels: 512 in every published JP-Extra voice, 32 in the test
voices, where int8 ran 3× slower than fp32)."""

CACHE_SUBDIR = "int8"


@dataclass(frozen=True)
class PrecisionChoice:
    """What a voice runs and why."""

    precision: str
    """"fp32" or "int8"."""
    reason: str
    graphs: Int8Graphs | None = None
    pending: bool = False
    """No int8 graphs yet: they are to be made later (`defer`), fp32 until then."""


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    return precision


def gate_thresholds(min_snr_db: float | None = None) -> GateThresholds:
    """The gate's thresholds, with the lowest SNR replaced when one is given."""
    if min_snr_db is None:
        return GateThresholds()
    return GateThresholds(min_snr_db=float(min_snr_db))


def rejudged(report: FidelityReport, thresholds: GateThresholds | None) -> FidelityReport:
    """`report`'s figures judged against `thresholds` (the report itself when they are
    the ones it was judged with, or none are given)."""
    if thresholds is None or thresholds == report.thresholds or not report.sentences:
        return report
    return judge(report.voice, list(report.sentences), thresholds, report.settings)


def cache_dir_for(name: str, synthesizer: Path, cache_dir: Any = None) -> Path:
    """`<cache>/int8/<name>-<digest of the synthesizer's path>/`: where int8 graphs made at
    load time go (the stamp inside says what they were made from)."""
    from ..sources.cache import cache_root

    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    digest = hashlib.sha1(str(Path(synthesizer).resolve()).encode("utf-8")).hexdigest()[:16]
    return Path(cache_root(cache_dir)) / CACHE_SUBDIR / f"{safe}-{digest}"


def find_int8(
    name: str,
    synthesizer: Path,
    baked_dirs: list[Path],
    cache_dir: Any = None,
    settings: QuantSettings | None = None,
) -> Int8Graphs | None:
    """Stamped int8 graphs of this synthesizer: in `baked_dirs` (by `quantize`), else the cache."""
    settings = settings or QuantSettings()
    for d in [*baked_dirs, cache_dir_for(name, synthesizer, cache_dir)]:
        found = read_int8_dir(d, Path(synthesizer), settings)
        if found is not None:
            return found
    return None


def choose_precision(
    precision: str,
    *,
    name: str,
    synthesizer: Path,
    fp32_synth: Callable[[], Any],
    bert: FeatureSource,
    voice: VoiceSpec,
    decoder_channels: int,
    baked_dirs: list[Path],
    cache_dir: Any = None,
    threads: int | None = None,
    settings: QuantSettings | None = None,
    thresholds: GateThresholds | None = None,
    defer: bool = False,
) -> PrecisionChoice:
    """Decide (see the module doc); makes int8 graphs into the cache when needed (unless
    `defer`), with the voice's fp32 `SplitOnnxSynthesizer` from `fp32_synth()` (built only
    then)."""
    check_precision(precision)
    if precision == "fp32":
        return PrecisionChoice("fp32", "precision fp32 asked for")
    settings = settings or QuantSettings()
    graphs = find_int8(name, synthesizer, baked_dirs, cache_dir, settings)
    if graphs is None:
        if precision == "auto" and decoder_channels < AUTO_MIN_CHANNELS:
            return PrecisionChoice(
                "fp32",
                f"no int8 graphs, and the decoder is narrow ({decoder_channels} channels < "
                f"{AUTO_MIN_CHANNELS}) so int8 would not be faster; `wyoming-hayakoe quantize` "
                "makes them anyway",
            )
        out = cache_dir_for(name, synthesizer, cache_dir)
        if defer:
            return PrecisionChoice(
                "fp32",
                f"no int8 graphs yet: fp32 now, int8 graphs are made in the background into "
                f"{out} (precision {precision}; the switch is logged)",
                pending=True,
            )
        _LOGGER.info(
            "Voice %s: making int8 graphs once into %s (calibration on the voice's own "
            "latents, then the fidelity gate; this takes a while)",
            name,
            out,
        )
        try:
            synth = fp32_synth()
            graphs = make_int8(
                synth,
                synth.fp32_decoder_path,
                bert,
                voice,
                out,
                stamp_for(Path(synthesizer), settings),
                settings=settings,
                thresholds=thresholds,
                threads=threads,
            )
            del synth
        except Exception as exc:  # noqa: BLE001 - any failure leaves the voice on fp32
            if precision == "int8":
                raise
            _LOGGER.warning("Voice %s: could not make int8 graphs (%s)", name, exc)
            return PrecisionChoice("fp32", f"int8 graphs could not be made ({exc})")
    return verdict(precision, name, graphs, thresholds)


def verdict(
    precision: str, name: str, graphs: Int8Graphs, thresholds: GateThresholds | None = None
) -> PrecisionChoice:
    """What a voice with int8 `graphs` runs under `precision` ("auto" or "int8"): int8 when
    their report passes `thresholds` (default: those it was judged with), or when int8 is
    asked for (with a warning naming the failed figures); fp32 otherwise."""
    report = rejudged(graphs.report, thresholds)
    if report.passed:
        return PrecisionChoice("int8", f"{report.summary()} [{graphs.directory}]", graphs)
    if precision == "int8":
        _LOGGER.warning(
            "Voice %s: int8 asked for although its fidelity gate failed: %s",
            name,
            "; ".join(report.reasons),
        )
        return PrecisionChoice("int8", f"precision int8 asked for; {report.summary()}", graphs)
    return PrecisionChoice("fp32", f"{report.summary()} → fp32 [{graphs.directory}]", graphs)
