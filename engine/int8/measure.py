"""`precision="auto"`'s choice by measurement: which runtime × precision is fastest here.

A voice's graphs can run on ONNX Runtime or OpenVINO (`engine.synth.openvino_backend`),
in fp32, in int8 (the QDQ graphs of `engine.int8.make`, where their gate passed), and on
OpenVINO in bf16 or fp16 where the CPU has it. Which is fastest depends on the machine
(its vector units, its core count, the runtime versions), so it is measured on the machine
that serves, once:

1. **candidates** (`candidates`): the runtimes and precisions the options allow and this
   machine offers; the reference is fp32 on ONNX Runtime. `runtime` "auto" times ONNX
   Runtime only (OpenVINO compiles per input length: measured never a server's choice, and
   minutes to find out); "openvino" times OpenVINO's precisions against the reference;
2. **timing** of every candidate against the reference, interleaved in short slices on
   the same inputs (`engine.int8.timing`: one timing sentence of the voice's warm-up text
   (`WARMUP_TEXT`) per slice, front graph and whole decoder, with the threads the voice
   serves with; the order rotated round by round; each round a little shorter than the
   last, so a runtime that prepares kernels per shape pays for it as it would on new
   sentences, and an arena sized by the first round does not grow); the figure is the
   median of the paired ratios (candidate slice / reference slice of the same round), so
   a busy machine slows both sides alike; a round a request overlapped does not count;
3. **the gate** for each candidate faster than the reference (a slower one cannot be
   chosen): the held-out sentences of the int8 gate (every style) through the reference
   and through the candidate, the same inputs and noise, judged by the same thresholds
   (`engine.int8.gate`). int8 on ONNX Runtime keeps its stored report (the one
   `make_int8` wrote); a candidate whose front graph changes the latent's length
   (durations moved) fails;
4. **the choice**: the lowest ratio among those that passed (the reference is 1.00). A
   faster candidate whose resident memory keeps growing by more than `MEMORY_GROWTH_MB`
   per timed slice once settled (`settled_growth_mb`) is left out too: a server running it
   would grow.

A measurement that cannot finish decides nothing: a candidate left with too few pairs
when `BUDGET_S` is spent (time paused for requests not counted), or not built within it,
makes the measurement **incomplete** (`Measurement.complete` False, `chosen` None). It is
kept, with its figures, age and load, for the status to show, but it is never read as a
choice: the voice runs the gate's verdict until a complete measurement exists, and the
server tries again later at a quiet moment (`engine.int8.background`).

The result (`Measurement`: every candidate's gate figures and ratio, the choice) is kept as
`speed.json` in the voice's int8 cache folder, stamped with what it depends on (CPU,
threads, runtime versions, the graphs' files and stamp, the thresholds): a second process
or a restart on the same machine reads a complete one and measures nothing; another
machine, runtime version or set of graphs measures again. Every measurement says when it
was taken (`taken_at`) and the load per CPU before and after (`loads`), so a verdict can be
questioned; `wyoming-hayakoe quantize --measure` takes it again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np

from ..json_types import JsonObject
from ..options import ONNXRUNTIME, OPENVINO, Choice, parse_choice, usable_cpus
from .calibrate import FeatureSource, LatentBackend, SentenceLatent, VoiceSpec, voice_latents
from .control import Int8Control
from .gate import FidelityReport, GateThresholds, SentenceFidelity, compare, judge
from .kernels import cpuinfo_value, read_cpuinfo
from .recipe import HELDOUT_FILE, STAMP_FILE, QuantSettings, read_sentences
from .timing import MAX_PAIRS, MIN_PAIRS, Slices, interleave, load_per_cpu

if TYPE_CHECKING:
    from ..synth.common import Latent, NoiseSource, SynthInputs, SynthParams

__all__ = [
    "REFERENCE",
    "SPEED_FILE",
    "WARMUP_TEXT",
    "Candidate",
    "MeasureInputs",
    "Measurement",
    "Measuring",
    "OpenVinoOffer",
    "TimedSynth",
    "Trial",
    "candidates",
    "measure",
    "measurement_stamp",
    "read_measurement",
    "settled_growth_mb",
]

_LOGGER = logging.getLogger(__name__)

SPEED_FILE = "speed.json"
FORMAT = 4
"""Bump when what is measured changes: stored measurements are then taken again (3: new
input lengths now shorter run by run, memory judged once settled, a time budget; 4:
interleaved slices, paired ratios, incomplete measurements kept but never chosen)."""
MEMORY_GROWTH_MB = 16.0
"""A candidate whose resident memory keeps growing by more than this per timed run once
settled (`settled_growth_mb`: each run new input lengths, the first run's growth not
counted) is left out: measured, OpenVINO's CPU plugin keeps ~55-186 MB per new decoder
input length of the full-size voice, so a server would grow without bound. ONNX Runtime's
arena grows only while the lengths grow, and the timed lengths shrink run by run."""
SETTLE_RUNS = 1
"""Timed slices whose memory growth is not judged (an arena's first blocks)."""
BUDGET_S = 120.0
"""The measurement's time budget (sessions, timing; time paused while requests run not
counted): a candidate with fewer than `engine.int8.timing.MIN_PAIRS` pairs when it is
spent makes the measurement incomplete. The full-size voice on 2 idle x86 cores needs
~10 s and took 47-50 s at a load of 2.1-2.8 per CPU; a Raspberry Pi 4, estimated at about
3x fp32's real-time factor, needs ~75 s for its 6 pairs, ~100 s with a core busy."""
WARMUP_TEXT = "こんにちは。今日はいい天気ですね、少し散歩に出かけましょう。"
"""The voice's warm-up sentences (`TTS.prepare(warmup=True)` speaks them too): about three
seconds of audio, the timing's input."""

RUNTIME_LABELS: dict[str, str] = {ONNXRUNTIME: "ONNX Runtime", OPENVINO: "OpenVINO"}


@dataclass(frozen=True)
class Candidate:
    """One way to run a voice: `runtime` ("onnxruntime", "openvino") × `precision`
    ("fp32", "int8", "bf16", "fp16")."""

    runtime: str
    precision: str

    @property
    def label(self) -> str:
        return f"{self.precision} on {RUNTIME_LABELS.get(self.runtime, self.runtime)}"

    @property
    def key(self) -> str:
        return f"{self.runtime}/{self.precision}"


REFERENCE = Candidate(ONNXRUNTIME, "fp32")


class OpenVinoOffer(Protocol):
    """What `candidates` asks of OpenVINO (`engine.synth.openvino_backend` answers it)."""

    def available(self) -> bool: ...

    def supports(self, precision: str) -> bool: ...


def candidates(
    runtime: str, *, int8: bool, openvino: OpenVinoOffer | None = None
) -> list[Candidate]:
    """What `precision="auto"` chooses among under `runtime` ("auto" and "onnxruntime": ONNX
    Runtime; "openvino": OpenVINO's): fp32 always, int8 where `int8` graphs passed their
    gate, bf16 / fp16 on OpenVINO where the CPU reports them. `openvino`: what answers
    `available()` / `supports(precision)` (an `OpenVinoOffer`; default the module
    `engine.synth.openvino_backend`)."""
    if openvino is None:
        from ..synth import openvino_backend

        openvino = openvino_backend
    # "auto" times ONNX Runtime only: OpenVINO compiles its kernels per input length, which
    # was measured at 0.68-0.79x fp32's time but +160-186 MB per new length (fp32) and 50x
    # with +7.5 GB per length (int8): never a server's choice, and minutes to find out.
    runtimes = [ONNXRUNTIME] if runtime == "auto" else [runtime]
    out = []
    for rt in runtimes:
        if rt == OPENVINO and not openvino.available():
            continue
        for precision in ("fp32", "int8", "bf16", "fp16"):
            if precision == "int8" and not int8:
                continue
            if precision in ("bf16", "fp16") and (
                rt != OPENVINO or not openvino.supports(precision)
            ):
                continue
            out.append(Candidate(rt, precision))
    return out


class Verdict(Choice):
    """What the measurement made of one candidate (`Trial.gate`)."""

    REFERENCE = "reference"
    """The reference the others are timed against (fp32 on ONNX Runtime)."""
    PASSED = "passed"
    """Timed faster than the reference and passed the fidelity gate: may be chosen."""
    FAILED = "failed"
    """Faster, but failed the fidelity gate."""
    SLOWER = "slower"
    """Slower than the reference, so not gated: it cannot be chosen."""
    MEMORY = "memory"
    """Its memory grew with new input lengths once settled, so not chosen."""
    BUDGET = "budget"
    """Too few timed pairs (or not built) within the time budget (`BUDGET_S`): no figure,
    and the measurement is incomplete."""
    ERROR = "error"
    """Could not be built."""


CHOOSABLE = frozenset({Verdict.REFERENCE, Verdict.PASSED})
"""The verdicts of candidates the measurement may choose."""


@dataclass
class Trial:
    """One candidate's outcome."""

    runtime: str
    precision: str
    gate: Verdict
    """The verdict (`Verdict`; a string read back from `speed.json` is taken as one)."""
    fidelity: str = ""
    """The gate's summary (figures and thresholds); empty for the reference."""
    snr_db_min: float | None = None
    logmel_db_mean: float | None = None
    mcd_db_mean: float | None = None
    seconds: list[float] = field(default_factory=list)
    """Its timed slices (one slice: one timing sentence, front graph and decoder)."""
    reference_seconds: list[float] = field(default_factory=list)
    """The reference's slices, each of the same round as the one at its index."""
    ratio: float | None = None
    """The median of the paired ratios (seconds[i] / reference_seconds[i]); None when not
    timed."""
    spread: float | None = None
    """The paired ratios' interquartile range over their median (`engine.int8.timing`)."""
    memory_mb_per_run: float | None = None
    """Resident memory added per timed slice once settled (new input lengths each), MB
    (Linux)."""

    def __post_init__(self) -> None:
        self.gate = parse_choice(Verdict, self.gate, "Trial.gate")

    @property
    def candidate(self) -> Candidate:
        return Candidate(self.runtime, self.precision)


@dataclass
class Measurement:
    """What was measured for one voice on one machine, and the choice (`speed.json`)."""

    voice: str
    stamp: JsonObject
    trials: list[Trial]
    chosen: Candidate | None
    """The fastest that passed; None when the measurement is incomplete."""
    threads: int
    seconds: float
    """Wall time the measurement took (gates, sessions, timing)."""
    complete: bool = True
    """False when a candidate got no figure within the budget: kept to be shown, never
    read as a choice."""
    taken_at: float = 0.0
    """When it was taken (seconds since the epoch)."""
    loads: list[float | None] = field(default_factory=list)
    """The 1-minute load average per CPU before and after it (what else the machine did)."""
    paused_s: float = 0.0
    """Of `seconds`, how long it waited for requests to end."""

    def trial(self, candidate: Candidate) -> Trial | None:
        return next((t for t in self.trials if t.candidate == candidate), None)

    def summary(self) -> str:
        """One line: the choice (or why there is none) and every candidate's figure."""
        parts = [_trial_figure(t) for t in sorted(self.trials, key=_by_ratio)]
        ref = self.trial(REFERENCE)
        base = (
            f" = {statistics.median(ref.seconds):.3f} s" if ref is not None and ref.seconds else ""
        )
        figures = (
            f"({self.threads} thread(s), time relative to {REFERENCE.label}{base}, "
            f"{self.conditions()}): " + "; ".join(parts)
        )
        if self.chosen is None:
            return f"no choice, the measurement could not finish {figures}"
        return f"{self.chosen.label}, fastest measured here {figures}"

    def conditions(self) -> str:
        """When it was taken and the load per CPU then ("taken 3 min ago at load 1.85")."""
        age = time.time() - self.taken_at if self.taken_at else None
        when = f"taken {_age(age)} ago" if age is not None else "taken earlier"
        loads = [f"{x:.2f}" for x in self.loads if x is not None]
        return f"{when} at load {'-'.join(loads)} per CPU" if loads else when

    def to_dict(self) -> JsonObject:
        return asdict(self)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
        tmp.write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=2), encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> Measurement:
        """Read `speed.json` (ValueError naming the file if it is not one)."""
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
            raw["trials"] = [Trial(**t) for t in raw["trials"]]
            raw["chosen"] = Candidate(**raw["chosen"]) if raw["chosen"] is not None else None
            return cls(**raw)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"{path}: not a speed measurement ({exc})") from exc


