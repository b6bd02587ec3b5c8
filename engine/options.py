"""`EngineOptions`: every tuning knob of the engine, in one frozen object passed down.

Configuration flows one way: the server's `Settings` (CLI flags, add-on options) build one
`EngineOptions`, `TTS(..., options=...)` hands it to the sources, the BERT and each voice, and
no engine module reads an environment variable for tuning. `EngineOptions.from_env` reads them
here only, as documented defaults of the server's flags: each field declared with `option` is
set by `WYOMING_HAYAKOE_` + its name in capitals (`threads`: `WYOMING_HAYAKOE_THREADS`,
`first_window`: `WYOMING_HAYAKOE_FIRST_WINDOW`), or by the variable its `option(env=...)`
names (`offline`: `HAYAKOE_OFFLINE`), read by its type (`engine.option_info.read_environment`:
a switch 1/true/yes/on or 0/false/no/off, a number within its range, a `Choice` by its
value); an unset variable leaves the field's default, except `quantize_in_background`: on
(the server's default; the library's is off).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from .option_info import option, read_environment

_LOGGER = logging.getLogger(__name__)

ENV_PREFIX = "WYOMING_HAYAKOE_"
"""A user-set field's environment variable is this and its name in capitals
(`engine.option_info.env_variable`), unless its `option(env=...)` names another."""
THREADS_ENV = "WYOMING_HAYAKOE_THREADS"
"""The first field's variable, spelled out: the rule's worked example, and what
tests/engine/test_structure.py looks for to know it finds tuning variables at all."""


class Choice(str, Enum):
    """A closed set of option values, each equal to (and printed as) its string, so a flag,
    an add-on option, a cache file or a log line spells it as before."""

    def __str__(self) -> str:
        return str(self.value)

    @classmethod
    def values(cls) -> tuple[str, ...]:
        """The strings it may take, in order (for flags' choices and messages)."""
        return tuple(m.value for m in cls)


class Precision(Choice):
    """Decoder arithmetic asked for (`EngineOptions.precision`)."""

    AUTO = "auto"
    FP32 = "fp32"
    INT8 = "int8"


class Runtime(Choice):
    """What runs a CPU voice's graphs (`EngineOptions.runtime`; OpenVINO:
    `engine.synth.openvino_backend`)."""

    AUTO = "auto"
    ONNXRUNTIME = "onnxruntime"
    OPENVINO = "openvino"


class GuardMode(Choice):
    """The playback guard (`EngineOptions.playback_guard`)."""

    AUTO = "auto"
    OFF = "off"


PRECISIONS = Precision.values()
ONNXRUNTIME = Runtime.ONNXRUNTIME
OPENVINO = Runtime.OPENVINO
RUNTIME_NAMES = (ONNXRUNTIME.value, OPENVINO.value)
"""What can run a CPU voice's graphs (the runtimes `auto` chooses among)."""
RUNTIMES = Runtime.values()
GUARD_MODES = GuardMode.values()

_C = TypeVar("_C", bound=Choice)


def parse_choice(kind: type[_C], value: object, field: str) -> _C:
    """`value` as a member of `kind` (a member or its string), else a ValueError naming
    `field` and the values it may take."""
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(kind.values())
        raise ValueError(f"{field} must be one of {allowed}, not {value!r}") from None


DEFAULT_FIRST_CLAUSE = 3

MAX_DEFAULT_THREADS = 8
DEFAULT_FIRST_WINDOW = 24


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class EngineOptions:
    """How the engine runs (not what it says): threads, streaming, memory, network. The
    fields declared with `option` are the server's engine-tuning flags (derived by
    `wyoming_hayakoe.knobs`, their help text here); `from_env` reads their documented
    environment defaults."""

    threads: int | None = option(
        None,
        "ONNX Runtime threads per session "
        "(default: $WYOMING_HAYAKOE_THREADS, else the usable CPUs, at most 8)",
        low=1,
    )
    """ONNX Runtime intra-op threads per session; None: the usable CPUs, at most 8."""
    first_window: int = option(
        DEFAULT_FIRST_WINDOW,
        "frames in a request's first decoder window; 0 decodes whole sentences "
        f"(default: $WYOMING_HAYAKOE_FIRST_WINDOW, else {DEFAULT_FIRST_WINDOW})",
        low=0,
        metavar="FRAMES",
    )
    """Frames in the first decoder window of a request (sub-sentence streaming); 0 decodes
    whole sentences only."""
    conv2d: bool = option(
        False,
        "run the decoder's 1-D convolutions as 2-D ones (default: on if $WYOMING_HAYAKOE_CONV2D=1)",
    )
    """Run the decoder's 1-D convolutions as 2-D ones (faster on some busy CPUs; opt-in)."""
    release_memory: bool = option(
        True,
        "give decoder memory back after long requests "
        "(default: on unless $WYOMING_HAYAKOE_RELEASE_MEMORY=0)",
    )
    """Give decoder activation memory back after each long request (lower resident memory)."""
    offline: bool = option(
        False,
        "never contact a voice store; use the cache only (default: $HAYAKOE_OFFLINE)",
        env="HAYAKOE_OFFLINE",  # older than the rule (like $HAYAKOE_CACHE); users set it
    )
    """Never contact a voice store: every source answers from its cache."""
    precision: Precision = option(
        Precision.AUTO,
        "decoder arithmetic of CPU voices: int8 (about 2-3x faster, checked against fp32), "
        "fp32, or auto: what runs fastest on this machine among what passes the fidelity "
        "gate (each runtime x precision timed once at first start, cached) "
        "(default: $WYOMING_HAYAKOE_PRECISION, else auto)",
    )
    """Decoder arithmetic of CPU voices: "int8" (graphs calibrated on the voice, made once),
    "fp32", or "auto": int8 where the voice's int8 graphs passed the fidelity gate, fp32
    otherwise (`engine.int8.plan`). CUDA voices always run fp32."""
    runtime: Runtime = option(
        Runtime.AUTO,
        "what runs CPU voices' graphs: onnxruntime, openvino (if installed), or auto: "
        "with --precision auto, both are timed and the faster one is used; with a "
        "precision asked for, ONNX Runtime (default: $WYOMING_HAYAKOE_RUNTIME, else auto)",
    )
    """What runs a CPU voice's graphs: "onnxruntime", "openvino" (when installed), or
    "auto": with `precision` "auto", each runtime × precision whose graphs pass the
    fidelity gate is timed on this machine once and the fastest is used
    (`engine.int8.measure`, cached); with a precision asked for, ONNX Runtime."""
    quantize_in_background: bool = option(
        False,
        "when a voice's int8 graphs must be made first: serve it in fp32 at once and "
        "make them in the background at low priority, pausing while requests run, and switch "
        "to int8 between requests; --no-quantize-in-background makes them before serving; "
        "`say` always makes them before it speaks "
        "(default: on unless $WYOMING_HAYAKOE_QUANTIZE_IN_BACKGROUND=0)",
        env_default=True,  # the server's default (from_env); the library's is off
    )
    """When a voice's int8 graphs must be made first ("auto" or "int8" and none in the
    cache): on, serve it in fp32 at once and make them in the background at low priority,
    pausing while requests run, and switch to int8 between requests when done
    (`engine.int8.background`; the server turns this on); off (the library's default):
    `TTS.prepare` makes them before it returns."""
    int8_min_snr_db: float | None = None
    """The fidelity gate's lowest SNR (dB) of any held-out sentence; None: the gate's default
    (`engine.int8.gate.GateThresholds`). For experiments and tests."""
    playback_guard: GuardMode = option(
        GuardMode.AUTO,
        "auto: where a voice is slower than speech on this machine, hold a stream's first "
        "audio back just long enough that it then plays without gaps; off: send audio as "
        "soon as it is made (default: $WYOMING_HAYAKOE_PLAYBACK_GUARD, else auto)",
    )
    """"auto": a stream's first audio is held back just long enough that a listener playing
    it in real time never waits, where this voice is slower than speech on this machine
    (`engine.pacing`); "off": audio goes out as soon as it is made."""
    overlap: bool = option(
        True,
        "prepare the next sentence (BERT, encoder, durations, flow) on a second thread "
        "while one is decoded; same audio (default: on unless $WYOMING_HAYAKOE_OVERLAP=0)",
    )
    """While a sentence is decoded, run BERT and the front graph of the next one on a
    background thread (`engine.neural.overlap`; ONNX Runtime voices, the same audio). On 2
    cores a 4-sentence text took 0.91-0.95x the serial time, first audio unchanged
    (docs/synthesizer.md, "Overlap across sentences")."""

    progress: bool = True
    """Long work a call starts (int8 graphs made, `precision="int8"` on a fresh cache) shows
    its progress on stderr (`engine.progress`: a bar on a terminal, a line per step
    otherwise); off: the lines go to `logging` at INFO only (the server: its log has them)."""

    first_clause: int = option(
        DEFAULT_FIRST_CLAUSE,
        "text streamed in deltas: the first audio may start at a clause mark (、, or a "
        "comma no digit follows) once the first part holds this many characters, not only "
        "at a sentence end; 0: sentences only "
        f"(default: $WYOMING_HAYAKOE_FIRST_CLAUSE, else {DEFAULT_FIRST_CLAUSE})",
        low=0,
        metavar="CHARS",
    )
    """Text in deltas (a language model's reply): the first part may end at a clause mark
    (、，) once it holds this many characters, so the first audio does not wait for a long
    first sentence (`engine.text.pipeline`); 0: whole sentences only."""

    def __post_init__(self) -> None:
        if not isinstance(self.first_clause, int) or self.first_clause < 0:
            raise ValueError(
                f"EngineOptions.first_clause must be an integer >= 0, not {self.first_clause!r}"
            )
        # strings are taken too ("int8"): each field holds its enum member afterwards
        guard = parse_choice(GuardMode, self.playback_guard, "EngineOptions.playback_guard")
        object.__setattr__(self, "playback_guard", guard)
        precision = parse_choice(Precision, self.precision, "EngineOptions.precision")
        object.__setattr__(self, "precision", precision)
        runtime = parse_choice(Runtime, self.runtime, "EngineOptions.runtime")
        object.__setattr__(self, "runtime", runtime)
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise ValueError(
                f"EngineOptions.threads must be a positive integer, not {self.threads!r}"
            )
        if not isinstance(self.first_window, int) or self.first_window < 0:
            raise ValueError(
                f"EngineOptions.first_window must be an integer >= 0, not {self.first_window!r}"
            )

    @property
    def intra_op_threads(self) -> int:
        """`threads`, or the default (usable CPUs, at most 8)."""
        return self.threads or min(usable_cpus(), MAX_DEFAULT_THREADS)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> EngineOptions:
        """Options from the documented environment variables (the server's flag defaults):
        every field declared with `option`, from its variable (`ENV_PREFIX` + its name in
        capitals, or its `env`), read by its type and checked against its range; a malformed
        or out-of-range value is ignored with a warning that names the variable and value."""
        found, refused = read_environment(
            cls, os.environ if environ is None else environ, ENV_PREFIX
        )
        for line in refused:
            _LOGGER.warning("%s", line)
        values: dict[str, Any] = dict(found)  # each parsed by its field's type already
        return cls(**values)
