"""`BackgroundInt8`: make voices' int8 graphs while they serve in fp32, then switch them.

What the server asks for (`EngineOptions.quantize_in_background`, `--quantize-in-background`,
on in the server): making a voice's int8 graphs takes minutes on a small x86 and several
times that on a Raspberry Pi, so `TTS.prepare` leaves them to one worker per `TTS`, which
makes the graphs of one voice at a time while the voice serves in fp32:

- the making runs on its own thread whose OS priority is lowered (Linux: nice 19 for that
  thread alone; threads ONNX Runtime starts from it inherit it), with few ONNX Runtime
  threads, and pauses between steps while any request is in flight (`Int8Control`: every
  step, BERT calls included, waits for `busy()` to be false), so a request never competes
  with it for the CPU;
- then, back on the worker thread, the gate decides (`Int8Job.choose`); when it passes (or
  int8 was asked for), the int8 synthesizer is built and the voice switches to it at a
  request boundary (`Speaker.at_request_boundary`), so a request never mixes precisions;
  when it fails, the voice stays fp32 and the log gives the figures;
- `close` cancels the work, inside ONNX Runtime too (`RunOptions.terminate`), and joins
  both threads: a run is stopped within a fraction of a second, so a process that closes
  (or exits: every worker is closed at interpreter exit) never ends with a signal.
  Finished steps stay in the cache: the next start resumes from them (`engine.int8.make`).

A speed measurement (`precision="auto"`, `engine.int8.measure`) that could not finish
decides nothing: the voice runs the gate's verdict, and the worker measures again later at a
quiet moment (no request in flight and the load per CPU under `QUIET_LOAD`, or once the wait
has lasted as long again), after `RETRY_FIRST_S`, doubling up to `RETRY_MAX_S`; each try is
logged, and `Int8Upgrade.measurement` says what is owed and when the next try is.

Each voice's progress is an `Int8Upgrade` (state, report, events to wait on).
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import queue
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..options import usable_cpus
from ..priority import lower_thread_priority, restore_priority
from .control import Cancelled, Int8Control
from .gate import FidelityReport
from .plan import Int8Job, Int8Target, PrecisionChoice, rejudged
from .timing import load_per_cpu

__all__ = ["BackgroundInt8", "Int8Upgrade", "lower_thread_priority", "restore_priority"]

_LOGGER = logging.getLogger(__name__)

DEFAULT_NICENESS = 19
JOIN_TIMEOUT_S = 30.0
"""`close` waits at most this for the threads (a cancelled run ends in well under a second;
this bounds a pathological one, which is then logged)."""
EXIT_TIMEOUT_S = 600.0
"""At interpreter exit the wait is longer: a thread still inside ONNX Runtime when the
interpreter finalizes can abort the process, so exit waits for it (a starved thread that
could not be raised back to normal priority needs more than a second to reach its next
check); the wait is logged."""

RETRY_FIRST_S = 60.0
"""A measurement that could not finish is tried again after this, doubling per try."""
RETRY_MAX_S = 3600.0
QUIET_LOAD = 0.5
"""The 1-minute load average per CPU under which the machine counts as quiet."""

QUEUED = "queued"
MAKING = "making"
SWITCHING = "switching"
INT8 = "int8"
FP32 = "fp32"
FAILED = "failed"
CANCELLED = "cancelled"
FINAL_STATES = frozenset({INT8, FP32, "bf16", "fp16", FAILED, CANCELLED})
"""int8 / fp32 / bf16 / fp16: what the voice runs in the end (`Int8Upgrade.reason` says on
which runtime and why)."""


class Switchable(Protocol):
    """What the worker switches: a speaker (`engine.speaker.Speaker`)."""

    def at_request_boundary(
        self, action: Callable[[], None], cancel: threading.Event | None = None
    ) -> bool: ...


@dataclass
class Int8Upgrade:
    """One voice's background int8 work, as it goes (read-only for callers)."""

    voice: str
    state: str = QUEUED
    """queued → making → switching → int8 (or what the measurement chose: fp32, bf16,
    fp16); or fp32 (gate failed), failed, cancelled."""
    reason: str = ""
    """The gate's summary (figures and thresholds), or what went wrong."""
    report: FidelityReport | None = None
    seconds: float | None = None
    """How long making the graphs took."""
    paused_s: float = 0.0
    """Of which, seconds paused while requests ran."""
    measurement: str = ""
    """What is owed of the speed measurement (`auto`): empty when none is, else why the
    last try could not finish and when the next is (`next_measure_at`)."""
    next_measure_at: float | None = None
    """When the measurement is tried again (seconds since the epoch), None when not."""
    measure_tries: int = 0
    """Speed measurements that could not finish so far."""
    measured: threading.Event = field(default_factory=threading.Event)
    """Set when a complete measurement decided (or none was owed)."""
    ready: threading.Event = field(default_factory=threading.Event)
    """Set when the int8 synthesizer is built and waits for a request boundary."""
    done: threading.Event = field(default_factory=threading.Event)
    """Set when the state is final (int8, fp32, failed or cancelled)."""

    def _finish(self, state: str, reason: str = "") -> None:
        self.state = state
        if reason:
            self.reason = reason
        self.done.set()


