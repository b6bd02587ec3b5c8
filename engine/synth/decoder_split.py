"""Cut hayakoe's `synthesizer.onnx` in two at the decoder, for sub-sentence streaming.

`synthesizer.onnx` runs text encoder → durations → flow → HiFi-GAN decoder in one graph, so
no audio exists before the whole sentence is vocoded. Cut at the decoder's input, it becomes

- a *front* graph: the same inputs (noise already turned into inputs by
  `synth_onnx.make_noise_inputs`) → latent `z` `[1, C, frames]`, speaker conditioning `g`
  `[1, gin, 1]` and, when the original has it, `durations`;
- a *decoder* graph: `z`, `g` → `audio` `[1, 1, frames·hop]`, which `engine.synth.windowed`
  runs on overlapping windows of `z`.

The cut is made in memory at load time, so the files on disk stay hayakoe's (hayakoe keeps
loading them) and the weights are not stored twice; the two sessions together hold the
same weights as the one they replace.

The decoder's input is found by structure, not by node names (which exporters may drop):
the first `ConvTranspose` is the first upsampling layer; before it come a LeakyRelu and
`conv_pre(z) + cond(g)` (a kernel-7 Conv and a kernel-1 Conv added), or just `conv_pre(z)`
for a voice without speaker conditioning.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import EngineError
from ..heap import trim_heap
from ..options import ONNXRUNTIME, OPENVINO, RUNTIME_NAMES
from .common import Latent, NoiseSource, SynthInputs, SynthOutput, SynthParams
from .exact_speed import exact_speed_frames
from .onnx_backend import NOISE_INPUT, OnnxSynthesizer, make_noise_inputs, session_options
from .polyphase import upsampling_layers
from .qdq_simplify import DEQUANTIZE, QUANTIZE, simplify_qdq
from .windowed import DecoderGeometry, DecoderStage, StagedDecoding

if TYPE_CHECKING:
    import onnx

    from ..sources.cache import CacheDir, StampValue

_LOGGER = logging.getLogger(__name__)

Z_NAME = "z"
G_NAME = "g"


class SplitError(EngineError, ValueError):
    """The graph does not look like a JP-Extra synthesizer with a HiFi-GAN decoder."""


@dataclass(frozen=True)
class DecoderCut:
    """Where the decoder starts in a synthesizer graph."""

    z: str  # tensor feeding conv_pre
    g: str | None  # tensor feeding the decoder's cond conv (None: no speaker conditioning)
    channels: int
    gin: int


def _kernel(graph: Any, node: Any, inits: dict[str, Any]) -> tuple[int, int, int] | None:
    """(out, in, kernel) of a Conv node's constant weight, or None."""
    if node.op_type != "Conv" or len(node.input) < 2 or node.input[1] not in inits:
        return None
    dims = list(inits[node.input[1]].dims)
    return (dims[0], dims[1], dims[2]) if len(dims) == 3 else None


def find_decoder_cut(model: onnx.ModelProto) -> DecoderCut:
    """Locate the decoder input tensors in `model` (onnx.ModelProto)."""
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    first_up = next((n for n in graph.node if n.op_type == "ConvTranspose"), None)
    if first_up is None:
        raise SplitError("no ConvTranspose node: not a HiFi-GAN decoder")
    act = producer.get(first_up.input[0])
    if act is None or act.op_type != "LeakyRelu":
        raise SplitError("first upsampling layer is not preceded by a LeakyRelu")
    src = producer.get(act.input[0])
    if src is None:
        raise SplitError("cannot follow the decoder input back from the first LeakyRelu")
    if src.op_type == "Conv":
        k = _kernel(graph, src, inits)
        if k is None:
            raise SplitError("decoder conv_pre has no constant weight")
        return DecoderCut(src.input[0], None, k[1], 0)
    if src.op_type != "Add":
        raise SplitError(f"decoder input is a {src.op_type}, expected conv_pre + cond")
    pre: tuple[Any, Any] | None = None
    cond: tuple[Any, Any] | None = None
    for name in src.input:
        node = producer.get(name)
        k = _kernel(graph, node, inits) if node is not None else None
        if k is None or node is None:
            continue
        if k[2] == 1:
            cond = (node, k)
        else:
            pre = (node, k)
    if pre is None or cond is None:
        raise SplitError("decoder input Add does not join conv_pre and cond convolutions")
    return DecoderCut(pre[0].input[0], cond[0].input[0], pre[1][1], cond[1][1])


