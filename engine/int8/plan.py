"""One voice's int8 plan: which graphs it runs, and what is still to be made.

`plan_int8` answers for one voice loaded on ONNX Runtime, by `precision`:

- ``"fp32"``: the fp32 graphs, nothing else is looked at (state ``none``);
- ``"int8"``: the int8 graphs, even if their gate failed (with a warning naming the figures);
- ``"auto"`` (default): the int8 graphs when their fidelity gate passed, fp32 otherwise.
  Narrow decoders (test-sized voices, `AUTO_MIN_CHANNELS`) stay fp32 unless int8 graphs
  were made for them on purpose: their int8 graphs were measured slower than fp32.

Graphs are looked for beside the voice (baked by `wyoming-hayakoe quantize`) and in the
cache. When none are found:

- ``"auto"`` in the library runs fp32 at once (state ``none``) and says so in one line:
  int8 is not made yet, what it gains on this kind of CPU, and how to make it
  (`not_made_note`). It starts no minutes of work nobody asked for.
- ``"int8"`` makes them now (state ``ready`` once done: `prepare()` returns with int8);
- with `defer` (the server's `--quantize-in-background`), under either, they are left for
  later: state ``pending``, fp32 until then, and the plan's `job` says how to make and
  install them (`engine.int8.background`).

A stored report is judged again against the thresholds asked for (its figures are kept;
only the verdict may change). Every answer comes with its reason, which the loader logs.

With ``"auto"`` the choice may also be a runtime: where more than one runtime × precision
passes the gate (`engine.int8.measure`: fp32 and int8 on ONNX Runtime; with `runtime`
"openvino" also OpenVINO's), the fastest measured on this machine is taken — measured once,
kept in the cache (`speed.json`), read back by later starts. A measurement that could not
finish decides nothing: the gate's verdict runs, with `unmeasured` saying a measurement is
owed (the server's background takes it again later). The library never measures in
`prepare()`: it takes a stored measurement, else the gate's verdict (int8 on ONNX Runtime
where it passed); with `defer` the measurement is the pending job's last step (the voice
serves what the gate allows meanwhile, and switches at a request boundary). A precision
asked for runs on `runtime` (ONNX Runtime unless "openvino").
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from ..json_types import JsonObject
from ..options import ONNXRUNTIME, OPENVINO, Choice, Precision, Runtime, parse_choice
from ..synth.common import SynthBackend
from .calibrate import FeatureSource, LatentBackend, VoiceSpec
from .control import Int8Control
from .gate import FidelityReport, GateThresholds, judge
from .kernels import int8_gain_here
from .make import make_int8
from .measure import (
    SPEED_FILE,
    Candidate,
    Measurement,
    candidates,
    measure,
    measurement_stamp,
    read_measurement,
)
from .recipe import QuantSettings, stamp_for
from .store import Int8Graphs, cache_dir_for, find_int8, read_int8_dir

if TYPE_CHECKING:
    from ..sources.cache import CacheDir

__all__ = [
    "AUTO_MIN_CHANNELS",
    "Int8Job",
    "Int8Plan",
    "Int8Target",
    "PlanAsked",
    "PlanVoice",
    "PrecisionChoice",
    "not_made_note",
    "plan_int8",
    "verdict",
]

_LOGGER = logging.getLogger(__name__)

AUTO_MIN_CHANNELS = 256
"""`auto` makes int8 graphs only for decoders at least this wide (the first upsampling
layer's input channels: 512 in every published JP-Extra voice, 32 in the test voices,
where int8 ran 3× slower than fp32)."""


class PlanState(Choice):
    """Where a voice's int8 plan stands (`Int8Plan.state`)."""

    NONE = "none"
    """fp32 only: asked for, or no int8 for this voice."""
    READY = "ready"
    """Decided: the choice says int8 or fp32 and why."""
    PENDING = "pending"
    """fp32 now; the job makes the graphs later."""


NONE, READY, PENDING = PlanState.NONE, PlanState.READY, PlanState.PENDING


