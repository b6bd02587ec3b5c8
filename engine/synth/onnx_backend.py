"""ONNX Runtime synthesizer backend (the CPU default), reading hayakoe's files.

hayakoe's `synthesizer.onnx` / `duration_predictor.onnx` draw their noise inside the graph
(RandomNormalLike), which cannot be seeded per request. At load time we rewrite each such
node into "take this many values from a flat input `noise_<k>`, zero-pad, reshape like the
original" (`make_noise_inputs`). The files on disk stay hayakoe's, voices exported by
hayakoe's own tooling get seeds too, and the weights are not stored twice. The k-th noise
node in graph order is stream k of `NoiseSource` (0: duration predictor, 1: prior).

Sessions are made once per voice and reused for every request; thread counts suit small
CPUs (all physical cores for one request at a time, no busy-spinning between requests).
"""

from __future__ import annotations

import logging
import math
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import onnx
    import onnxruntime as ort

from ..options import EngineOptions
from .common import NoiseSource, SynthInputs, SynthOutput, SynthParams

_LOGGER = logging.getLogger(__name__)

NOISE_INPUT = "noise_{}"


def default_threads() -> int:
    """Intra-op threads when none are given: the usable CPU count, at most 8."""
    return EngineOptions().intra_op_threads


def session_options(threads: int | None = None) -> ort.SessionOptions:
    """Options for one long-lived session on a small CPU."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.intra_op_num_threads = threads or default_threads()
    opts.inter_op_num_threads = 1
    # Requests come one at a time per voice: spinning threads would only burn CPU (and
    # heat a Raspberry Pi) between sentences.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return opts


def make_noise_inputs(model: onnx.ModelProto) -> int:  # edited in place
    """Replace every RandomNormalLike node of `model`'s main graph by a flat float input
    `noise_<k>` (k in graph order). Returns how many were replaced."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    new_nodes = []
    count = 0
    one = "__noise_shape1"
    for node in graph.node:
        if node.op_type == "RandomNormal":
            _LOGGER.warning("ONNX graph has a RandomNormal node with a fixed shape; left as is")
        if node.op_type != "RandomNormalLike":
            new_nodes.append(node)
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        mean = float(attrs.get("mean", 0.0))
        scale = float(attrs.get("scale", 1.0))
        like, out = node.input[0], node.output[0]
        name = NOISE_INPUT.format(count)
        p = f"__noise{count}_"
        graph.input.append(
            helper.make_tensor_value_info(name, TensorProto.FLOAT, [f"noise_len_{count}"])
        )
        nodes = [
            helper.make_node("Shape", [like], [p + "shape"]),
            helper.make_node("Size", [like], [p + "size"]),
            helper.make_node("Reshape", [p + "size", one], [p + "size1"]),
            helper.make_node(
                "ConstantOfShape",
                [p + "size1"],
                [p + "zeros"],
                value=numpy_helper.from_array(np.zeros(1, np.float32)),
            ),
            helper.make_node("Concat", [name, p + "zeros"], [p + "padded"], axis=0),
            helper.make_node("Slice", [p + "padded", p + "start", p + "size1"], [p + "flat"]),
            helper.make_node(
                "Reshape", [p + "flat", p + "shape"], [p + "std" if (mean or scale != 1.0) else out]
            ),
        ]
        graph.initializer.append(numpy_helper.from_array(np.zeros(1, np.int64), p + "start"))
        if mean or scale != 1.0:
            graph.initializer.append(
                numpy_helper.from_array(np.array(scale, np.float32), p + "scale")
            )
            graph.initializer.append(
                numpy_helper.from_array(np.array(mean, np.float32), p + "mean")
            )
            nodes.append(helper.make_node("Mul", [p + "std", p + "scale"], [p + "scaled"]))
            nodes.append(helper.make_node("Add", [p + "scaled", p + "mean"], [out]))
        new_nodes.extend(nodes)
        count += 1
    if count:
        graph.initializer.append(numpy_helper.from_array(np.array([1], np.int64), one))
        del graph.node[:]
        graph.node.extend(new_nodes)
    return count


_SessionKey = tuple[str, int, int, int]
_SESSIONS: weakref.WeakValueDictionary[_SessionKey, Any] = weakref.WeakValueDictionary()
_NOISE_COUNTS: dict[_SessionKey, int] = {}
_CACHE_LOCK = threading.Lock()


def load_session(path: Path, threads: int | None = None) -> tuple[ort.InferenceSession, int]:
    """An InferenceSession for `path` with its noise nodes turned into inputs.

    Returns (session, number of noise inputs). Sessions are shared: the same file (same
    size and mtime) with the same thread count gives the same session for as long as any
    voice holds it (ONNX Runtime sessions may be run from several threads at once)."""
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, threads or default_threads())
    with _CACHE_LOCK:
        sess = _SESSIONS.get(key)
        if sess is None:
            sess, n = _new_session(path, threads)
            _SESSIONS[key] = sess
            _NOISE_COUNTS[key] = n
        return sess, _NOISE_COUNTS[key]