_Task = tuple[Sequence[Switchable], Int8Job, Int8Target, Int8Upgrade]


@dataclass
class _Retry:
    """A measurement to take again: the task (its job holding the graphs and what the voice
    serves), when it is due (monotonic), and the wait after which it runs quiet or not."""

    task: _Task
    due: float
    wait: float
    again: bool = False
    """Asked for (`measure_again`): a stored measurement is not read back."""


_LIVE: weakref.WeakSet[BackgroundInt8] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:  # before interpreter finalization: no thread left inside ORT
    for worker in list(_LIVE):
        worker.close(EXIT_TIMEOUT_S)


class BackgroundInt8:
    """One worker thread that upgrades voices to int8 one at a time (see the module doc).

    `threads`: ONNX Runtime threads of the quantization's sessions; `niceness`: the OS
    priority of its thread (0 leaves it); `busy`: True while a request is in flight (the
    work pauses; default: never); `retry_s`: the first wait before a measurement that could
    not finish is taken again; `quiet_load`: the load per CPU under which it may run;
    `calibration` / `heldout` replace the shipped sentence sets and `progress` sees every
    progress line (tests)."""

    def __init__(
        self,
        *,
        threads: int = 1,
        niceness: int = DEFAULT_NICENESS,
        busy: Callable[[], bool] | None = None,
        calibration: Sequence[str] | None = None,
        heldout: Sequence[str] | None = None,
        progress: Callable[[str], None] | None = None,
        retry_s: float = RETRY_FIRST_S,
        quiet_load: float = QUIET_LOAD,
    ) -> None:
        self.threads = max(1, int(threads))
        self.retry_s = retry_s
        self.quiet_load = quiet_load
        self._retries: list[_Retry] = []
        self.niceness = niceness
        self.busy = busy
        self._calibration = list(calibration) if calibration is not None else None
        self._heldout = list(heldout) if heldout is not None else None
        self._progress = progress
        self._closed = threading.Event()
        self._jobs: queue.Queue[_Task] = queue.Queue()
        self._upgrades: dict[str, Int8Upgrade] = {}
        self._thread: threading.Thread | None = None
        self._maker: threading.Thread | None = None
        self._control: Int8Control | None = None
        self._lock = threading.Lock()
        _LIVE.add(self)

    @property
    def upgrades(self) -> dict[str, Int8Upgrade]:
        """Every voice handed to `submit`, by name (the voices of one file share one)."""
        return dict(self._upgrades)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    @property
    def running(self) -> bool:
        """Whether a thread of this worker is still alive."""
        return any(t is not None and t.is_alive() for t in (self._thread, self._maker))

    def submit(
        self,
        speakers: Sequence[Switchable],
        job: Int8Job,
        target: Int8Target,
        names: Sequence[str] = (),
    ) -> Int8Upgrade:
        """Queue `job`, whose graphs `speakers` (one, or every speaker of a multi-speaker
        file) switch to together: at a request boundary of all of them, `target` (their
        voices) is told to use the new synthesizer, or to keep the one it runs. The upgrade
        is listed in `upgrades` under each of `names` (the voices' names; default: the
        job's, which for an AivisHub file is its model)."""
        upgrade = Int8Upgrade(job.name)
        for name in names or (job.name,):
            self._upgrades[name] = upgrade
        with self._lock:
            if self._closed.is_set():
                upgrade._finish(CANCELLED, "the worker is closed")
                return upgrade
            self._jobs.put((list(speakers), job, target, upgrade))
            self._start()
        return upgrade

    def measure_again(
        self,
        speakers: Sequence[Switchable],
        job: Int8Job,
        target: Int8Target,
        names: Sequence[str] = (),
    ) -> Int8Upgrade:
        """Take the speed measurement of `job`'s voices again now (a stored one is not read
        back), pausing while requests run; `speakers` then run its choice from a request
        boundary on. ValueError while their int8 graphs are still being made or measured."""
        names = tuple(names or (job.name,))
        upgrade = next((self._upgrades[n] for n in names if n in self._upgrades), None)
        with self._lock:
            if self._closed.is_set():
                raise ValueError("the background worker is closed")
            if upgrade is not None and not upgrade.done.is_set():
                raise ValueError(f"voice {job.name}: its int8 graphs are still being made")
            if upgrade is None:
                serving = job.serving.precision if job.serving is not None else FP32
                upgrade = Int8Upgrade(job.name, serving)
                upgrade.done.set()
            for name in names:
                self._upgrades[name] = upgrade
            self._retries = [r for r in self._retries if r.task[3] is not upgrade]
            upgrade.measured.clear()
            upgrade.measurement = "measuring again (asked for)"
            task = (list(speakers), job, target, upgrade)
            self._retries.append(_Retry(task, time.monotonic(), 0.0, again=True))
            self._start()
        return upgrade

    def _start(self) -> None:
        """The worker thread, started once (under `_lock`)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="int8-background", daemon=True)
            self._thread.start()

    def close(self, timeout: float = JOIN_TIMEOUT_S) -> bool:
        """Cancel: nothing more is started or switched, the step running now is stopped
        (inside ONNX Runtime too), and both threads are joined. True when they ended
        within `timeout`. Idempotent."""
        with self._lock:
            self._closed.set()
            control = self._control
        if control is not None:
            control.cancel()
            if self.running:
                restore_priority(self.niceness)
        self._drain("closed before it started")
        start = time.monotonic()
        deadline = start + timeout
        told = False
        for t in (self._maker, self._thread):
            while t is not None and t is not threading.current_thread() and t.is_alive():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                t.join(min(left, 5.0))
                if t.is_alive() and not told:
                    told = True
                    _LOGGER.info("Background int8: waiting for the step running to stop")
        if self.running:
            _LOGGER.warning("Background int8 did not stop within %.0f s", timeout)
            return False
        return True

    def _drain(self, reason: str) -> None:
        while True:
            try:
                _, _, _, upgrade = self._jobs.get_nowait()
            except queue.Empty:
                return
            upgrade._finish(CANCELLED, reason)

    # -- the worker ----------------------------------------------------------------------
    def _run(self) -> None:
        while not self._closed.is_set():
            try:
                speakers, job, target, upgrade = self._jobs.get(timeout=0.2)
            except queue.Empty:
                self._retry_due()
                continue
            try:
                self._upgrade(speakers, job, target, upgrade)
            except Exception as exc:  # noqa: BLE001 - the voice keeps serving in fp32
                _LOGGER.exception("Voice %s: background int8 failed; it stays fp32", job.name)
                upgrade._finish(FAILED, str(exc))
        self._drain("closed before it started")

    def _say(self, message: str) -> None:
        _LOGGER.info("Background int8: %s", message)
        if self._progress is not None:
            self._progress(message)

    def _make(self, job: Int8Job, control: Int8Control, made: dict[str, Any]) -> None:
        """On its own thread, at low priority."""
        try:
            lowered = lower_thread_priority(self.niceness)
            self._say(
                f"{job.name}: making int8 graphs into {job.out_dir} ({self.threads} "
                f"thread(s){', nice ' + str(self.niceness) if lowered else ''}, pausing while "
                "requests run); the voice serves in fp32 meanwhile"
            )
            made["graphs"] = job.make(
                threads=self.threads,
                calibration=self._calibration,
                heldout=self._heldout,
                progress=self._say,
                control=control,
            )
        except Cancelled:
            made["cancelled"] = True
        except Exception as exc:  # noqa: BLE001 - reported by the worker
            made["error"] = exc

    def _upgrade(
        self,
        speakers: Sequence[Switchable],
        job: Int8Job,
        target: Int8Target,
        upgrade: Int8Upgrade,
    ) -> None:
        upgrade.state = MAKING
        start = time.monotonic()
        made: dict[str, Any] = {}
        control = Int8Control(self.busy)
        with self._lock:
            if self._closed.is_set():
                upgrade._finish(CANCELLED, "closed before it started")
                return
            self._control = control
            self._maker = threading.Thread(
                target=self._make, args=(job, control, made), name=f"int8-make-{job.name}"
            )
            self._maker.daemon = True
            self._maker.start()
        self._maker.join()
        upgrade.seconds = time.monotonic() - start
        upgrade.paused_s = control.paused_s
        if made.get("cancelled") or self._closed.is_set():
            self._control = None
            upgrade._finish(CANCELLED, "closed while making the graphs (finished steps are kept)")
            return
        if "error" in made:
            self._control = None
            exc = made["error"]
            _LOGGER.error(
                "Voice %s stays fp32: its int8 graphs could not be made (%s)", job.name, exc
            )
            upgrade._finish(FAILED, f"int8 graphs could not be made ({exc})")
            return
        graphs = made["graphs"]
        upgrade.report = graphs.report
        job = dataclasses.replace(job, graphs=graphs)
        try:  # the gate's verdict, then (auto) the measurement, at normal priority
            choice = job.choose(graphs, control=control, heldout=self._heldout, progress=self._say)
        except Cancelled:
            upgrade._finish(CANCELLED, "closed while measuring")
            return
        finally:
            self._control = None
        passed = rejudged(graphs.report, job.thresholds).passed
        if choice.precision != "int8" and not (passed or job.precision == "int8"):
            _LOGGER.warning(
                "Voice %s stays %s: its int8 graphs (made in %.0f s) failed the fidelity gate: %s",
                job.name,
                choice.short,
                upgrade.seconds,
                graphs.report.summary() if choice.measurement else choice.reason,
            )
        self._apply((speakers, job, target, upgrade), choice)

    def _apply(self, task: _Task, choice: PrecisionChoice) -> None:
        """Run `choice` from the next request boundary (or keep what runs when it is the
        same), then schedule the measurement again when one is still owed."""
        speakers, job, target, upgrade = task
        upgrade.reason = choice.reason
        serving = job.serving
        if serving is not None and serving.candidate == choice.candidate:
            _LOGGER.info("Voice %s keeps running %s: %s", job.name, choice.short, choice.reason)
            target.keep(choice)
        else:
            synth = job.build(choice)
            upgrade.state = SWITCHING
            upgrade.ready.set()
            if not _at_boundaries(list(speakers), lambda: target.use(synth, choice), self._closed):
                upgrade._finish(CANCELLED, "closed before the switch")
                return
            _LOGGER.info(
                "Voice %s switched from %s to %s between requests (graphs made in %.0f s, "
                "%.0f s of it paused for requests): %s",
                job.name,
                serving.short if serving is not None else "fp32",
                choice.short,
                upgrade.seconds or 0.0,
                upgrade.paused_s,
                choice.reason,
            )
        upgrade._finish(choice.precision)
        self._owed((speakers, dataclasses.replace(job, serving=choice), target, upgrade), choice)

    def _owed(self, task: _Task, choice: PrecisionChoice) -> None:
        """Schedule the measurement again when `choice` says one is owed (with a backoff);
        else mark the voice measured."""
        upgrade = task[3]
        if not choice.unmeasured:
            upgrade.measurement, upgrade.next_measure_at = "", None
            upgrade.measured.set()
            return
        upgrade.measure_tries += 1
        wait = min(RETRY_MAX_S, self.retry_s * 2 ** (upgrade.measure_tries - 1))
        upgrade.next_measure_at = time.time() + wait
        upgrade.measurement = (
            f"{choice.unmeasured}; measuring again in {wait:.0f} s at a quiet moment "
            f"(try {upgrade.measure_tries + 1})"
        )
        _LOGGER.warning(
            "Voice %s runs %s by its fidelity gate for now: the speed measurement could not "
            "finish (%s); measuring again in %.0f s, when no request runs and the load is "
            "under %.2f per CPU",
            task[1].name,
            choice.short,
            choice.unmeasured,
            wait,
            self.quiet_load,
        )
        with self._lock:
            self._retries.append(_Retry(task, time.monotonic() + wait, wait))

    def _quiet(self) -> bool:
        if self.busy is not None and self.busy():
            return False
        load = load_per_cpu(usable_cpus())
        return load is None or load < self.quiet_load

    def _retry_due(self) -> None:
        """Take the first measurement due again, once the machine is quiet (or the wait
        for quiet has lasted as long as the backoff)."""
        now = time.monotonic()
        with self._lock:
            due = [r for r in self._retries if r.due <= now]
            if not due or self._closed.is_set():
                return
            retry = due[0]
            if not self._quiet() and now < retry.due + retry.wait:
                return
            self._retries.remove(retry)
            control = self._control = Int8Control(self.busy)
        _, job, _, upgrade = retry.task
        self._say(f"{job.name}: measuring its speed again (try {upgrade.measure_tries + 1})")
        try:
            choice = job.choose(
                job.graphs,
                control=control,
                heldout=self._heldout,
                progress=self._say,
                again=retry.again,
            )
        except Cancelled:
            return
        except Exception as exc:  # noqa: BLE001 - the voice keeps what it runs
            _LOGGER.exception("Voice %s: measuring its speed failed", job.name)
            upgrade.measurement = f"measuring failed ({exc})"
            return
        finally:
            self._control = None
        self._apply(retry.task, choice)


def _at_boundaries(
    speakers: list[Switchable], action: Callable[[], None], cancel: threading.Event
) -> bool:
    """Run `action` at a request boundary of every speaker at once (nested, in order)."""
    if not speakers:
        action()
        return True
    first, rest = speakers[0], speakers[1:]
    done: list[bool] = []

    def inner() -> None:
        done.append(_at_boundaries(rest, action, cancel))

    return first.at_request_boundary(inner, cancel) and all(done)
