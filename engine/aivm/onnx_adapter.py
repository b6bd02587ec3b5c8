"""An `.aivmx` graph turned into the synthesizer graph the rest of the engine runs.

AivisHub's `.aivmx` files are made by Style-Bert-VITS2's `convert_onnx.py` (then
simplified): AivisSpeech binds their inputs **by position** — `x_tst` [B,T], `x_tst_lengths`
[B], `sid` [B], `tones` [B,T], `language` [B,T], `bert` [B,1024,T], `style_vec` [B,256], then
the 0-d float scalars `length_scale`, `sdp_ratio`, `noise_scale`, `noise_scale_w` — and reads
output 0 (`output`, [B,1,samples]). Upstream's `infer` returns six more tensors, unnamed in
the file: the alignment `attn` [B,1,frames,T], `y_mask`, `z`, `z_p`, `m_p`, `logs_p`.

`adapt_graph` rewrites such a model, once, into hayakoe's synthesizer form (what
`engine.synth` loads): inputs `x`, `x_lengths`, `sid`, `tone`, `language`, `bert`,
`style_vec`, `length_scale`, `sdp_ratio`, `noise_scale`, `noise_scale_w` bound to the
original ones by position (the scalars fed as [1] and reshaped to 0-d inside), outputs
`audio` and `durations`. The durations are the alignment summed over frames (frames per
phone id, exactly the ceil'd durations the graph used) — but only after a probe run proves
that the tensor taken is one: integer frames whose sum times the hop is the audio's length.
Without such a tensor the graph gets no `durations` output (pauses fall back to the minimum)
rather than a wrong one. The other outputs are dropped with the nodes only they need.

The noise stays in the graph as `RandomNormalLike`: `engine.synth.onnx_backend` turns it into
seedable inputs when sessions are made, as for every voice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .manifest import AivmFileError

if TYPE_CHECKING:
    import onnx

_LOGGER = logging.getLogger(__name__)

AIVIS_INPUTS = (
    "x_tst",
    "x_tst_lengths",
    "sid",
    "tones",
    "language",
    "bert",
    "style_vec",
    "length_scale",
    "sdp_ratio",
    "noise_scale",
    "noise_scale_w",
)
"""AivisSpeech's inputs, in the order it binds them."""
OUR_INPUTS = (
    "x",
    "x_lengths",
    "sid",
    "tone",
    "language",
    "bert",
    "style_vec",
    "length_scale",
    "sdp_ratio",
    "noise_scale",
    "noise_scale_w",
)
"""The same inputs under hayakoe's names (`engine.synth.onnx_backend` feeds these)."""
_RANKS = (2, 1, 1, 2, 2, 3, 2, 0, 0, 0, 0)
_INTS = (True, True, True, True, True, False, False, False, False, False, False)
AUDIO = "audio"
DURATIONS = "durations"
STAMP_KEYS = ("aivm_uuid", "aivm_version", "aivm_source")


@dataclass(frozen=True)
class AdaptedGraph:
    model: onnx.ModelProto
    bert_channels: int
    has_durations: bool


def _graph_inputs(graph: Any) -> list[Any]:
    inits = {t.name for t in graph.initializer}
    return [i for i in graph.input if i.name not in inits]


def _rank(vi: Any) -> int | None:
    t = vi.type.tensor_type
    return len(t.shape.dim) if t.HasField("shape") else None


def check_inputs(model: onnx.ModelProto, path: Path) -> int:
    """Check the graph takes AivisSpeech's JP-Extra inputs; returns the BERT width."""
    from onnx import TensorProto

    inputs = _graph_inputs(model.graph)
    if len(inputs) != len(AIVIS_INPUTS):
        names = ", ".join(i.name for i in inputs)
        raise AivmFileError(
            path,
            f"the graph takes {len(inputs)} inputs ({names}); a Style-Bert-VITS2 JP-Extra graph "
            f"as AivisSpeech runs it takes {len(AIVIS_INPUTS)} ({', '.join(AIVIS_INPUTS)})",
        )
    for k, (vi, want_rank, is_int) in enumerate(zip(inputs, _RANKS, _INTS, strict=True)):
        elem = vi.type.tensor_type.elem_type
        want = TensorProto.INT64 if is_int else TensorProto.FLOAT
        rank = _rank(vi)
        scalar_ok = want_rank == 0 and rank in (0, 1)
        if elem != want or not (rank == want_rank or scalar_ok or rank is None):
            raise AivmFileError(
                path,
                f"graph input {k} ({vi.name}) is not AivisSpeech's {AIVIS_INPUTS[k]} "
                f"({'int64' if is_int else 'float'}, rank {want_rank})",
            )
        if vi.name != AIVIS_INPUTS[k]:
            _LOGGER.debug("%s: input %d is named %s (bound by position)", path, k, vi.name)
    dims = inputs[5].type.tensor_type.shape.dim
    width = dims[1].dim_value if len(dims) == 3 else 0
    if width <= 0:
        raise AivmFileError(path, "the graph's bert input has no fixed width")
    return int(width)