def _subgraph(model: Any, inputs: list[Any], outputs: list[Any], name: str) -> Any:
    """A model with the nodes `outputs` need, reading `inputs` (value infos)."""
    from onnx import helper

    graph = model.graph
    producer = {out: i for i, node in enumerate(graph.node) for out in node.output}
    stop = {vi.name for vi in inputs}
    needed: set[int] = set()
    stack = [vi.name for vi in outputs]
    seen: set[str] = set()
    while stack:
        t = stack.pop()
        if t in seen or t in stop:
            continue
        seen.add(t)
        i = producer.get(t)
        if i is None or i in needed:
            continue
        needed.add(i)
        stack.extend(x for x in graph.node[i].input if x)
        for attr in graph.node[i].attribute:  # subgraphs (If/Loop) read outer tensors
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                for n in sub.node:
                    stack.extend(x for x in n.input if x)
    nodes = [graph.node[i] for i in sorted(needed)]
    used = {x for n in nodes for x in n.input} | seen
    inits = [t for t in graph.initializer if t.name in used]
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    out = helper.make_model(g, opset_imports=model.opset_import, producer_name="wyoming-hayakoe")
    out.ir_version = model.ir_version
    return out


def split_synthesizer(
    model: onnx.ModelProto,
) -> tuple[onnx.ModelProto, onnx.ModelProto, DecoderCut]:
    """(front, decoder, cut) from a synthesizer `model` (see the module doc)."""
    from onnx import TensorProto, helper

    cut = find_decoder_cut(model)
    graph = model.graph
    z_vi = helper.make_tensor_value_info(cut.z, TensorProto.FLOAT, [1, cut.channels, "frames"])
    g_vi = (
        helper.make_tensor_value_info(cut.g, TensorProto.FLOAT, [1, cut.gin, 1]) if cut.g else None
    )
    audio_vi = graph.output[0]
    extra = [o for o in graph.output[1:] if o.name == "durations"]
    front = _subgraph(model, list(graph.input), [z_vi] + ([g_vi] if g_vi else []) + extra, "front")
    decoder = _subgraph(model, [z_vi] + ([g_vi] if g_vi else []), [audio_vi], "decoder")
    # Stable public names on both sides of the cut.
    for m in (front, decoder):
        _rename(m.graph, cut.z, Z_NAME)
        if cut.g:
            _rename(m.graph, cut.g, G_NAME)
    front_inputs = {i.name for i in front.graph.input}
    missing = {i.name for i in graph.input} - front_inputs
    if missing:  # inputs the front does not need (fine) are dropped by ORT anyway
        _LOGGER.debug("front graph does not use inputs %s", sorted(missing))
    return front, decoder, cut


def _rename(graph: Any, old: str, new: str) -> None:
    for coll in (graph.input, graph.output, graph.value_info):
        for vi in coll:
            if vi.name == old:
                vi.name = new
    for node in graph.node:
        for i, x in enumerate(node.input):
            if x == old:
                node.input[i] = new
        for i, x in enumerate(node.output):
            if x == old:
                node.output[i] = new


_PASS_THROUGH = (QUANTIZE, DEQUANTIZE, "Unsqueeze")
"""Nodes between a LeakyRelu and the ConvTranspose it feeds: Q/DQ in a quantized (QDQ)
graph, Unsqueeze in the 2-D convolution variant (`conv1d_as_conv2d`)."""

STAGE_IN = "x"
STAGE_OUT = "y"


