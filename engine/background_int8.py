"""`BackgroundInt8`: make voices' int8 graphs while they serve in fp32, then switch them.

Making a voice's int8 graphs (calibration on its own latents, quantization, the fidelity
gate: `engine.synth.quantize`) takes minutes on a small x86 and several times that on a
Raspberry Pi. With `EngineOptions.quantize_in_background` (the default), `TTS.prepare` does
not wait for it: the voice serves in fp32 at once, and one worker per `TTS` makes the
graphs of one voice at a time:

- the heavy step runs on its own daemon thread whose OS priority is lowered (Linux: nice 19
  for that thread alone, `os.setpriority` on its native id; threads ONNX Runtime starts from
  it inherit it), with few ONNX Runtime threads (`threads`, default half the engine's);
  its BERT calls, which run on the shared BERT's own (normal priority) threads, wait until
  no speaker is busy;
- then, back at normal priority, the gate decides (`PendingInt8.choose`); when it passes
  (or int8 was asked for), the int8 synthesizer is built and the voice switches to it at a
  request boundary (`Speaker.at_request_boundary`: under the speaker's lock, with no
  request part-way through its text), so a request never mixes precisions; when it fails,
  the voice stays fp32 and the log gives the figures;
- `close` (server shutdown) sets a cancel flag checked between steps and returns at once;
  the threads are daemons, so a quantization step still running never holds up exit. An
  interrupted run leaves no stamp, so the next start makes the graphs again.

Each voice's progress is an `Int8Upgrade` (state, report, events to wait on).
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .speaker import Speaker

if TYPE_CHECKING:
    from .neural.pending_int8 import PendingInt8
    from .synth.fidelity import FidelityReport

__all__ = ["BackgroundInt8", "Int8Upgrade", "int8_work_running", "lower_thread_priority"]

_LOGGER = logging.getLogger(__name__)

DEFAULT_NICENESS = 19
_POLL_S = 0.05

QUEUED = "queued"
MAKING = "making"
SWITCHING = "switching"
INT8 = "int8"
FP32 = "fp32"
FAILED = "failed"
CANCELLED = "cancelled"
FINAL_STATES = frozenset({INT8, FP32, FAILED, CANCELLED})


_MAKERS: set[threading.Thread] = set()
"""Quantization threads started and not yet ended (any worker)."""


def int8_work_running() -> bool:
    """Whether a quantization step is still running on a daemon thread (after `close` it
    ends at its next check). A process that exits meanwhile should leave with `os._exit`:
    interpreter finalization while ONNX Runtime works on a daemon thread can abort
    ("terminate called without an active exception")."""
    return any(t.is_alive() for t in list(_MAKERS))


class _Cancelled(Exception):
    """Raised inside the quantization thread when the worker is closed."""


@dataclass
class Int8Upgrade:
    """One voice's background int8 work, as it goes (read-only for callers)."""

    voice: str
    state: str = QUEUED
    """queued → making → switching → int8; or fp32 (gate failed), failed, cancelled."""
    reason: str = ""
    """The gate's summary (figures and thresholds), or what went wrong."""
    report: FidelityReport | None = None
    seconds: float | None = None
    """How long making the graphs took."""
    ready: threading.Event = field(default_factory=threading.Event)
    """Set when the int8 synthesizer is built and waits for a request boundary."""
    done: threading.Event = field(default_factory=threading.Event)
    """Set when the state is final (int8, fp32, failed or cancelled)."""

    def _finish(self, state: str, reason: str = "") -> None:
        self.state = state
        if reason:
            self.reason = reason
        self.done.set()


def lower_thread_priority(niceness: int = DEFAULT_NICENESS) -> bool:
    """Lower the calling thread's OS priority to `niceness` (Linux: per thread; elsewhere
    nothing is changed). True when it was applied."""
    if niceness <= 0 or not sys.platform.startswith("linux"):
        return False
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid), niceness))
    except (AttributeError, OSError) as exc:
        _LOGGER.debug("Could not lower the quantization thread's priority: %s", exc)
        return False
    return True


class _IdleBert:
    """The shared BERT, called only while no speaker is busy (and never after `close`)."""

    def __init__(self, bert: Any, cancel: threading.Event, busy: Callable[[], bool]) -> None:
        self._bert = bert
        self._cancel = cancel
        self._busy = busy

    def features(self, bert_texts: list[str], word2phs: list[list[int]]) -> list[np.ndarray]:
        while self._busy() and not self._cancel.is_set():
            self._cancel.wait(_POLL_S)
        if self._cancel.is_set():
            raise _Cancelled()
        return list(self._bert.features(bert_texts, word2phs))