@dataclass(frozen=True)
class PrecisionChoice:
    """What a voice runs and why."""

    precision: str
    """"fp32", "int8", or (measured, OpenVINO) "bf16" / "fp16"."""
    reason: str
    graphs: Int8Graphs | None = None
    runtime: str = ONNXRUNTIME
    """"onnxruntime" or "openvino"."""
    measurement: Measurement | None = None
    """The measurement that chose it (`precision="auto"` with more than one candidate)."""
    unmeasured: str = ""
    """Why a measurement is still owed (`auto` with more than one candidate, and none
    complete yet: the last one could not finish); empty when none is owed. The choice is
    the gate's meanwhile, and the server measures again later."""

    @property
    def candidate(self) -> Candidate:
        return Candidate(self.runtime, self.precision)

    @property
    def label(self) -> str:
        """E.g. "int8 on OpenVINO"."""
        return self.candidate.label

    @property
    def short(self) -> str:
        """The precision, and the runtime when it is not ONNX Runtime ("int8", "bf16 on
        OpenVINO")."""
        return self.precision if self.runtime == ONNXRUNTIME else self.label


def check_precision(precision: Precision | str) -> Precision:
    """`precision` as a `Precision`, or a ValueError naming the values allowed."""
    return parse_choice(Precision, precision, "precision")


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
    return judge(report.voice, list(report.sentences), thresholds, report.settings, report.kind)


def verdict(
    precision: Precision,
    name: str,
    graphs: Int8Graphs,
    thresholds: GateThresholds | None = None,
    runtime: str = ONNXRUNTIME,
) -> PrecisionChoice:
    """What a voice with int8 `graphs` runs under `precision` ("auto" or "int8"): int8 when
    their report passes `thresholds` (default: those it was judged with), or when int8 is
    asked for (with a warning naming the failed figures); fp32 otherwise. On `runtime`
    (the measurement may then choose another, `Int8Job.measured`)."""
    report = rejudged(graphs.report, thresholds)
    if report.passed:
        return PrecisionChoice("int8", f"{report.summary()} [{graphs.directory}]", graphs, runtime)
    if precision == Precision.INT8:
        _LOGGER.warning(
            "Voice %s: int8 asked for although its fidelity gate failed: %s",
            name,
            "; ".join(report.reasons),
        )
        return PrecisionChoice(
            "int8", f"precision int8 asked for; {report.summary()}", graphs, runtime
        )
    return PrecisionChoice(
        "fp32", f"{report.summary()} → fp32 [{graphs.directory}]", graphs, runtime
    )


def fixed_runtime(runtime: Runtime, name: str) -> Runtime:
    """The runtime a voice runs on when nothing is measured: ONNX Runtime for "auto"; an
    asked-for OpenVINO that is not installed falls back to ONNX Runtime (a warning)."""
    if runtime != OPENVINO:
        return ONNXRUNTIME
    from ..synth import openvino_backend

    if not openvino_backend.available():
        _LOGGER.warning(
            "Voice %s: runtime openvino asked for, but OpenVINO is not installed (pip install "
            "openvino): it runs on ONNX Runtime",
            name,
        )
        return ONNXRUNTIME
    return OPENVINO


class Int8Target(Protocol):
    """The voices a job's graphs serve (every speaker of one model), given with the job to
    `BackgroundInt8.submit`: they switch or keep together (`engine.neural.build.ModelPool`)."""

    def use(self, synth: SynthBackend, choice: PrecisionChoice) -> None:
        """Speak through `synth`, which runs `choice`, from now on (call between requests)."""

    def keep(self, choice: PrecisionChoice) -> None:
        """Keep the synthesizer run now; `choice` (the same runtime × precision) says why."""