def find_stage_cuts(decoder: onnx.ModelProto) -> list[str]:
    """The tensors where the decoder's upsampling stages begin: the input of the LeakyRelu
    before each upsampling layer (a ConvTranspose, or its polyphase Conv:
    `engine.synth.polyphase`; through Q/DQ nodes in a quantized graph), in graph order."""
    producer = {out: node for node in decoder.graph.node for out in node.output}
    cuts = []
    for node in upsampling_layers(decoder.graph):
        src = producer.get(node.input[0])
        while src is not None and src.op_type in _PASS_THROUGH:
            src = producer.get(src.input[0])
        if src is None or src.op_type != "LeakyRelu":
            raise SplitError(f"upsampling layer {node.name!r} is not preceded by a LeakyRelu")
        cuts.append(src.input[0])
    if not cuts:
        raise SplitError("no ConvTranspose node: not a HiFi-GAN decoder")
    return cuts


def _integer_cuts(graph: onnx.GraphProto, cuts: list[str]) -> list[tuple[str, int]]:
    """Where the stages of `graph` end for the float tensors `cuts`, with their element
    types: in a quantized graph, where a cut is a DequantizeLinear's output (constant scale
    and zero point), the 8-bit tensor it reads (the next stage dequantizes it, and ONNX
    Runtime fuses that into its int8 kernels); else the cut itself, float."""
    from onnx import TensorProto

    producer = {out: node for node in graph.node for out in node.output}
    inits = {t.name: t for t in graph.initializer}
    found = []
    for cut in cuts:
        node = producer.get(cut)
        if (
            node is not None
            and node.op_type == DEQUANTIZE
            and len(node.input) >= 3
            and node.input[1] in inits
            and node.input[2] in inits
        ):
            found.append((node.input[0], inits[node.input[2]].data_type))
        else:
            found.append((cut, TensorProto.FLOAT))
    return found


def split_decoder_stages(decoder: onnx.ModelProto, simplify: bool = True) -> list[onnx.ModelProto]:
    """The decoder graph (`z`, `g` → `audio`) cut at each upsampling stage's input
    (`engine.synth.windowed.StagedDecoding`): stage 0 reads `z` (and `g`) and gives `y`;
    every later stage reads `x` and gives `y`, the last one the audio. Run in order, the
    stages compute exactly what the decoder computes.

    A quantized decoder is first simplified in place (`engine.synth.qdq_simplify`) and cut
    where each stage's result is still 8-bit: `x`/`y` between stages are then uint8, a
    quarter of the bytes, with no float pass at either side. `simplify=False` cuts it as
    before that (float between stages; the benchmarks' baseline)."""
    from onnx import TensorProto, helper

    graph = decoder.graph
    if simplify:
        simplify_qdq(decoder)
        cuts = _integer_cuts(graph, find_stage_cuts(decoder))
    else:
        cuts = [(cut, TensorProto.FLOAT) for cut in find_stage_cuts(decoder)]
    inputs = list(graph.input)
    stages = []
    last = (graph.output[0].name, graph.output[0].type.tensor_type.elem_type)
    for k, (end, elem) in enumerate(cuts + [last]):
        out_vi = helper.make_tensor_value_info(end, elem, [1, f"c{k + 1}", f"n{k + 1}"])
        stage = _subgraph(decoder, inputs, [out_vi], f"decoder_stage{k}")
        _rename(stage.graph, end, STAGE_OUT)
        if k:
            _rename(stage.graph, inputs[0].name, STAGE_IN)
        stages.append(stage)
        inputs = [helper.make_tensor_value_info(end, elem, [1, f"c{k + 1}", f"n{k + 1}"])]
    return stages


