"""Speed that is exact over a sentence: the synthesizer's frames per phone, rounded so that
their sum follows ``length_scale``.

A Style-Bert-VITS2 synthesizer turns its predicted durations into whole frames per phone
id with ``ceil(exp(logw) · mask · length_scale)``. Each id is rounded up on its own, so at
any speed every id gains about half a frame, and an id shorter than a frame (a blank
between phones often is) stays one frame at every speed: at 1.5× a sentence is 1.3-1.45×
shorter, not 1.5× (more so the shorter a voice's phones). VOICEVOX clients expect
``speedScale`` to divide the length (VOICEVOX divides every phoneme's length by it).

`exact_speed_frames` rewrites that one ``Ceil`` in a graph so that the frames at speed 1
are the original's, bit for bit (``D = ceil(exp(logw) · mask)``), and at another speed
they are those frames scaled with the rounding error carried from id to id::

    F_i = round(ls · Σ_{j≤i} D_j) - round(ls · Σ_{j<i} D_j)

so the sentence lasts ``round(ls · ΣD)`` frames: exactly 1/speed of its length at speed 1,
to one frame, whatever the lengths of its phones. An id may get one frame more or less than
``ceil`` gave it (a very short one none at high speed), as any rounding does.

It is applied to the front graph the engine cuts from a synthesizer
(`engine.synth.decoder_split.derived_graphs`, whose format 4 re-cuts older caches once), which
the int8 front is made from; a graph without the pattern (one ``Ceil`` of a ``Mul`` by the
``length_scale`` input, reshaped or not) is left as it is. Not rewritten: the whole-sentence
graph (used only where the cut fails), PyTorch voices, and int8 front graphs made before
(their stamp still matches, so they are not made again for this alone; `wyoming-hayakoe
quantize --force` remakes them): these round each phone up, as Style-Bert-VITS2 does.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import onnx

__all__ = ["LENGTH_SCALE", "exact_speed_frames"]

_LOGGER = logging.getLogger(__name__)

LENGTH_SCALE = "length_scale"
"""The synthesizer input that scales durations (1 / speed)."""

_PREFIX = "hayakoe_exact_speed"


def exact_speed_frames(model: onnx.ModelProto) -> bool:
    """Rewrite `model`'s frames-per-phone ``Ceil`` in place (see the module doc); False
    when the graph has no such node (left unchanged) or was rewritten already."""
    graph = model.graph
    found = _frames_ceil(graph)
    if found is None:
        return False
    ceil, producer, scale = found
    unscaled = next(i for i in producer.input if i != scale)
    at = list(graph.node).index(ceil)
    graph.node.remove(ceil)
    for k, node in enumerate(_exact_nodes(graph, unscaled, scale, ceil.output[0])):
        graph.node.insert(at + k, node)
    if not any(ceil.input[0] in n.input for n in graph.node):  # the scaled value is unused now
        graph.node.remove(producer)
    _LOGGER.debug("exact speed: frames per phone rounded over the sentence")
    return True


def _frames_ceil(graph: Any) -> tuple[Any, Any, str] | None:
    """(the ``Ceil``, the ``Mul`` it rounds, that product's length-scale input), or None
    where the graph has no such one node or was rewritten already."""
    if any(n.name.startswith(_PREFIX) for n in graph.node):
        return None
    if LENGTH_SCALE not in {i.name for i in graph.input}:
        return None
    ceils = [n for n in graph.node if n.op_type == "Ceil"]
    if len(ceils) != 1:
        _LOGGER.debug("exact speed: %d Ceil nodes, graph left as it is", len(ceils))
        return None
    producers = {o: n for n in graph.node for o in n.output}
    producer = producers.get(ceils[0].input[0])
    if producer is None or producer.op_type != "Mul":
        _LOGGER.debug("exact speed: the Ceil rounds no product, graph left as it is")
        return None
    scale = next((i for i in producer.input if _is_length_scale(i, producers)), None)
    if scale is None:
        _LOGGER.debug("exact speed: the Ceil does not scale by %s, graph left", LENGTH_SCALE)
        return None
    return ceils[0], producer, scale


def _exact_nodes(graph: Any, unscaled: str, scale: str, out: str) -> list[Any]:
    """The nodes computing `out` as the module doc says (and their one constant, added to
    `graph`): frames at speed 1 from `unscaled`, their running sums scaled by `scale` and
    rounded, differenced."""
    import numpy as np
    from onnx import helper, numpy_helper

    def name(part: str) -> str:
        return f"{_PREFIX}/{part}"

    axis = name("axis")
    graph.initializer.append(numpy_helper.from_array(np.array(-1, np.int64), axis))
    at_1 = name("frames_at_1")
    return [
        helper.make_node("Ceil", [unscaled], [at_1], name=name("ceil")),
        helper.make_node("CumSum", [at_1, axis], [name("upto")], name=name("upto")),
        helper.make_node(
            "CumSum", [at_1, axis], [name("before")], name=name("before"), exclusive=1
        ),
        helper.make_node("Mul", [name("upto"), scale], [name("upto_s")], name=name("m1")),
        helper.make_node("Mul", [name("before"), scale], [name("before_s")], name=name("m2")),
        helper.make_node("Round", [name("upto_s")], [name("upto_r")], name=name("r1")),
        helper.make_node("Round", [name("before_s")], [name("before_r")], name=name("r2")),
        helper.make_node("Sub", [name("upto_r"), name("before_r")], [out], name=name("frames")),
    ]


_RESHAPES = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Cast", "Identity", "Flatten"})


def _is_length_scale(tensor: str, producers: dict[str, Any]) -> bool:
    """Whether `tensor` is the ``length_scale`` input, or it reshaped (an `.aivmx` graph
    adapted by `engine.aivm.onnx_adapter` takes it as [1] and reshapes it to 0-d)."""
    for _ in range(8):
        if tensor == LENGTH_SCALE:
            return True
        node = producers.get(tensor)
        if node is None or node.op_type not in _RESHAPES:
            return False
        tensor = node.input[0]
    return False