@dataclass(frozen=True)
class Int8Job:
    """What making one voice's int8 graphs needs (built by the voice builder, frozen), in
    steps the caller runs on the thread, priority and lock it chooses: `make` (calibrate,
    quantize, gate; resumable), `choose` (the gate's verdict, then the measurement),
    `build` (the synthesizer the choice runs). The caller hands the result to the job's
    `Int8Target` between requests."""

    name: str
    precision: Precision
    """What was asked for: "auto" (int8 only if the gate passes) or "int8"."""
    synthesizer: Path
    """The voice's fp32 `synthesizer.onnx` (what the stamp is taken from)."""
    out_dir: Path
    """Where the graphs go (the cache folder `find_int8` looks in)."""
    bert: FeatureSource
    spec: VoiceSpec
    fp32_synth: Callable[[int | None], LatentBackend]
    """threads → a fresh fp32 synthesizer cut at the decoder, for calibration."""
    synth_for: Callable[[Candidate, Int8Graphs | None], SynthBackend]
    """(runtime × precision, int8 graphs) → a synthesizer that runs it, with the threads
    the voice serves with (what it switches to, and what the measurement times)."""
    thresholds: GateThresholds | None = None
    settings: QuantSettings = field(default_factory=QuantSettings)
    runtime: Runtime = Runtime.AUTO
    """The runtime asked for ("auto": measured among those installed)."""
    threads: int = 1
    """The threads the voice serves with (its measurement runs with them)."""
    graphs: Int8Graphs | None = None
    """int8 graphs already made (found): `make` returns them; only the measurement is left."""
    serving: PrecisionChoice | None = None
    """What the voice runs while the job is pending (the background switches only if the
    final choice differs)."""

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
        if self.graphs is not None:
            return self.graphs
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

    def choose(
        self,
        graphs: Int8Graphs | None,
        *,
        control: Int8Control | None = None,
        heldout: Sequence[str] | None = None,
        progress: Callable[[str], None] | None = None,
        again: bool = False,
    ) -> PrecisionChoice:
        """What to run with these graphs: the gate ("int8" asked for wins over it), then
        under "auto" the measurement (`measured`; read from the cache when taken before,
        unless `again`)."""
        fixed = fixed_runtime(self.runtime, self.name)
        if graphs is None:
            choice = PrecisionChoice("fp32", "no int8 graphs", None, fixed)
        else:
            choice = verdict(self.precision, self.name, graphs, self.thresholds, fixed)
        found = self.measured(
            graphs, choice, again=again, control=control, heldout=heldout, progress=progress
        )
        return found if found is not None else choice

    def measured(
        self,
        graphs: Int8Graphs | None,
        choice: PrecisionChoice,
        *,
        cached_only: bool = False,
        again: bool = False,
        control: Int8Control | None = None,
        heldout: Sequence[str] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> PrecisionChoice | None:
        """`choice` (the gate's) replaced by the fastest runtime × precision measured on
        this machine, under "auto" when there is more than one candidate; `choice` itself
        when nothing is to be measured. A stored measurement is read back when complete;
        `cached_only`: None instead of measuring when there is none; `again`: measure even
        when one is stored. A measurement that could not finish decides nothing: `choice`
        with `unmeasured` saying why."""
        if self.precision != Precision.AUTO:
            return choice
        int8_ok = graphs is not None and rejudged(graphs.report, self.thresholds).passed
        trying = candidates(self.runtime, int8=int8_ok)
        if len(trying) <= 1:
            return choice
        stamp = measurement_stamp(
            threads=self.threads,
            synthesizer=self.synthesizer,
            int8_dir=graphs.directory if graphs is not None else None,
            trying=trying,
            thresholds=self.thresholds,
        )
        path = self.out_dir / SPEED_FILE
        found = None if again else read_measurement(path, stamp)
        if found is not None and found.complete:
            _LOGGER.info("Voice %s: measurement read from %s (taken before)", self.name, path)
        elif cached_only:
            return None
        else:
            found = self._measure(trying, graphs, stamp, control, heldout, progress)
        if found.chosen is None:
            owed = f"measurement owed (taken again at a quiet moment): {found.summary()}"
            return dataclasses.replace(choice, reason=f"{choice.reason}; {owed}", unmeasured=owed)
        why = found.summary()
        if found.chosen.precision == "int8" or choice.precision == "int8":
            why = f"{why}; {choice.reason}"
        return PrecisionChoice(found.chosen.precision, why, graphs, found.chosen.runtime, found)

    def _measure(
        self,
        trying: Sequence[Candidate],
        graphs: Int8Graphs | None,
        stamp: JsonObject,
        control: Int8Control | None,
        heldout: Sequence[str] | None,
        progress: Callable[[str], None] | None,
    ) -> Measurement:
        """Measure now and keep the result in `speed.json` (an incomplete one too: it is
        shown, never chosen)."""
        found = measure(
            self.spec,
            trying,
            functools.partial(self._measured_synth, graphs=graphs),
            self.bert,
            stamp=stamp,
            threads=self.threads,
            int8_report=rejudged(graphs.report, self.thresholds) if graphs else None,
            thresholds=self.thresholds,
            heldout=heldout,
            control=control,
            progress=progress,
        )
        path = self.out_dir / SPEED_FILE
        try:
            found.save(path)
        except OSError as exc:
            _LOGGER.warning("Voice %s: cannot keep the measurement in %s: %s", self.name, path, exc)
        return found

    def _measured_synth(self, candidate: Candidate, graphs: Int8Graphs | None) -> LatentBackend:
        """The synthesizer a measurement times: `synth_for`'s, which for every candidate is
        a split ONNX one (`SplitOnnxSynthesizer`, on ONNX Runtime or OpenVINO)."""
        return cast(LatentBackend, self.synth_for(candidate, graphs))

    def with_graphs(self) -> Int8Job | None:
        """This job with its graphs: those it holds, else those made into `out_dir` since
        (by the background); None when there are none yet."""
        graphs = self.graphs or read_int8_dir(self.out_dir, self.synthesizer, self.settings)
        return dataclasses.replace(self, graphs=graphs) if graphs is not None else None

    def build(self, choice: PrecisionChoice) -> SynthBackend:
        """The synthesizer that runs `choice` (sessions built now, on the calling thread)."""
        graphs = choice.graphs if choice.precision == "int8" else None
        return self.synth_for(choice.candidate, graphs)


@dataclass
class Int8Plan:
    """One voice's plan: `state` ``none`` (fp32 only: asked for, or no int8 for this
    voice), ``ready`` (decided: `choice` says int8 or fp32 and why) or ``pending`` (fp32
    now; `job` makes the graphs later)."""

    state: PlanState
    choice: PrecisionChoice
    job: Int8Job | None = None
    remeasure: Int8Job | None = None
    """Under "auto": the job that takes the speed measurement again when asked
    (`TTS.measure_again`), once its graphs are made (`Int8Job.with_graphs`)."""

    @property
    def precision(self) -> str:
        return self.choice.precision


def not_made_note(name: str) -> str:
    """What `auto` says of a voice whose int8 graphs are not made: what int8 gains on this
    kind of CPU (`engine.int8.kernels.int8_gain_here`) and the one call that makes them."""
    return (
        f"{int8_gain_here()}. Make them once (minutes; kept in the cache, taken by every later "
        f'start): TTS(precision="int8") in a script, `wyoming-hayakoe quantize SOURCE --name '
        f"{name}`, or a server, which makes them in the background"
    )


@dataclass(frozen=True)
class PlanVoice:
    """What `plan_int8` looks at of one voice."""

    name: str
    synthesizer: Path
    """Its fp32 `synthesizer.onnx` (the int8 graphs' stamp is taken from it)."""
    decoder_channels: int
    """The first upsampling layer's input channels (`AUTO_MIN_CHANNELS`)."""
    baked_dirs: tuple[Path, ...] = ()
    """Folders beside the voice that may hold int8 graphs (`wyoming-hayakoe quantize`)."""


@dataclass(frozen=True)
class PlanAsked:
    """What was asked of `plan_int8` (from `EngineOptions`, the same for every voice)."""

    precision: Precision = Precision.AUTO
    runtime: Runtime = Runtime.AUTO
    threads: int | None = None
    """ONNX Runtime threads for making graphs now (None: its default)."""
    thresholds: GateThresholds | None = None
    """The gate's thresholds (None: the defaults each report was judged with)."""
    cache_dir: CacheDir = None
    defer: bool = False
    """Leave graphs still to be made (or measured) to the background (state ``pending``)."""


def plan_int8(
    voice: PlanVoice,
    asked: PlanAsked,
    job: Callable[[], Int8Job],
    *,
    control: Int8Control | None = None,
    progress: Callable[[str], None] | None = None,
) -> Int8Plan:
    """Decide one voice's plan (see the module doc). `job()` describes how to make its
    graphs and measure them (called only when there is something to make or measure)."""
    precision = check_precision(asked.precision)
    fixed = fixed_runtime(asked.runtime, voice.name)
    if precision == Precision.FP32:
        return Int8Plan(NONE, PrecisionChoice("fp32", "precision fp32 asked for", None, fixed))
    planning = _Planning(voice, asked, precision, fixed, job, control, progress)
    dirs = list(voice.baked_dirs)
    graphs = find_int8(voice.name, voice.synthesizer, dirs, asked.cache_dir, QuantSettings())
    return planning.found(graphs) if graphs is not None else planning.missing()


@dataclass(frozen=True)
class _Planning:
    """One `plan_int8` call past its first answer (precision "auto" or "int8")."""

    voice: PlanVoice
    asked: PlanAsked
    precision: Precision
    fixed: Runtime
    """The runtime when nothing is measured (`fixed_runtime`)."""
    job: Callable[[], Int8Job]
    control: Int8Control | None
    progress: Callable[[str], None] | None

    def found(self, graphs: Int8Graphs) -> Int8Plan:
        """Graphs were made before: the gate's verdict, under "auto" a stored measurement's
        choice, or (with `defer`) the measurement left for the background."""
        name = self.voice.name
        choice = verdict(self.precision, name, graphs, self.asked.thresholds, self.fixed)
        if self.precision != Precision.AUTO:
            return Int8Plan(READY, choice)
        todo = dataclasses.replace(self.job(), graphs=graphs)
        found = todo.measured(
            graphs, choice, cached_only=True, control=self.control, progress=self.progress
        )
        if found is not None:
            return Int8Plan(READY, found, remeasure=dataclasses.replace(todo, serving=found))
        again = dataclasses.replace(todo, serving=choice)
        if not self.asked.defer:  # the library takes what is made: nothing timed now
            return Int8Plan(READY, choice, remeasure=again)
        # serves the gate's choice now; measured in the background
        return Int8Plan(PENDING, choice, again, remeasure=again)

    def missing(self) -> Int8Plan:
        """No graphs yet: fp32 for a narrow decoder or under "auto" in the library, the
        background's job with `defer`, else (precision "int8") made now."""
        voice, precision, fixed = self.voice, self.precision, self.fixed
        if precision == Precision.AUTO and voice.decoder_channels < AUTO_MIN_CHANNELS:
            return Int8Plan(
                NONE,
                PrecisionChoice(
                    "fp32",
                    f"no int8 graphs, and the decoder is narrow ({voice.decoder_channels} "
                    f"channels < {AUTO_MIN_CHANNELS}) so int8 would not be faster; "
                    "`wyoming-hayakoe quantize` makes them anyway",
                    None,
                    fixed,
                ),
            )
        todo = self.job()
        out = cache_dir_for(voice.name, voice.synthesizer, self.asked.cache_dir)
        if self.asked.defer:
            serving = PrecisionChoice(
                "fp32",
                f"no int8 graphs yet: fp32 now, int8 graphs are made in the background into "
                f"{out} (precision {precision}; the switch is logged)",
                None,
                fixed,
            )
            pending = dataclasses.replace(todo, serving=serving)
            again = pending if precision == Precision.AUTO else None
            return Int8Plan(PENDING, serving, pending, remeasure=again)
        say = self.progress or (lambda message: _LOGGER.info("%s", message))
        if precision == Precision.AUTO:  # nothing made, and nobody asked for minutes of work
            reason = f"int8 not made yet: {not_made_note(voice.name)}"
            say(f"Voice {voice.name}: fp32 for now, {reason}")
            return Int8Plan(NONE, PrecisionChoice("fp32", reason, None, fixed))
        say(
            f"Voice {voice.name}: making int8 graphs once into {out} (calibration on the "
            "voice's own latents, then the fidelity gate; this takes a while, and resumes if "
            "stopped)"
        )
        return self._make_now(todo, say)

    def _make_now(self, todo: Int8Job, say: Callable[[str], None]) -> Int8Plan:
        try:
            graphs = todo.make(threads=self.asked.threads, progress=say, control=self.control)
        except Exception as exc:
            from .control import Cancelled

            if self.precision == Precision.INT8 or isinstance(exc, Cancelled):
                raise
            _LOGGER.warning("Voice %s: could not make int8 graphs (%s)", self.voice.name, exc)
            reason = f"int8 graphs could not be made ({exc})"
            return Int8Plan(READY, PrecisionChoice("fp32", reason, None, self.fixed))
        return Int8Plan(READY, todo.choose(graphs, control=self.control, progress=say))