class BackgroundInt8:
    """One worker thread that upgrades voices to int8 one at a time (see the module doc).

    `threads`: ONNX Runtime threads of the quantization's sessions; `niceness`: the OS
    priority of its thread (0 leaves it); `calibration` / `heldout` replace the shipped
    sentence sets and `progress` sees every progress line (tests)."""

    def __init__(
        self,
        *,
        threads: int = 1,
        niceness: int = DEFAULT_NICENESS,
        calibration: Sequence[str] | None = None,
        heldout: Sequence[str] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.threads = max(1, int(threads))
        self.niceness = niceness
        self._calibration = list(calibration) if calibration is not None else None
        self._heldout = list(heldout) if heldout is not None else None
        self._progress = progress
        self._cancel = threading.Event()
        self._jobs: queue.Queue[tuple[Speaker, PendingInt8, Int8Upgrade, Callable[[], bool]]]
        self._jobs = queue.Queue()
        self._upgrades: dict[str, Int8Upgrade] = {}
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def upgrades(self) -> dict[str, Int8Upgrade]:
        """Every voice handed to `submit`, by name."""
        return dict(self._upgrades)

    @property
    def closed(self) -> bool:
        return self._cancel.is_set()

    def submit(
        self, speaker: Speaker, job: PendingInt8, busy: Callable[[], bool] | None = None
    ) -> Int8Upgrade:
        """Queue `job` for `speaker` (its voice); `busy` says when requests are running (the
        quantization's BERT calls wait for it to be false; default: `speaker`'s lock)."""
        upgrade = Int8Upgrade(job.name)
        if self._cancel.is_set():
            upgrade._finish(CANCELLED, "the worker is closed")
            return upgrade
        self._upgrades[job.name] = upgrade
        self._jobs.put((speaker, job, upgrade, busy or speaker.lock.locked))
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="int8-background", daemon=True
                )
                self._thread.start()
        return upgrade

    def close(self) -> None:
        """Stop: nothing more is started or switched; returns at once (a step still running
        ends on its daemon thread, unheeded)."""
        self._cancel.set()
        while True:
            try:
                _, _, upgrade, _ = self._jobs.get_nowait()
            except queue.Empty:
                break
            upgrade._finish(CANCELLED, "closed before it started")

    # -- the worker ----------------------------------------------------------------------
    def _run(self) -> None:
        while not self._cancel.is_set():
            try:
                speaker, job, upgrade, busy = self._jobs.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                self._upgrade(speaker, job, upgrade, busy)
            except Exception as exc:  # noqa: BLE001 - the voice keeps serving in fp32
                _LOGGER.exception("Voice %s: background int8 failed; it stays fp32", job.name)
                upgrade._finish(FAILED, str(exc))
        while True:  # closed: whatever is left never starts
            try:
                _, _, upgrade, _ = self._jobs.get_nowait()
            except queue.Empty:
                return
            upgrade._finish(CANCELLED, "closed before it started")

    def _upgrade(
        self,
        speaker: Speaker,
        job: PendingInt8,
        upgrade: Int8Upgrade,
        busy: Callable[[], bool],
    ) -> None:
        upgrade.state = MAKING
        start = time.monotonic()
        made: dict[str, Any] = {}
        finished = threading.Event()

        def say(message: str) -> None:
            if self._cancel.is_set():
                raise _Cancelled()
            _LOGGER.info("Background int8: %s", message)
            if self._progress is not None:
                self._progress(message)
            if self._cancel.is_set():
                raise _Cancelled()

        def make() -> None:  # on its own thread, at low priority
            try:
                lowered = lower_thread_priority(self.niceness)
                say(
                    f"{job.name}: making int8 graphs into {job.out_dir} ({self.threads} "
                    f"thread(s){', nice ' + str(self.niceness) if lowered else ''}); "
                    "the voice serves in fp32 meanwhile"
                )
                made["graphs"] = job.make(
                    threads=self.threads,
                    calibration=self._calibration,
                    heldout=self._heldout,
                    progress=say,
                    bert=_IdleBert(job.bert, self._cancel, busy),
                )
            except _Cancelled:
                made["cancelled"] = True
            except Exception as exc:  # noqa: BLE001 - reported by the worker
                made["error"] = exc
            finally:
                finished.set()
                _MAKERS.discard(threading.current_thread())

        maker = threading.Thread(target=make, name=f"int8-make-{job.name}", daemon=True)
        _MAKERS.add(maker)
        maker.start()
        while not finished.wait(_POLL_S * 4):
            if self._cancel.is_set():
                upgrade._finish(CANCELLED, "closed while making the graphs")
                return
        if made.get("cancelled") or self._cancel.is_set():
            upgrade._finish(CANCELLED, "closed while making the graphs")
            return
        upgrade.seconds = time.monotonic() - start
        if "error" in made:
            exc = made["error"]
            _LOGGER.error(
                "Voice %s stays fp32: its int8 graphs could not be made (%s)", job.name, exc
            )
            upgrade._finish(FAILED, f"int8 graphs could not be made ({exc})")
            return
        graphs = made["graphs"]
        choice = job.choose(graphs)
        upgrade.report = graphs.report
        upgrade.reason = choice.reason
        if choice.precision != "int8":
            _LOGGER.warning(
                "Voice %s stays fp32: its int8 graphs (made in %.0f s) failed the fidelity "
                "gate: %s",
                job.name,
                upgrade.seconds,
                choice.reason,
            )
            upgrade._finish(FP32)
            return
        synth = job.build(graphs)
        upgrade.state = SWITCHING
        upgrade.ready.set()
        if not speaker.at_request_boundary(lambda: job.install(synth), self._cancel):
            upgrade._finish(CANCELLED, "closed before the switch")
            return
        _LOGGER.info(
            "Voice %s switched from fp32 to int8 between requests (graphs made in %.0f s): %s",
            job.name,
            upgrade.seconds,
            choice.reason,
        )
        upgrade._finish(INT8)