def _rename_everywhere(graph: Any, old: str, new: str) -> None:
    for node in graph.node:
        for i, x in enumerate(node.input):
            if x == old:
                node.input[i] = new
        for attr in node.attribute:  # If/Loop bodies read outer tensors by name
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                _rename_everywhere(sub, old, new)


def _prune(graph: Any) -> None:
    """Drop nodes (and initializers) no graph output needs."""
    producer = {out: i for i, node in enumerate(graph.node) for out in node.output}
    needed: set[int] = set()
    stack = [o.name for o in graph.output]
    seen: set[str] = set()
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        i = producer.get(t)
        if i is None or i in needed:
            continue
        needed.add(i)
        node = graph.node[i]
        stack.extend(x for x in node.input if x)
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                stack.extend(x for n in sub.node for x in n.input if x)
    keep = [graph.node[i] for i in sorted(needed)]
    del graph.node[:]
    graph.node.extend(keep)
    used = seen | {x for n in keep for x in n.input}
    inits = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(inits)
    vis = [v for v in graph.value_info if v.name in used]
    del graph.value_info[:]
    graph.value_info.extend(vis)


def _bind_inputs(model: Any) -> None:
    """Our named inputs in front of the original ones (by position; scalars [1] → 0-d)."""
    from onnx import helper, numpy_helper

    graph = model.graph
    ours = set(OUR_INPUTS) | {AUDIO, DURATIONS}
    for node in graph.node:  # an inner tensor that happens to have one of our names
        for i, x in enumerate(node.output):
            if x in ours:
                node.output[i] = f"__aivm_t_{x}"
                _rename_everywhere(graph, x, node.output[i])
                for o in graph.output:
                    if o.name == x:
                        o.name = node.output[i]
    originals = _graph_inputs(graph)
    front = []
    new_inputs = []
    scalar_shape = "__aivm_scalar_shape"
    for k, vi in enumerate(originals):
        inner = f"__aivm_in_{k}"
        _rename_everywhere(graph, vi.name, inner)
        elem = vi.type.tensor_type.elem_type
        if _RANKS[k] == 0:
            new_inputs.append(helper.make_tensor_value_info(OUR_INPUTS[k], elem, [1]))
            if _rank(vi) == 1:
                front.append(helper.make_node("Identity", [OUR_INPUTS[k]], [inner]))
            else:
                front.append(helper.make_node("Reshape", [OUR_INPUTS[k], scalar_shape], [inner]))
        else:
            dims = [d.dim_value if d.dim_value > 0 else None for d in vi.type.tensor_type.shape.dim]
            shape: list[Any] = [1] + [d if d is not None else "phone_len" for d in dims[1:]]
            if k in (1, 2):
                shape = [1]
            new_inputs.append(helper.make_tensor_value_info(OUR_INPUTS[k], elem, shape))
            front.append(helper.make_node("Identity", [OUR_INPUTS[k]], [inner]))
    graph.initializer.append(numpy_helper.from_array(np.zeros(0, np.int64), scalar_shape))
    inits = {t.name for t in graph.initializer}
    kept = [i for i in graph.input if i.name in inits]
    del graph.input[:]
    graph.input.extend(new_inputs + kept)
    nodes = front + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)