def _by_ratio(t: Trial) -> tuple[bool, float]:
    return (t.ratio is None, t.ratio or 0.0)


def _trial_figure(t: Trial) -> str:
    """One candidate's figure in `Measurement.summary`."""
    label = t.candidate.label
    spread = f" ±{t.spread / 2:.0%}" if t.spread is not None else ""
    if t.gate == Verdict.REFERENCE:
        return f"{label} 1.00×"
    if t.gate == Verdict.PASSED:
        snr = f", SNR min {t.snr_db_min:.1f} dB" if t.snr_db_min is not None else ""
        return f"{label} {t.ratio:.2f}×{spread} ({len(t.seconds)} pairs){snr}"
    if t.gate == Verdict.MEMORY:
        return (
            f"{label} {t.ratio:.2f}× but left out: memory +{t.memory_mb_per_run:.0f} MB "
            "per new input length"
        )
    if t.gate == Verdict.BUDGET:
        return f"{label}: no figure ({t.fidelity})"
    if t.gate == Verdict.SLOWER:
        return f"{label} {t.ratio:.2f}×{spread} (slower)"
    if t.gate == Verdict.FAILED:
        return f"{label} {t.ratio:.2f}× but failed the gate (SNR min {t.snr_db_min:.1f} dB)"
    return f"{label}: {t.fidelity}"


