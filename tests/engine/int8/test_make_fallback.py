"""The decoder recipe decided per voice by its gate: `QuantSettings()` (the last stage's
residual blocks and the activations in int8) first; where the gate fails, the decoder is
made again with `QuantSettings.fallback()` (the last stage fp32, only convolutions in int8)
and gated again, both attempts' figures in `fidelity.json`.

model_small (the tests' voice), the decoder only (`front_ffn=False`), a few calibration
sentences, one held-out sentence per style: seconds per quantization.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import onnx

from engine import EngineOptions, layout
from engine.int8.gate import GateThresholds
from engine.int8.make import make_int8
from engine.int8.quantize import tail_nodes
from engine.int8.recipe import (
    CALIBRATION_FILE,
    DECODER_FILE,
    HELDOUT_FILE,
    REPORT_FILE,
    QuantSettings,
    read_sentences,
    stamp_for,
    stamp_matches,
)
from engine.neural.build import split_synthesizer, voice_spec
from engine.synth.polyphase import upsampling_layers
from tests.helpers.voices import FakeBert, shared_small_root

SETTINGS = QuantSettings(front_ffn=False)


def _files():
    return layout.onnx_folder_files(shared_small_root() / layout.speaker_prefix("small", "onnx"))


def _tail_convs(decoder: Path) -> dict[str, bool]:
    """The last stage's convolutions → whether their weight is int8 (a DequantizeLinear's
    output) in the QDQ graph `decoder`."""
    graph = onnx.load(str(decoder)).graph
    producer = {o: n for n in graph.node for o in n.output}
    start = next(
        i for i, n in enumerate(graph.node) if n.output[0] == upsampling_layers(graph)[-1].output[0]
    )
    out = {}
    for node in list(graph.node)[start:]:
        if node.op_type == "Conv":
            weight = producer.get(node.input[1])
            out[node.name] = weight is not None and weight.op_type == "DequantizeLinear"
    return out


def test_the_recipe_and_its_fallback() -> None:
    new = QuantSettings()
    old = new.fallback()
    assert old is not None and old.fallback() is None
    assert not old.tail_blocks and not old.int8_activations
    assert set(new.decoder_op_types()) - set(old.decoder_op_types()) == {"LeakyRelu", "Add"}
    assert "wholly" in old.describe() and "residual blocks" in new.describe()
    # graphs made with the recipe before the polyphase upsampling are never read as today's
    source = _files().synthesizer
    before = QuantSettings(upsample_as_conv=False, tail_blocks=False, int8_activations=False)
    assert not stamp_matches(asdict(stamp_for(source, before)), source, new)
    assert stamp_matches(asdict(stamp_for(source, new)), source, new)


def test_tail_nodes_keep_the_signal_path_fp32(tmp_path: Path) -> None:
    """In the last stage only the residual blocks' convolutions are quantized: its
    upsampling layer, the additions and conv_post stay fp32."""
    synth = split_synthesizer(_files(), EngineOptions(threads=1, precision="fp32"), tmp_path)
    decoder = synth.fp32_decoder_path
    graph = onnx.load(str(decoder)).graph
    whole = set(tail_nodes(decoder, 1))
    kept = set(tail_nodes(decoder, 1, blocks=True))
    quantized = whole - kept
    ops = {n.name: n.op_type for n in graph.node}
    assert quantized and {ops[n] for n in quantized} == {"Conv"}
    assert len(quantized) == 18  # 3 blocks × 3 dilations × 2 convolutions
    convs = [n.name for n in graph.node if n.op_type == "Conv"]
    assert convs[-1] in kept  # conv_post
    assert upsampling_layers(graph)[-1].name in kept
    assert {ops[n] for n in kept} >= {"Add", "ConvTranspose", "Conv", "Tanh"}


def _make(tmp_path: Path, thresholds: GateThresholds | None) -> dict:
    files = _files()
    synth = split_synthesizer(files, EngineOptions(threads=1, precision="fp32"), tmp_path)
    out = tmp_path / "int8"
    first: dict[str, bool] = {}

    def progress(message: str) -> None:  # the first recipe's decoder, before it is replaced
        if "making the decoder again" in message:
            first.update(_tail_convs(out / DECODER_FILE))

    graphs = make_int8(
        synth,
        synth.fp32_decoder_path,
        FakeBert(1024),
        voice_spec("small", files),
        out,
        stamp_for(files.synthesizer, SETTINGS),
        settings=SETTINGS,
        thresholds=thresholds,
        calibration=read_sentences(CALIBRATION_FILE)[:4],
        heldout=read_sentences(HELDOUT_FILE)[:1],
        threads=1,
        progress=progress,
    )
    assert graphs.report.attempts == json.loads((out / REPORT_FILE).read_text())["attempts"]
    return {"report": graphs.report, "tail": _tail_convs(out / DECODER_FILE), "first": first}


def test_a_failed_gate_makes_the_decoder_again_with_the_fallback(tmp_path: Path) -> None:
    made = _make(tmp_path, GateThresholds(min_snr_db=100.0))  # no int8 passes this
    report = made["report"]
    assert not report.passed
    first, second = report.attempts
    assert first["recipe"] == SETTINGS.describe() and not first["passed"]
    fallback = SETTINGS.fallback()
    assert fallback is not None and second["recipe"] == fallback.describe()
    assert second["snr_db_min"] == round(report.snr_db_min, 3)
    # the fallback's int8 error is smaller: fp32 last stage, fp32 activations
    assert second["snr_db_min"] > first["snr_db_min"]
    assert report.settings["tail_blocks"] is False
    assert "with the fallback recipe" in report.summary()
    # the first decoder: the last stage's residual blocks in int8, its upsampling layer
    # and conv_post fp32; the one kept (the fallback's): the last stage wholly fp32
    assert sum(made["first"].values()) == 18 and len(made["first"]) == 20
    assert len(made["tail"]) == 20 and not any(made["tail"].values())