def conv1d_as_conv2d(model: onnx.ModelProto) -> int:
    """Run every 1-D convolution (constant weight) of `model` as a 2-D one, in place.

    `Unsqueeze(x, 2)` → Conv/ConvTranspose with weight `[O, I, 1, K]` → `Squeeze(y, 2)`.
    The arithmetic is the same (float32, another summation order: about 1e-7 on the audio),
    but ONNX Runtime's CPU provider has blocked-layout (NCHWc) kernels only for 2-D
    convolutions. Measured on x86 (`benchmarks/run.py`): no gain on an idle machine, so it
    is opt-in (`EngineOptions.conv2d`). Returns how many convolutions were rewritten."""
    from onnx import helper, numpy_helper

    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    axis = "__conv2d_axis"
    nodes = []
    count = 0
    for node in graph.node:
        weight = (
            inits.get(node.input[1])
            if node.op_type in ("Conv", "ConvTranspose") and len(node.input) > 1
            else None
        )
        if weight is None or len(weight.dims) != 3:
            nodes.append(node)
            continue
        arr = numpy_helper.to_array(weight)
        weight.CopyFrom(
            numpy_helper.from_array(np.ascontiguousarray(arr[:, :, None, :]), weight.name)
        )
        for a in node.attribute:  # a new leading spatial axis of size 1
            if a.name in ("kernel_shape", "strides", "dilations", "output_shape"):
                a.ints[:] = [1] + list(a.ints)
            elif a.name == "output_padding":
                a.ints[:] = [0] + list(a.ints)
            elif a.name == "pads":
                begin, end = list(a.ints)
                a.ints[:] = [0, begin, 0, end]
        x, y = node.input[0], node.output[0]
        x4, y4 = f"{x}__as2d{count}", f"{y}__as2d{count}"
        nodes.append(helper.make_node("Unsqueeze", [x, axis], [x4]))
        node.input[0], node.output[0] = x4, y4
        nodes.append(node)
        nodes.append(helper.make_node("Squeeze", [y4, axis], [y]))
        count += 1
    if count:
        graph.initializer.append(numpy_helper.from_array(np.array([2], np.int64), axis))
        del graph.node[:]
        graph.node.extend(nodes)
        del graph.value_info[:]  # stale 3-D shapes; ORT infers them again
    return count


RELEASE_FRAMES = 128
"""`release_memory` acts only after a decoder run longer than this (frames)."""

FRONT_FILE = "synthesizer.front{}.onnx"
DECODER_FILE = "synthesizer.decoder{}.onnx"
STAMP_FILE = "synthesizer.split{}.json"
FORMAT = 4  # bump when the derived graphs change (4: exact speed in the front)


def _variant(conv2d: bool) -> str:
    return ".conv2d" if conv2d else ""


def _stamp(source: Path) -> dict[str, StampValue]:
    from ..sources.cache import file_stamp

    return file_stamp(source, format=FORMAT, source=source.name)


def _candidates(source: Path, cache_dir: CacheDir = None) -> list[Path]:
    """Where derived graphs are written: under the cache root, never in the voice folder."""
    from ..sources.cache import derived_dir

    return [derived_dir(source, cache_dir)]


def derived_graphs(
    source: Path, cache_dir: CacheDir = None, *, conv2d: bool = False
) -> tuple[Path, Path]:
    """(front, decoder) ONNX files cut from `source` (noise as inputs), made once.

    Cached under `<cache>/derived/` (the voice folder stays as it was; a copy that older
    versions left beside `source` is used only if its stamp matches). A stamp (size, mtime
    of `source`) makes a changed `synthesizer.onnx` re-derive. Loading sessions from files
    (rather than from bytes made in memory at every start) keeps a process's memory at one
    copy of the weights."""
    import onnx

    source = Path(source)
    variant = _variant(conv2d)
    front_name, decoder_name, stamp_name = (
        f.format(variant) for f in (FRONT_FILE, DECODER_FILE, STAMP_FILE)
    )
    want = _stamp(source)
    dirs = _candidates(source, cache_dir)
    from ..sources.cache import stamp_matches, write_stamp

    for d in [*dirs, source.parent]:  # beside the voice: left there by older versions
        if (
            stamp_matches(d / stamp_name, want)
            and (d / front_name).is_file()
            and (d / decoder_name).is_file()
        ):
            return d / front_name, d / decoder_name
    model = onnx.load(str(source))
    make_noise_inputs(model)
    front, decoder, _ = split_synthesizer(model)
    del model
    exact_speed_frames(front)
    if variant:
        n = conv1d_as_conv2d(front) + conv1d_as_conv2d(decoder)
        _LOGGER.debug("%d convolutions run as 2-D", n)
    errors = []
    for d in dirs:
        try:
            d.mkdir(parents=True, exist_ok=True)
            for m, name in ((front, front_name), (decoder, decoder_name)):
                tmp = d / f".{name}.partial"
                onnx.save(m, str(tmp))
                os.replace(tmp, d / name)
            write_stamp(d / stamp_name, want)
        except OSError as exc:
            errors.append(f"{d}: {exc}")
            continue
        del front, decoder
        trim_heap()
        _LOGGER.info("Cut %s at the decoder → %s", source, d)
        return d / front_name, d / decoder_name
    raise OSError(f"cannot write the split graphs of {source} anywhere: {'; '.join(errors)}")