def _new_session(path: Path, threads: int | None) -> tuple[Any, int]:
    import onnx
    import onnxruntime as ort

    model = onnx.load(str(path))
    n = make_noise_inputs(model)
    data = model.SerializeToString()
    del model
    sess = ort.InferenceSession(
        data, sess_options=session_options(threads), providers=["CPUExecutionProvider"]
    )
    return sess, n


class OnnxSynthesizer:
    """hayakoe-layout ONNX voice: synthesizer (+ optional duration predictor)."""

    kind = "onnx"
    precision = "fp32"
    runtime = "onnxruntime"
    prior_frames_per_id = 4.0
    """First guess of frames per phone id (× length_scale) when drawing prior noise; too
    few is corrected by a second run with exactly enough."""

    def __init__(
        self,
        synthesizer: Path,
        duration_predictor: Path | None,
        *,
        inter_channels: int,
        hop_length: int,
        sample_rate: int,
        threads: int | None = None,
    ) -> None:
        self.hop_length = hop_length
        self.sample_rate = sample_rate
        self.inter_channels = inter_channels
        self._synth, n = load_session(Path(synthesizer), threads)
        self._synth_inputs = {i.name for i in self._synth.get_inputs()}
        self._synth_noise = n
        names = [o.name for o in self._synth.get_outputs()]
        # Durations only from an output that says it holds them (hayakoe's and our exports
        # name it); any other second output (an alignment, a mask) is not frames per phone.
        self._durations_at = names.index("durations") if "durations" in names[1:] else None
        self._has_durations = self._durations_at is not None
        self._dp = None
        self._dp_noise = 0
        self.redraws = 0
        if duration_predictor is not None:
            self._dp, self._dp_noise = load_session(Path(duration_predictor), threads)
        _LOGGER.debug("ONNX synthesizer %s: %d noise inputs", synthesizer, n)

    @property
    def has_duration_predictor(self) -> bool:
        return self._dp is not None

    def _synth_feeds(self, inputs: SynthInputs, params: SynthParams) -> dict[str, np.ndarray]:
        """Every input of hayakoe's synthesizer graph: the text inputs plus the four scalars."""
        feeds = self._feeds(inputs)
        feeds.update(
            noise_scale=np.array([params.noise_scale], np.float32),
            length_scale=np.array([params.length_scale], np.float32),
            noise_scale_w=np.array([params.noise_scale_w], np.float32),
            sdp_ratio=np.array([params.sdp_ratio], np.float32),
        )
        return feeds

    @staticmethod
    def _feeds(inputs: SynthInputs) -> dict[str, np.ndarray]:
        t = inputs.length
        return {
            "x": np.asarray(inputs.phone_ids, np.int64).reshape(1, t),
            "x_lengths": np.array([t], np.int64),
            "sid": np.array([inputs.speaker_id], np.int64),
            "tone": np.asarray(inputs.tone_ids, np.int64).reshape(1, t),
            "language": np.asarray(inputs.lang_ids, np.int64).reshape(1, t),
            "bert": np.ascontiguousarray(inputs.bert, np.float32)[None],
            "style_vec": np.asarray(inputs.style_vec, np.float32).reshape(1, -1),
        }

    def release_memory(self) -> None:
        """Nothing to give back between requests (see `SynthBackend.release_memory`)."""

    def synthesize(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> SynthOutput:
        feeds = self._synth_feeds(inputs, params)
        t = inputs.length
        guess = math.ceil(t * self.prior_frames_per_id * max(params.length_scale, 0.1)) + 16
        while True:
            sizes = [2 * t, self.inter_channels * guess]
            for k in range(self._synth_noise):
                feeds[NOISE_INPUT.format(k)] = noise.stream(k, sizes[min(k, 1)])
            feeds = {k: v for k, v in feeds.items() if k in self._synth_inputs}
            outs = self._synth.run(None, feeds)
            frames = outs[0].shape[-1] // self.hop_length
            if self._synth_noise < 2 or frames <= guess:
                break
            self.redraws += 1
            guess = frames  # drew too little prior noise: redo with exactly enough
        durations = None
        if self._durations_at is not None:
            durations = np.rint(outs[self._durations_at][0]).astype(np.int64)
        return SynthOutput(np.asarray(outs[0][0, 0], np.float32), durations)

    def predict_durations(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> np.ndarray | None:
        if self._dp is None:
            return None
        feeds = self._feeds(inputs)
        feeds.update(
            length_scale=np.array([params.length_scale], np.float32),
            noise_scale_w=np.array([params.noise_scale_w], np.float32),
            sdp_ratio=np.array([params.sdp_ratio], np.float32),
        )
        for k in range(self._dp_noise):
            feeds[NOISE_INPUT.format(k)] = noise.stream(k, 2 * inputs.length)
        out = self._dp.run(None, feeds)[0]
        return np.asarray(np.rint(out[0]), dtype=np.int64)
