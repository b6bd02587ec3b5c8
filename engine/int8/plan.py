"""One voice's int8 plan: which graphs it runs, and what is still to be made.

`plan_int8` answers for one voice loaded on ONNX Runtime, by `precision`:

- ``"fp32"``: the fp32 graphs, nothing else is looked at (state ``none``);
- ``"int8"``: the int8 graphs, even if their gate failed (with a warning naming the figures);
- ``"auto"`` (default): the int8 graphs when their fidelity gate passed, fp32 otherwise.
  Narrow decoders (test-sized voices, `AUTO_MIN_CHANNELS`) stay fp32 unless int8 graphs
  were made for them on purpose: their int8 graphs were measured slower than fp32.

Graphs are looked for beside the voice (baked by `wyoming-hayakoe quantize`) and in the
cache. When none are found, they are made now (state ``ready`` once done: `prepare()`
returns with the answer, on a fresh cache as on a warm one), or, with `defer` (the server's
`--quantize-in-background`), left for later: state ``pending``, fp32 until then, and the
plan's `job` says how to make and install them (`engine.int8.background`). A stored report
is judged again against the thresholds asked for (its figures are kept; only the verdict
may change). Every answer comes with its reason, which the loader logs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..options import PRECISIONS
from ..synth.common import SynthBackend
from .calibrate import FeatureSource, LatentBackend, VoiceSpec
from .control import Int8Control
from .gate import FidelityReport, GateThresholds, judge
from .make import make_int8
from .recipe import QuantSettings, stamp_for
from .store import Int8Graphs, cache_dir_for, find_int8

__all__ = [
    "AUTO_MIN_CHANNELS",
    "Int8Job",
    "Int8Plan",
    "PrecisionChoice",
    "plan_int8",
    "verdict",
]

_LOGGER = logging.getLogger(__name__)

AUTO_MIN_CHANNELS = 256
"""`auto` makes int8 graphs only for decoders at least this wide (the first upsampling
layer's input channels: 512 in every published JP-Extra voice, 32 in the test voices,
where int8 ran 3× slower than fp32)."""

NONE = "none"
READY = "ready"
PENDING = "pending"


@dataclass(frozen=True)
class PrecisionChoice:
    """What a voice runs and why."""

    precision: str
    """"fp32" or "int8"."""
    reason: str
    graphs: Int8Graphs | None = None


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


@dataclass
class Int8Job:
    """What making one voice's int8 graphs needs (built by the voice builder), in steps the
    caller runs on the thread, priority and lock it chooses: `make` (calibrate, quantize,
    gate; resumable), `choose` (the gate's verdict), `build` (the int8 synthesizer),
    `install` (the voice switches to it: call between requests)."""

    name: str
    precision: str
    """What was asked for: "auto" (int8 only if the gate passes) or "int8"."""
    synthesizer: Path
    """The voice's fp32 `synthesizer.onnx` (what the stamp is taken from)."""
    out_dir: Path
    """Where the graphs go (the cache folder `find_int8` looks in)."""
    bert: FeatureSource
    spec: VoiceSpec
    fp32_synth: Callable[[int | None], LatentBackend]
    """threads → a fresh fp32 synthesizer cut at the decoder, for calibration."""
    int8_synth: Callable[[Int8Graphs], SynthBackend]
    """graphs → the synthesizer the voice serves with in int8."""
    thresholds: GateThresholds | None = None
    settings: QuantSettings = field(default_factory=QuantSettings)
    switch: Callable[[SynthBackend], None] | None = None
    """Installs a synthesizer into every voice that shares these graphs (set by the builder)."""

    def make(
        self,
        *,
        threads: int | None = None,
        calibration: Sequence[str] | None = None,
        heldout: Sequence[str] | None = None,
        progress: Callable[[str], None] | None = None,
        bert: FeatureSource | None = None,
        control: Int8Control | None = None,
    ) -> Int8Graphs:
        """Make, gate and store the graphs (minutes on a full-size voice; resumes what an
        earlier run finished). `bert` replaces the voice's BERT for this; `calibration` /
        `heldout` replace the shipped sentence sets (tests); `control` pauses and cancels."""
        synth = self.fp32_synth(threads)
        try:
            return make_int8(
                synth,
                synth.fp32_decoder_path,
                bert or self.bert,
                self.spec,
                self.out_dir,
                stamp_for(self.synthesizer, self.settings),
                settings=self.settings,
                thresholds=self.thresholds,
                calibration=calibration,
                heldout=heldout,
                progress=progress,
                threads=threads,
                control=control,
                source=self.synthesizer,
            )
        finally:
            del synth  # its sessions go now, not at the next collection

    def choose(self, graphs: Int8Graphs) -> PrecisionChoice:
        """int8 or fp32 for these graphs (the gate; "int8" asked for wins over it)."""
        return verdict(self.precision, self.name, graphs, self.thresholds)

    def build(self, graphs: Int8Graphs) -> SynthBackend:
        """The int8 synthesizer to serve with (sessions built now, on the calling thread)."""
        return self.int8_synth(graphs)

    def install(self, synth: SynthBackend) -> None:
        """Switch the voice(s) to `synth` (between requests)."""
        if self.switch is None:
            raise RuntimeError(f"voice {self.name}: no voice to switch (not loaded)")
        self.switch(synth)


@dataclass
class Int8Plan:
    """One voice's plan: `state` ``none`` (fp32 only: asked for, or no int8 for this
    voice), ``ready`` (decided: `choice` says int8 or fp32 and why) or ``pending`` (fp32
    now; `job` makes the graphs later)."""

    state: str
    choice: PrecisionChoice
    job: Int8Job | None = None

    @property
    def precision(self) -> str:
        return self.choice.precision


def plan_int8(
    precision: str,
    *,
    name: str,
    synthesizer: Path,
    job: Callable[[], Int8Job],
    decoder_channels: int,
    baked_dirs: list[Path],
    cache_dir: object = None,
    threads: int | None = None,
    thresholds: GateThresholds | None = None,
    defer: bool = False,
    control: Int8Control | None = None,
    progress: Callable[[str], None] | None = None,
) -> Int8Plan:
    """Decide one voice's plan (see the module doc). `job()` describes how to make its
    graphs (called only when they are to be made)."""
    check_precision(precision)
    if precision == "fp32":
        return Int8Plan(NONE, PrecisionChoice("fp32", "precision fp32 asked for"))
    settings = QuantSettings()
    graphs = find_int8(name, synthesizer, baked_dirs, cache_dir, settings)
    if graphs is not None:
        return Int8Plan(READY, verdict(precision, name, graphs, thresholds))
    if precision == "auto" and decoder_channels < AUTO_MIN_CHANNELS:
        return Int8Plan(
            NONE,
            PrecisionChoice(
                "fp32",
                f"no int8 graphs, and the decoder is narrow ({decoder_channels} channels < "
                f"{AUTO_MIN_CHANNELS}) so int8 would not be faster; `wyoming-hayakoe quantize` "
                "makes them anyway",
            ),
        )
    todo = job()
    out = cache_dir_for(name, synthesizer, cache_dir)
    if defer:
        return Int8Plan(
            PENDING,
            PrecisionChoice(
                "fp32",
                f"no int8 graphs yet: fp32 now, int8 graphs are made in the background into "
                f"{out} (precision {precision}; the switch is logged)",
            ),
            todo,
        )
    say = progress or (lambda message: _LOGGER.info("%s", message))
    say(
        f"Voice {name}: making int8 graphs once into {out} (calibration on the voice's own "
        "latents, then the fidelity gate; this takes a while, and resumes if stopped)"
    )
    try:
        graphs = todo.make(threads=threads, progress=say, control=control)
    except Exception as exc:
        from .control import Cancelled

        if precision == "int8" or isinstance(exc, Cancelled):
            raise
        _LOGGER.warning("Voice %s: could not make int8 graphs (%s)", name, exc)
        return Int8Plan(READY, PrecisionChoice("fp32", f"int8 graphs could not be made ({exc})"))
    return Int8Plan(READY, todo.choose(graphs))