class SplitOnnxSynthesizer(OnnxSynthesizer):
    """`OnnxSynthesizer` whose graph is cut at the decoder: `latent()` + `decode()` for
    windowed streaming, and `synthesize()` (both halves, whole sentence) as before.

    The duration predictor session (used only by `predict_durations`) is opened on first
    use, so a speaker that never needs it does not hold its weights."""

    kind = "onnx"

    def __init__(
        self,
        synthesizer: Path,
        duration_predictor: Path | None,
        *,
        inter_channels: int,
        hop_length: int,
        sample_rate: int,
        geometry: DecoderGeometry,
        threads: int | None = None,
        cache_dir: CacheDir = None,
        conv2d: bool = False,
        release_memory: bool = True,
        decoder: Path | None = None,
        front: Path | None = None,
        precision: str = "fp32",
        runtime: str = ONNXRUNTIME,
    ) -> None:
        """`decoder` and `front` replace the fp32 graphs cut from `synthesizer` (the int8
        graphs of `engine.int8`, same inputs and outputs); `precision` names what runs
        ("fp32", "int8", or "bf16"/"fp16": the decoder in that arithmetic, where the
        runtime offers it); `runtime` is "onnxruntime" or "openvino"
        (`engine.synth.openvino_backend`: the same graphs, the same code)."""
        import onnxruntime as ort

        self.hop_length = hop_length
        self.sample_rate = sample_rate
        self.inter_channels = inter_channels
        self.geometry = geometry
        self.context = geometry.context_frames()
        if geometry.hop != hop_length:
            raise SplitError(
                f"decoder upsamples by {geometry.hop}, config hop_length is {hop_length}"
            )
        fp32_front, fp32_decoder = derived_graphs(Path(synthesizer), cache_dir, conv2d=conv2d)
        self.fp32_front_path = fp32_front
        """The fp32 front graph cut from the synthesizer (calibration's reference)."""
        self.fp32_decoder_path = fp32_decoder
        """The fp32 decoder graph cut from the synthesizer (calibration's reference)."""
        decoder = Path(decoder) if decoder is not None else fp32_decoder
        front = Path(front) if front is not None else fp32_front
        self.decoder_path = decoder
        self.front_path = front
        self.precision = precision
        """Arithmetic of the quantized parts: "fp32", "int8", "bf16" or "fp16"."""
        if runtime not in RUNTIME_NAMES:
            raise ValueError(f"runtime must be one of {', '.join(RUNTIME_NAMES)}, got {runtime!r}")
        self.runtime = runtime
        """What runs the front graph and the decoder: "onnxruntime" or "openvino"."""
        opts = session_options(threads)
        # the front stays fp32 arithmetic (its durations must not move); bf16/fp16: decoder
        front_kind = "int8" if precision == "int8" else "fp32"
        self._synth = _session(front, runtime, opts, threads, front_kind)
        self._stages = _stage_sessions(decoder, opts, runtime, threads, precision)
        self._stage_shapes = geometry.stages()
        if len(self._stage_shapes) != len(self._stages):
            raise SplitError(
                f"decoder graph has {len(self._stages) - 1} upsampling stages, config.json "
                f"describes {len(self._stage_shapes) - 1}"
            )
        self._decoder = self._stages[0]  # reads z (and g)
        self._has_g = G_NAME in {i.name for i in self._decoder.get_inputs()}
        self._synth_inputs = {i.name for i in self._synth.get_inputs()}
        self._synth_noise = 0  # noise_0, noise_1, ... (not noise_scale and noise_scale_w)
        while NOISE_INPUT.format(self._synth_noise) in self._synth_inputs:
            self._synth_noise += 1
        self._has_durations = any(o.name == "durations" for o in self._synth.get_outputs())
        # After a request, give decoder activation memory back (`release_memory`).
        self._release = release_memory
        self._used = 0  # largest decoder run (frames) since the last release
        self._gin = next(
            (int(i.shape[1]) for i in self._decoder.get_inputs() if i.name == G_NAME), 0
        )
        self._shrink = ort.RunOptions()
        self._shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        self.run_options: Any = None
        """ONNX Runtime `RunOptions` of every run of the front graph and the decoder (None:
        the defaults); int8 calibration sets one whose `terminate` stops a run part-way."""
        self._dp_path = Path(duration_predictor) if duration_predictor is not None else None
        self._threads = threads
        self._dp = None
        self._dp_noise = 0
        trim_heap()  # what session creation freed (else it stays resident)
        _LOGGER.debug("ONNX synthesizer %s split at the decoder", synthesizer)

    @property
    def has_duration_predictor(self) -> bool:
        return self._dp_path is not None

    def predict_durations(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> np.ndarray | None:
        if self._dp is None and self._dp_path is not None:
            from .onnx_backend import load_session

            self._dp, self._dp_noise = load_session(self._dp_path, self._threads)
        return super().predict_durations(inputs, params, noise)

    @property
    def prior_noise_input(self) -> str | None:
        """The front graph's input that carries the prior's noise (one value per latent
        channel and frame; the flow runs on what it feeds), or None without one."""
        if self._synth_noise < 2:
            return None
        return NOISE_INPUT.format(self._synth_noise - 1)

    def latent(self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource) -> Latent:
        """Run the front graph: the sentence's latent, ready for `decode`."""
        return self.latent_and_feeds(inputs, params, noise)[0]

    def latent_and_feeds(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> tuple[Latent, dict[str, np.ndarray]]:
        """`latent`, and the front graph's inputs that gave it (int8 calibration runs the
        front graph on them)."""
        feeds = self._synth_feeds(inputs, params)
        t = inputs.length
        guess = math.ceil(t * 4 * max(params.length_scale, 0.1)) + 16
        names = [o.name for o in self._synth.get_outputs()]
        while True:
            sizes = [2 * t, self.inter_channels * guess]
            for k in range(self._synth_noise):
                feeds[NOISE_INPUT.format(k)] = noise.stream(k, sizes[min(k, 1)])
            feeds = {k: v for k, v in feeds.items() if k in self._synth_inputs}
            outs = dict(zip(names, self._synth.run(None, feeds, self.run_options), strict=True))
            frames = outs[Z_NAME].shape[-1]
            if self._synth_noise < 2 or frames <= guess:
                break
            guess = frames
        durations = None
        if self._has_durations:
            durations = np.rint(outs["durations"][0]).astype(np.int64)
        return Latent(outs[Z_NAME], outs.get(G_NAME), durations), feeds

    def latent_of_feeds(self, feeds: dict[str, np.ndarray]) -> Latent:
        """The front graph run on `feeds` as `latent_and_feeds` gave them (another
        synthesizer's, for the fidelity gate: the same inputs and noise)."""
        names = [o.name for o in self._synth.get_outputs()]
        feeds = {k: v for k, v in feeds.items() if k in self._synth_inputs}
        outs = dict(zip(names, self._synth.run(None, feeds, self.run_options), strict=True))
        durations = None
        if self._has_durations:
            durations = np.rint(outs["durations"][0]).astype(np.int64)
        return Latent(outs[Z_NAME], outs.get(G_NAME), durations)

    def staged(self, latent: Latent, z: np.ndarray | None = None) -> StagedDecoding:
        """Incremental exact decoding of `z` (default: the whole latent) stage by stage:
        `audio_until(frame)` (see `engine.synth.windowed.StagedDecoding`)."""
        latent_z = latent.z if z is None else z
        self._used = max(self._used, int(latent_z.shape[-1]))
        g = latent.g

        def first(x: np.ndarray) -> np.ndarray:
            feeds = {Z_NAME: x}
            if self._has_g and g is not None:
                feeds[G_NAME] = g
            return np.asarray(self._decoder.run(None, feeds, self.run_options)[0])

        def later(sess: Any) -> Callable[[np.ndarray], np.ndarray]:
            return lambda x: sess.run(None, {STAGE_IN: x}, self.run_options)[0]

        runs = [first] + [later(sess) for sess in self._stages[1:]]
        return StagedDecoding(
            latent_z,
            [DecoderStage(r, sh) for r, sh in zip(runs, self._stage_shapes, strict=True)],
        )

    def decode(self, latent: Latent, z: np.ndarray) -> np.ndarray:
        """Audio `float32 [frames·hop]` of the latent slice `z` `[1, C, frames]`."""
        return self.staged(latent, z).audio_until(int(z.shape[-1]))

    def release_memory(self) -> None:
        """Give back the decoder's activation memory after a request (a one-frame run that
        shrinks the arena, then malloc_trim): an idle voice then holds only its weights, not
        the activations of the longest sentence it spoke (~0.3 MB per frame). Skipped after
        short requests, and with `EngineOptions.release_memory` off."""
        if not self._release or self._used <= RELEASE_FRAMES:
            return
        feeds = {Z_NAME: np.zeros((1, self.inter_channels, 1), np.float32)}
        if self._has_g:
            feeds[G_NAME] = np.zeros((1, self._gin, 1), np.float32)
        x = self._decoder.run(None, feeds, self._shrink)[0]
        for sess in self._stages[1:]:
            x = sess.run(None, {STAGE_IN: x[:, :, :1]}, self._shrink)[0]
        self._used = 0
        trim_heap()

    def synthesize(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> SynthOutput:
        lat = self.latent(inputs, params, noise)
        audio = self.decode(lat, lat.z)
        return SynthOutput(np.asarray(audio, np.float32), lat.durations)


def _session(
    source: Path | bytes, runtime: str, opts: Any, threads: int | None, precision: str
) -> Any:
    """One graph's session on `runtime` (ONNX Runtime's `InferenceSession`, or an
    `OpenVinoSession` answering the same calls)."""
    if runtime == OPENVINO:
        from .onnx_backend import default_threads
        from .openvino_backend import OpenVinoSession

        hint = precision if precision in ("bf16", "fp16") else "fp32"
        return OpenVinoSession(source, threads=threads or default_threads(), precision=hint)
    import onnxruntime as ort

    data = source if isinstance(source, bytes) else str(source)
    return ort.InferenceSession(data, sess_options=opts, providers=["CPUExecutionProvider"])


def _stage_sessions(
    decoder: Path,
    opts: Any,
    runtime: str = ONNXRUNTIME,
    threads: int | None = None,
    precision: str = "fp32",
) -> list[Any]:
    """One session per decoder stage (`split_decoder_stages`), cut in memory from the
    decoder file, one at a time (so at most one stage's bytes are held twice)."""
    import onnx

    stages = split_decoder_stages(onnx.load(str(decoder)))
    sessions = []
    while stages:
        data = stages.pop(0).SerializeToString()
        sessions.append(_session(data, runtime, opts, threads, precision))
        del data
    return sessions