def _age(seconds: float) -> str:
    if seconds < 90:
        return f"{max(0, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    if seconds < 36 * 3600:
        return f"{round(seconds / 3600)} h"
    return f"{round(seconds / 86400)} days"


def _cpu_model() -> str:
    model = cpuinfo_value(read_cpuinfo(), ("model name", "CPU part", "Hardware"))
    return model if model is not None else platform.processor() or "unknown"


def _file_id(path: Path | None) -> JsonObject | None:
    if path is None or not Path(path).is_file():
        return None
    st = Path(path).stat()
    return {"name": Path(path).name, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def measurement_stamp(
    *,
    threads: int,
    synthesizer: Path,
    int8_dir: Path | None,
    trying: Sequence[Candidate],
    thresholds: GateThresholds | None,
) -> JsonObject:
    """What a measurement depends on: this machine (architecture, CPU model, usable CPUs),
    the threads, the runtime versions, the voice's graphs (the synthesizer file; the int8
    folder's stamp), the candidates and the gate's thresholds."""
    import onnxruntime as ort

    from ..synth import openvino_backend

    int8_stamp = None
    if int8_dir is not None and (Path(int8_dir) / STAMP_FILE).is_file():
        data = (Path(int8_dir) / STAMP_FILE).read_bytes()
        int8_stamp = hashlib.sha256(data).hexdigest()[:16]
    return {
        "format": FORMAT,
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpus": usable_cpus(),
        "threads": int(threads),
        "onnxruntime": ort.__version__,
        "openvino": openvino_backend.version(),
        "openvino_capabilities": list(openvino_backend.cpu_capabilities()),
        "synthesizer": _file_id(synthesizer),
        "int8": int8_stamp,
        "candidates": [c.key for c in trying],
        "thresholds": asdict(thresholds or GateThresholds()),
    }


def read_measurement(path: Path, stamp: JsonObject) -> Measurement | None:
    """The measurement in `path` if it was taken under `stamp` (else None, logged)."""
    if not Path(path).is_file():
        return None
    try:
        found = Measurement.load(path)
    except ValueError as exc:
        _LOGGER.warning("Ignoring %s", exc)
        return None
    if found.stamp != stamp:
        changed = sorted(k for k in {*stamp, *found.stamp} if stamp.get(k) != found.stamp.get(k))
        _LOGGER.info("Stored measurement not used: %s changed since %s", ", ".join(changed), path)
        return None
    return found


Builder = Callable[[Candidate], LatentBackend]
"""A candidate → a fresh synthesizer cut at the decoder that runs it."""


def settled_growth_mb(trace_mb: Sequence[float], settle: int = SETTLE_RUNS) -> float:
    """Resident memory added per run once settled: `trace_mb` is the RSS (MB) before the
    first timed run and after each; the first `settle` runs' growth (an arena's first
    blocks) is not counted, and of the rest the median (one run's spike is not a trend).
    0.0 when no run is left to judge."""
    steps = [b - a for a, b in zip(trace_mb, trace_mb[1:])]
    judged = steps[settle:] if len(steps) > settle else []
    return float(statistics.median(judged)) if judged else 0.0


class TimedSynth(LatentBackend, Protocol):
    """What the measurement asks of a candidate's synthesizer besides `LatentBackend`: the
    whole sentence for the timing, the front graph on another's inputs for the gate."""

    def synthesize(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> object: ...

    def latent_of_feeds(self, feeds: dict[str, np.ndarray]) -> Latent: ...


HeldOut = list[tuple[SentenceLatent, np.ndarray]]
"""The held-out sentences' latents (with their front graph's inputs) and reference audio."""


@dataclass(frozen=True)
class MeasureInputs:
    """What one measurement is asked (`measure`'s arguments, settled): the voice, the
    candidates and how to build them, BERT, the stamp to keep, the threads, the stored int8
    report, the gate's thresholds and held-out sentences, the budget,
    the control and where progress lines go."""

    voice: VoiceSpec
    trying: tuple[Candidate, ...]
    build: Builder
    bert: FeatureSource
    stamp: JsonObject
    threads: int
    int8_report: FidelityReport | None
    thresholds: GateThresholds | None
    heldout: tuple[str, ...]
    budget_s: float
    control: Int8Control
    say: Callable[[str], None]

    @property
    def seed(self) -> int:
        """The int8 gate's held-out noise."""
        return QuantSettings().seed + 1


class _Reference:
    """The reference (fp32 on ONNX Runtime): its synthesizer, and the held-out sentences'
    audio through it, made when a candidate is first gated."""

    def __init__(self, synth: TimedSynth, inputs: MeasureInputs) -> None:
        self.synth = synth
        self.inputs = inputs
        self._held: HeldOut = []

    def held(self) -> HeldOut:
        from ..synth.common import Latent

        if not self._held:
            inputs, reference = self.inputs, self.synth
            for lat in voice_latents(
                reference,
                inputs.bert,
                inputs.voice,
                inputs.heldout,
                inputs.seed,
                keep_feeds=lambda s, i: True,
                between=inputs.control.checkpoint,
            ):
                audio = reference.decode(Latent(lat.z, lat.g, None), lat.z)
                self._held.append((lat, np.clip(np.asarray(audio).reshape(-1), -1, 1)))
        return self._held


class _Timing:
    """The timing input (the warm-up sentences, the voice's first style, speaker 0, the
    longest sentence first) and one timed slice of it (`engine.int8.timing.Sliceable`)."""

    def __init__(self, runs: list[tuple[SynthInputs, NoiseSource]], control: Int8Control) -> None:
        self.runs = runs
        self.control = control

    @classmethod
    def of_text(cls, text: str, inputs: MeasureInputs) -> _Timing:
        from ..synth.common import NoiseSource, SynthInputs
        from ..text import analyze, sentences_of

        voice = inputs.voice
        style_row = min(voice.styles.values()) if voice.styles else 0
        vec = voice.style_vectors[style_row].astype(np.float32)
        runs = []
        for k, sentence in enumerate(sentences_of(text)):
            a = analyze(sentence).with_blanks()
            inputs.control.checkpoint()
            feats = inputs.bert.features([a.bert_text], [a.word2ph])[0]
            ids = SynthInputs(
                np.asarray(a.phone_ids, np.int64),
                np.asarray(a.tone_ids, np.int64),
                np.asarray(a.lang_ids, np.int64),
                feats,
                vec,
                0,
            )
            runs.append((ids, NoiseSource(inputs.seed, k)))
        runs.sort(key=lambda run: -len(run[0].phone_ids))  # round 0 sizes the arenas
        return cls(runs, inputs.control)

    def slice(self, runner: object, round_: int) -> float:
        """One timed slice: one timing sentence (`round_` picks which), front graph and
        whole decoder. Each round is a little shorter than the last (length scale 1 - 1.1 %
        per round), so every round has input lengths of its own: a runtime that prepares
        kernels per input shape (OpenVINO) pays that as it would on a stream of new
        sentences, not only once, while an arena sized by round 0 (the longest) has no
        reason to grow."""
        from ..synth.common import SynthParams

        synth = cast(TimedSynth, runner)
        stretched = SynthParams(length_scale=max(0.5, 1.0 - 0.011 * round_))
        ids, noise = self.runs[round_ % len(self.runs)]
        t0 = time.perf_counter()
        synth.synthesize(ids, stretched, noise)
        return time.perf_counter() - t0

    def busy(self) -> bool:
        return self.control.busy_now()

    def checkpoint(self) -> None:
        self.control.checkpoint()


class Measuring:
    """One measurement under way (see the module doc): its inputs, the reference, the
    timing, the clock it started on; `run()` builds every candidate (`_build`), times them
    all interleaved (`engine.int8.timing.interleave`), judges each (`_judged`, `_verdict`)
    and makes the `Measurement`."""

    def __init__(
        self, inputs: MeasureInputs, reference: _Reference, timing: _Timing, started: float
    ) -> None:
        self.inputs = inputs
        self.reference = reference
        self.timing = timing
        self.started = started

    def spent(self) -> float:
        """Seconds spent so far, time paused for requests not counted."""
        return time.perf_counter() - self.started - self.inputs.control.paused_s

    def run(self) -> Measurement:
        inputs = self.inputs
        loads = [load_per_cpu(usable_cpus())]
        trials = [Trial(REFERENCE.runtime, REFERENCE.precision, Verdict.REFERENCE, ratio=1.0)]
        # int8 on ONNX Runtime first: the likeliest choice, and gated already (its report)
        order = sorted(inputs.trying, key=lambda c: c != Candidate(ONNXRUNTIME, "int8"))
        built: dict[Candidate, TimedSynth] = {}
        for cand in order:
            if cand != REFERENCE:
                trial, synth = self._build(cand)
                trials.append(trial)
                if synth is not None:
                    built[cand] = synth
        timed = interleave(
            self.reference.synth,
            built,
            self.timing,
            rounds=range(1, MAX_PAIRS * 2),
            out_of_time=lambda: self.spent() > inputs.budget_s,
        )
        for trial in trials[1:]:
            if trial.candidate in built:
                cand = trial.candidate
                self._judged(cand, built[cand], trial, timed[cand])
        trials[0].reference_seconds = [s for t in trials[1:] for s in t.reference_seconds]
        trials[0].seconds = list(trials[0].reference_seconds)
        complete = all(t.gate != Verdict.BUDGET for t in trials)
        passed = [t for t in trials if t.gate in CHOOSABLE and t.ratio is not None]
        best = min(passed, key=lambda t: t.ratio or 1.0).candidate if complete else None
        loads.append(load_per_cpu(usable_cpus()))
        result = Measurement(
            inputs.voice.name,
            inputs.stamp,
            trials,
            best,
            int(inputs.threads),
            round(time.perf_counter() - self.started, 2),
            complete=complete,
            taken_at=round(time.time(), 1),
            loads=loads,
            paused_s=round(inputs.control.paused_s, 2),
        )
        inputs.say(f"{inputs.voice.name}: {result.summary()} (measured in {result.seconds:.1f} s)")
        return result

    def _build(self, cand: Candidate) -> tuple[Trial, TimedSynth | None]:
        """A candidate's synthesizer, or its trial left out: the budget spent, or it could
        not be built."""
        inputs = self.inputs
        trial = Trial(cand.runtime, cand.precision, Verdict.ERROR)
        spent = self.spent()
        if spent > inputs.budget_s:
            trial.gate = Verdict.BUDGET
            trial.fidelity = f"the measurement's {inputs.budget_s:.0f} s were spent ({spent:.0f} s)"
            inputs.say(f"{inputs.voice.name}: {cand.label} left out: {trial.fidelity}")
            return trial, None
        try:
            return trial, cast(TimedSynth, inputs.build(cand))  # a SplitOnnxSynthesizer
        except Exception as exc:  # noqa: BLE001 - this candidate is out, the others stay
            inputs.control.raise_if_cancelled(exc)
            trial.fidelity = f"could not be built ({exc})"
            inputs.say(f"{inputs.voice.name}: {cand.label} left out: {trial.fidelity}")
            return trial, None

    def _judged(self, cand: Candidate, synth: TimedSynth, trial: Trial, timed: Slices) -> None:
        """A built candidate's figures from its slices, then its verdict: none (budget)
        with too few pairs, else `_verdict`."""
        inputs = self.inputs
        trial.seconds = [round(x, 5) for x in timed.seconds]
        trial.reference_seconds = [round(x, 5) for x in timed.reference]
        ratio, spread = timed.ratio(), timed.spread()
        trial.ratio = round(ratio, 3) if ratio is not None else None
        trial.spread = round(spread, 3) if spread is not None else None
        if timed.rss_steps_mb:
            steps = [0.0]
            for step in timed.rss_steps_mb:
                steps.append(steps[-1] + step)
            trial.memory_mb_per_run = round(settled_growth_mb(steps), 1)
        if not timed.enough():
            trial.gate = Verdict.BUDGET
            trial.fidelity = (
                f"{timed.pairs} of {MIN_PAIRS} timed pairs when the measurement's "
                f"{inputs.budget_s:.0f} s were spent"
            )
            inputs.say(f"{inputs.voice.name}: {cand.label}: no figure, {trial.fidelity}")
            return
        inputs.say(
            f"{inputs.voice.name}: {cand.label} {trial.ratio:.2f}× the time of "
            f"{REFERENCE.label} ({timed.pairs} pairs, spread {trial.spread or 0.0:.0%})"
        )
        trial.gate = self._verdict(cand, synth, trial, ratio or 1.0)

    def _verdict(self, cand: Candidate, synth: TimedSynth, trial: Trial, ratio: float) -> Verdict:
        """A timed candidate's verdict: left out when its memory grows, not gated when
        slower, else the gate's (its figures kept in `trial`)."""
        inputs = self.inputs
        if ratio < 1.0 and (trial.memory_mb_per_run or 0.0) > MEMORY_GROWTH_MB:
            inputs.say(
                f"{inputs.voice.name}: {cand.label} left out: its memory grew "
                f"{trial.memory_mb_per_run:.0f} MB per run of new input lengths"
            )
            return Verdict.MEMORY  # faster, but a server running it would grow
        if ratio >= 1.0:
            return Verdict.SLOWER  # cannot be chosen: its fidelity does not matter
        if cand == Candidate(ONNXRUNTIME, "int8") and inputs.int8_report is not None:
            report = inputs.int8_report
        else:
            held = self.reference.held()
            report = _gate(
                inputs.voice.name, held, synth, inputs.thresholds, inputs.control, cand.label
            )
        trial.fidelity = report.summary()
        trial.snr_db_min = round(report.snr_db_min, 2)
        trial.logmel_db_mean = round(report.logmel_db_mean, 3)
        trial.mcd_db_mean = round(report.mcd_db_mean, 3)
        if not report.passed:
            inputs.say(
                f"{inputs.voice.name}: {cand.label} failed the gate: {'; '.join(report.reasons)}"
            )
            return Verdict.FAILED
        return Verdict.PASSED


def measure(
    voice: VoiceSpec,
    trying: Sequence[Candidate],
    build: Builder,
    bert: FeatureSource,
    *,
    stamp: JsonObject,
    threads: int,
    int8_report: FidelityReport | None = None,
    thresholds: GateThresholds | None = None,
    heldout: Sequence[str] | None = None,
    timing_text: str = WARMUP_TEXT,
    control: Int8Control | None = None,
    progress: Callable[[str], None] | None = None,
    budget_s: float | None = None,
) -> Measurement:
    """Gate and time `trying` (see the module doc; the work is `Measuring`'s).
    `int8_report`: the stored gate report of the int8 graphs (int8 on ONNX Runtime is
    judged by it); `heldout` replaces the shipped held-out sentences (tests); `control`
    pauses while requests run and cancels."""
    started = time.perf_counter()
    inputs = MeasureInputs(
        voice=voice,
        trying=tuple(trying),
        build=build,
        bert=bert,
        stamp=stamp,
        threads=threads,
        int8_report=int8_report,
        thresholds=thresholds,
        heldout=tuple(heldout if heldout is not None else read_sentences(HELDOUT_FILE)),
        budget_s=BUDGET_S if budget_s is None else budget_s,
        control=control or Int8Control(),
        say=progress or _log,
    )
    inputs.say(
        f"{voice.name}: measuring which runtime × precision is fastest here "
        f"({', '.join(c.label for c in trying)}; gate on {len(inputs.heldout)} held-out "
        f"sentences × {len(voice.styles)} styles, then timing with {threads} thread(s))"
    )
    reference = _Reference(cast(TimedSynth, build(REFERENCE)), inputs)
    timing = _Timing.of_text(timing_text, inputs)
    return Measuring(inputs, reference, timing, started).run()


def _log(message: str) -> None:
    _LOGGER.info("%s", message)


def _gate(
    name: str,
    held: HeldOut,
    synth: TimedSynth,
    thresholds: GateThresholds | None,
    control: Int8Control,
    kind: str,
) -> FidelityReport:
    """The gate's report of `synth` against the reference audio of the held-out sentences."""
    rows = []
    failed = []
    for lat, ref in held:
        control.checkpoint()
        assert lat.feeds is not None  # kept for every held-out sentence (`keep_feeds`)
        latent = synth.latent_of_feeds(lat.feeds)
        if latent.z.shape != lat.z.shape:
            failed.append(lat.sentence)
            rows.append(SentenceFidelity(lat.sentence, lat.style, 0.0, -120.0, 99.0, 99.0))
            continue
        control.checkpoint()
        audio = np.clip(np.asarray(synth.decode(latent, latent.z)).reshape(-1), -1, 1)
        snr, logmel, mcd = compare(ref, audio, synth.sample_rate)
        rows.append(
            SentenceFidelity(
                lat.sentence,
                lat.style,
                len(ref) / synth.sample_rate,
                round(snr, 3),
                round(logmel, 4),
                round(mcd, 4),
            )
        )
    report = judge(name, rows, thresholds, kind=kind)
    if failed:
        report.reasons.append(f"durations changed on {len(failed)} sentence(s)")
        report.passed = False
    return report
