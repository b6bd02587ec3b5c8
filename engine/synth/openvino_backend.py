"""OpenVINO as a CPU runtime for the graphs the split synthesizer runs.

The same ONNX graphs the ONNX Runtime path runs (the fp32 front and decoder cut by
`decoder_split`, the int8 QDQ graphs of `engine.int8`, the decoder's stages cut in memory)
are read by OpenVINO's ONNX frontend and compiled for its CPU plugin. `OpenVinoSession`
answers the part of `onnxruntime.InferenceSession` that `SplitOnnxSynthesizer` uses
(`get_inputs`, `get_outputs`, `run`), so the synthesizer, windowed decoding and the int8
maker's reference decoding are the same code on either runtime (`engine.synth.runtime`).

- `precision` is OpenVINO's inference precision of the compiled graph: ``"fp32"`` (asked
  for explicitly: on CPUs with bf16 units OpenVINO's default would be bf16), ``"bf16"`` or
  ``"fp16"`` (where the CPU reports it, `cpu_capabilities`). An int8 QDQ graph runs with
  ``"fp32"``: its QuantizeLinear/DequantizeLinear pairs become OpenVINO's int8 kernels.
- One infer request per thread (a request is not thread-safe; the sessions of one model
  may run from a request's thread and the overlap thread at once, like ONNX Runtime's).
- Threads: `INFERENCE_NUM_THREADS` = the engine's threads, one stream, latency hint, no
  core pinning (a shared small machine), like the ONNX Runtime sessions.
- `run_options`: ONNX Runtime's `RunOptions` are accepted; one whose `terminate` is set
  (an `Int8Control` that was cancelled) makes `run` raise instead of running.

`openvino` is imported only here and only when such a session is made, so `import engine`
stays cheap and a machine without it runs ONNX Runtime only (`available()`).
"""

from __future__ import annotations

import io
import logging
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import EngineError

if TYPE_CHECKING:
    import onnxruntime as ort

_LOGGER = logging.getLogger(__name__)

PRECISION_HINTS = {"fp32": "f32", "bf16": "bf16", "fp16": "f16"}
"""Our precision names → OpenVINO's `INFERENCE_PRECISION_HINT`."""
CAPABILITY = {"bf16": "BF16", "fp16": "FP16"}
"""Our precision names → the CPU plugin's `OPTIMIZATION_CAPABILITIES` entry that allows it."""


class TerminatedError(EngineError, RuntimeError):
    """A run asked for with terminated run options (its work was cancelled)."""


@lru_cache(maxsize=1)
def version() -> str | None:
    """OpenVINO's version, or None when it is not installed (or cannot load)."""
    try:
        import openvino as ov
    except Exception:  # noqa: BLE001 - a broken install is "not available"
        return None
    return str(ov.__version__)


def available() -> bool:
    return version() is not None


@lru_cache(maxsize=1)
def _core() -> Any:
    import openvino as ov

    return ov.Core()


@lru_cache(maxsize=1)
def cpu_capabilities() -> tuple[str, ...]:
    """The CPU plugin's `OPTIMIZATION_CAPABILITIES` (e.g. FP32, BF16, FP16, INT8); empty
    without OpenVINO."""
    if not available():
        return ()
    try:
        return tuple(str(c) for c in _core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"))
    except Exception as exc:  # noqa: BLE001 - no CPU plugin: nothing to offer
        _LOGGER.debug("OpenVINO CPU capabilities unknown: %s", exc)
        return ()


def supports(precision: str) -> bool:
    """Whether OpenVINO on this CPU can run `precision` ("fp32", "int8", "bf16", "fp16")."""
    if not available():
        return False
    if precision in ("fp32", "int8"):
        return True
    need = CAPABILITY.get(precision)
    return need is not None and need in cpu_capabilities()


@dataclass(frozen=True)
class _Port:
    name: str
    shape: list[int | str]


def _shape(partial: Any) -> list[int | str]:
    return [int(d.get_length()) if d.is_static else "?" for d in partial]


class _ThreadRequest(threading.local):
    """Each thread's own infer request of one compiled graph (None until its first run)."""

    request: Any = None


class OpenVinoSession:
    """One graph compiled by OpenVINO for the CPU (see the module doc)."""

    def __init__(self, source: Path | bytes, *, threads: int, precision: str = "fp32") -> None:
        if precision not in PRECISION_HINTS:
            raise ValueError(f"OpenVINO precision must be one of {', '.join(PRECISION_HINTS)}")
        core = _core()
        model = core.read_model(io.BytesIO(source) if isinstance(source, bytes) else str(source))
        config = {
            "INFERENCE_NUM_THREADS": int(threads),
            "INFERENCE_PRECISION_HINT": PRECISION_HINTS[precision],
            "PERFORMANCE_HINT": "LATENCY",
            "NUM_STREAMS": 1,
            "ENABLE_CPU_PINNING": False,
        }
        self._compiled = core.compile_model(model, "CPU", config)
        del model
        self.precision = precision
        self._inputs = [
            _Port(p.get_any_name(), _shape(p.get_partial_shape())) for p in self._compiled.inputs
        ]
        self._outputs = [
            _Port(p.get_any_name(), _shape(p.get_partial_shape())) for p in self._compiled.outputs
        ]
        self._local = _ThreadRequest()

    def get_inputs(self) -> list[_Port]:
        return list(self._inputs)

    def get_outputs(self) -> list[_Port]:
        return list(self._outputs)

    def _request(self) -> Any:
        request = self._local.request
        if request is None:
            request = self._compiled.create_infer_request()
            self._local.request = request
        return request

    def run(
        self,
        output_names: list[str] | None,
        feeds: dict[str, np.ndarray],
        run_options: ort.RunOptions | None = None,
    ) -> list[np.ndarray]:
        """The graph's outputs (all, in order, or those named) for `feeds`."""
        if run_options is not None and getattr(run_options, "terminate", False):
            raise TerminatedError("run terminated (its work was cancelled)")
        request = self._request()
        request.infer({k: np.ascontiguousarray(v) for k, v in feeds.items()})
        names = [p.name for p in self._outputs] if output_names is None else output_names
        index = {p.name: i for i, p in enumerate(self._outputs)}
        # copies: the request's output tensors are overwritten by its next run
        return [np.array(request.get_output_tensor(index[n]).data) for n in names]