def _with_outputs(model: Any, durations_from: str | None) -> Any:
    """A copy of `model` with outputs `audio` (+ `durations` from the alignment tensor)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    audio_src = graph.output[0].name
    nodes = [helper.make_node("Identity", [audio_src], [AUDIO])]
    outputs = [helper.make_tensor_value_info(AUDIO, TensorProto.FLOAT, [1, 1, "audio_len"])]
    if durations_from is not None:
        graph.initializer.append(numpy_helper.from_array(np.array([2], np.int64), "__aivm_ax2"))
        graph.initializer.append(numpy_helper.from_array(np.array([1], np.int64), "__aivm_ax1"))
        nodes += [
            helper.make_node(
                "ReduceSum", [durations_from, "__aivm_ax2"], ["__aivm_frames"], keepdims=0
            ),
            helper.make_node("Squeeze", ["__aivm_frames", "__aivm_ax1"], [DURATIONS]),
        ]
        outputs.append(
            helper.make_tensor_value_info(DURATIONS, TensorProto.FLOAT, [1, "phone_len"])
        )
    graph.node.extend(nodes)
    del graph.output[:]
    graph.output.extend(outputs)
    _prune(graph)
    return out


def _probe_feeds(bert_channels: int, style_dim: int, t: int = 11) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    phones = rng.integers(1, 100, t)
    phones[::2] = 0
    return {
        "x": phones.reshape(1, t).astype(np.int64),
        "x_lengths": np.array([t], np.int64),
        "sid": np.array([0], np.int64),
        "tone": np.where(phones > 0, 7, 0).reshape(1, t).astype(np.int64),
        "language": np.where(phones > 0, 1, 0).reshape(1, t).astype(np.int64),
        "bert": rng.standard_normal((1, bert_channels, t)).astype(np.float32),
        "style_vec": rng.standard_normal((1, style_dim)).astype(np.float32) * 0.1,
        "length_scale": np.array([1.0], np.float32),
        "sdp_ratio": np.array([0.0], np.float32),
        "noise_scale": np.array([0.0], np.float32),
        "noise_scale_w": np.array([0.0], np.float32),
    }


def _alignment_output(
    model: Any, hop_length: int, bert_channels: int, style_dim: int, path: Path
) -> str | None:
    """The output that is the alignment [1, 1, frames, T] (checked by a probe run), or None."""
    import onnx
    import onnxruntime as ort

    from ..synth.onnx_backend import NOISE_INPUT, make_noise_inputs

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    n_noise = make_noise_inputs(probe)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    try:
        sess = ort.InferenceSession(
            probe.SerializeToString(), sess_options=opts, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:
        raise AivmFileError(path, f"ONNX Runtime cannot load the graph ({exc})") from exc
    feeds = _probe_feeds(bert_channels, style_dim)
    for k in range(n_noise):
        feeds[NOISE_INPUT.format(k)] = np.zeros(1 << 16, np.float32)
    names = [o.name for o in sess.get_outputs()]
    try:
        outs = sess.run(None, feeds)
    except Exception as exc:
        raise AivmFileError(path, f"the graph fails on a probe input ({exc})") from exc
    samples = outs[0].shape[-1]
    t = feeds["x"].shape[1]
    for name, value in zip(names[1:], outs[1:]):
        if value.ndim != 4 or value.shape[:2] != (1, 1) or value.shape[3] != t:
            continue
        frames = value.sum(axis=2)[0, 0]
        if (
            np.all(frames >= 0)
            and np.allclose(frames, np.rint(frames), atol=1e-4)
            and int(np.rint(frames).sum()) * hop_length == samples
        ):
            return str(name)
    return None


def _name_nodes(graph: Any) -> None:
    """A unique name for every unnamed node (simplifiers may drop them; int8 quantization
    picks the nodes it leaves in fp32 by name)."""
    taken = {n.name for n in graph.node if n.name}
    for i, node in enumerate(graph.node):
        if not node.name:
            name = f"aivm_{node.op_type}_{i}"
            while name in taken:
                name += "_"
            node.name = name
            taken.add(name)


def adapt_graph(
    model: onnx.ModelProto,
    path: Path,
    *,
    hop_length: int,
    style_dim: int,
    stamp: dict[str, str],
) -> AdaptedGraph:
    """`model` (an `.aivmx`'s onnx.ModelProto, edited in place) in hayakoe's synthesizer form
    (see the module doc), its metadata replaced by `stamp`."""
    bert_channels = check_inputs(model, path)
    if len(model.graph.output) < 1:
        raise AivmFileError(path, "the graph has no outputs")
    _bind_inputs(model)
    durations_from = _alignment_output(model, hop_length, bert_channels, style_dim, path)
    if durations_from is None:
        _LOGGER.warning(
            "%s: no output is the alignment (frames per phone); sentence pauses use the "
            "minimum for this voice",
            path,
        )
    adapted = _with_outputs(model, durations_from)
    _name_nodes(adapted.graph)
    del adapted.metadata_props[:]
    for key, value in stamp.items():
        entry = adapted.metadata_props.add()
        entry.key, entry.value = key, value
    adapted.producer_name = "wyoming-hayakoe (from an .aivmx)"
    return AdaptedGraph(adapted, bert_channels, durations_from is not None)
