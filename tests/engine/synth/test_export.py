"""`wyoming-hayakoe export`: hayakoe's ONNX layout, names, dynamic axes; ONNX Runtime parity
with the reference and with PyTorch; the noise inputs that make seeds work on ONNX."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from engine.synth.common import NoiseSource, SynthInputs, SynthParams
from engine.synth.export import DP_INPUTS, SYNTH_INPUTS
from engine.synth.onnx_backend import OnnxSynthesizer, make_noise_inputs
from engine.synth.torch_backend import TorchSynthesizer
from engine.voice_config import load_config
from tests.helpers.voices import SMALL, copy_small
from wyoming_hayakoe.commands.export import main as export_main

CASES = sorted((SMALL / "cases").glob("case_*.npz"))


@pytest.fixture(scope="module")
def exported_voice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.set_num_threads(1)
    tmp = tmp_path_factory.mktemp("export")
    src = copy_small(tmp / "src")
    assert export_main([str(src), str(tmp / "out"), "--name", "small"]) == 0
    return tmp / "out" / "onnx" / "speakers" / "small"


def _case_inputs(case) -> SynthInputs:
    return SynthInputs(
        case["x"],
        case["tones"],
        case["lang_ids"],
        case["bert"],
        case["style_vec"],
        int(case["sid"]),
    )


def test_layout_and_files(exported_voice: Path) -> None:
    assert sorted(p.name for p in exported_voice.iterdir()) == [
        "config.json",
        "duration_predictor.onnx",
        "style_vectors.npy",
        "synthesizer.onnx",
    ]
    assert (exported_voice / "config.json").read_bytes() == (SMALL / "config.json").read_bytes()
    assert (exported_voice / "style_vectors.npy").read_bytes() == (
        SMALL / "style_vectors.npy"
    ).read_bytes()


def _dims(value_info) -> list:
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def test_hayakoe_names_dtypes_and_axes(exported_voice: Path) -> None:
    synth = onnx.load(str(exported_voice / "synthesizer.onnx"), load_external_data=False)
    ins = {i.name: i for i in synth.graph.input}
    assert [i.name for i in synth.graph.input] == SYNTH_INPUTS
    assert [o.name for o in synth.graph.output] == ["audio", "durations"]
    assert synth.opset_import[0].version == 17
    i64, f32 = onnx.TensorProto.INT64, onnx.TensorProto.FLOAT
    for name in ("x", "x_lengths", "sid", "tone", "language"):
        assert ins[name].type.tensor_type.elem_type == i64
    for name in ("bert", "style_vec", "noise_scale", "length_scale", "noise_scale_w", "sdp_ratio"):
        assert ins[name].type.tensor_type.elem_type == f32
    assert _dims(ins["x"]) == [1, "phone_len"] and _dims(ins["tone"]) == [1, "phone_len"]
    assert _dims(ins["bert"]) == [1, 1024, "phone_len"] and _dims(ins["style_vec"]) == [1, 256]
    assert _dims(ins["noise_scale"]) == [1] and _dims(ins["x_lengths"]) == [1]
    outs = {o.name: o for o in synth.graph.output}
    assert _dims(outs["audio"])[2] == "audio_len" and _dims(outs["durations"])[1] == "phone_len"
    # hayakoe's graph draws its noise inside: exactly the sdp and the prior noise.
    assert sum(n.op_type == "RandomNormalLike" for n in synth.graph.node) == 2

    dp = onnx.load(str(exported_voice / "duration_predictor.onnx"), load_external_data=False)
    assert [i.name for i in dp.graph.input] == DP_INPUTS
    assert [o.name for o in dp.graph.output] == ["durations"]
    assert _dims(dp.graph.output[0])[1] == "phone_len"
    assert sum(n.op_type == "RandomNormalLike" for n in dp.graph.node) == 1


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_onnx_runtime_matches_reference(exported_voice: Path, path: Path) -> None:
    """The graph as hayakoe would run it (plain session, hayakoe's feeds)."""
    case = np.load(path)
    sess = ort.InferenceSession(
        str(exported_voice / "synthesizer.onnx"), providers=["CPUExecutionProvider"]
    )
    t = len(case["x"])
    feeds = {
        "x": case["x"][None],
        "x_lengths": np.array([t]),
        "sid": np.array([int(case["sid"])]),
        "tone": case["tones"][None],
        "language": case["lang_ids"][None],
        "bert": case["bert"][None],
        "style_vec": case["style_vec"][None],
        "noise_scale": np.array([0.0], np.float32),
        "length_scale": np.array([case["length_scale"]], np.float32),
        "noise_scale_w": np.array([0.0], np.float32),
        "sdp_ratio": np.array([case["sdp_ratio"]], np.float32),
    }
    audio, durations = sess.run(None, feeds)
    np.testing.assert_array_equal(durations[0].astype(np.int64), case["durations"])
    assert audio.shape == (1, 1, len(case["audio"]))
    np.testing.assert_allclose(audio[0, 0], case["audio"], atol=1e-4, rtol=0)

    dp = ort.InferenceSession(
        str(exported_voice / "duration_predictor.onnx"), providers=["CPUExecutionProvider"]
    )
    dp_feeds = {k: v for k, v in feeds.items() if k != "noise_scale"}
    np.testing.assert_array_equal(dp.run(None, dp_feeds)[0][0].astype(np.int64), case["durations"])


def test_onnx_vs_pytorch_noise_off_and_seeded(exported_voice: Path) -> None:
    cfg = load_config(SMALL / "config.json")
    onnx_synth = OnnxSynthesizer(
        exported_voice / "synthesizer.onnx",
        exported_voice / "duration_predictor.onnx",
        inter_channels=32,
        hop_length=512,
        sample_rate=44100,
        threads=1,
    )
    torch_synth = TorchSynthesizer(cfg, SMALL / "model.safetensors")
    case = np.load(CASES[3])
    inputs = _case_inputs(case)
    off = SynthParams(noise_scale=0.0, length_scale=1.1, noise_scale_w=0.0, sdp_ratio=0.5)
    a = onnx_synth.synthesize(inputs, off, NoiseSource(1))
    b = torch_synth.synthesize(inputs, off, NoiseSource(2))
    assert np.abs(a.audio - b.audio).max() <= 1e-3
    # Noise on: the same seed gives the same noise on both backends.
    on = SynthParams(noise_scale=0.667, length_scale=1.0, noise_scale_w=0.8, sdp_ratio=0.6)
    a = onnx_synth.synthesize(inputs, on, NoiseSource(42))
    b = torch_synth.synthesize(inputs, on, NoiseSource(42))
    np.testing.assert_array_equal(a.durations, b.durations)
    assert np.abs(a.audio - b.audio).max() <= 1e-3
    np.testing.assert_array_equal(
        onnx_synth.predict_durations(inputs, on, NoiseSource(42)), a.durations
    )


def test_seeds_on_onnx(exported_voice: Path) -> None:
    synth = OnnxSynthesizer(
        exported_voice / "synthesizer.onnx",
        None,
        inter_channels=32,
        hop_length=512,
        sample_rate=44100,
        threads=1,
    )
    inputs = _case_inputs(np.load(CASES[0]))
    params = SynthParams(noise_scale=0.667, length_scale=1.0, noise_scale_w=0.8, sdp_ratio=1.0)
    first = synth.synthesize(inputs, params, NoiseSource(7))
    again = synth.synthesize(inputs, params, NoiseSource(7))
    other = synth.synthesize(inputs, params, NoiseSource(8))
    np.testing.assert_array_equal(first.audio, again.audio)
    assert first.audio.shape != other.audio.shape or not np.array_equal(first.audio, other.audio)


def test_prior_noise_redrawn_when_guess_too_small(exported_voice: Path) -> None:
    """When the first guess of frames is too small, the second run must give what exactly
    enough noise gives (PyTorch draws exactly F frames)."""
    cfg = load_config(SMALL / "config.json")
    synth = OnnxSynthesizer(
        exported_voice / "synthesizer.onnx",
        None,
        inter_channels=32,
        hop_length=512,
        sample_rate=44100,
        threads=1,
    )
    synth.prior_frames_per_id = 0.05
    torch_synth = TorchSynthesizer(cfg, SMALL / "model.safetensors")
    inputs = _case_inputs(np.load(CASES[0]))
    params = SynthParams(noise_scale=0.667, length_scale=1.0, noise_scale_w=0.8, sdp_ratio=0.3)
    a = synth.synthesize(inputs, params, NoiseSource(5))
    assert synth.redraws == 1
    b = torch_synth.synthesize(inputs, params, NoiseSource(5))
    np.testing.assert_array_equal(a.durations, b.durations)
    assert np.abs(a.audio - b.audio).max() <= 1e-3


def test_make_noise_inputs_rewrites_random_nodes(exported_voice: Path) -> None:
    model = onnx.load(str(exported_voice / "duration_predictor.onnx"))
    assert make_noise_inputs(model) == 1
    assert not any(n.op_type == "RandomNormalLike" for n in model.graph.node)
    assert [i.name for i in model.graph.input][-1] == "noise_0"
    onnx.checker.check_model(model)


def test_export_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "incomplete"
    src.mkdir()
    (src / "config.json").write_text((SMALL / "config.json").read_text())
    assert export_main([str(src), str(tmp_path / "out"), "--name", "x"]) == 2
    err = capsys.readouterr().err
    assert str(src) in err and "*.safetensors" in err and "style_vectors.npy" in err
    assert (
        export_main([str(copy_small(tmp_path / "ok")), str(tmp_path / "out"), "--name", "../x"])
        == 1
    )
    assert "invalid voice name" in capsys.readouterr().err


def test_sessions_are_shared_while_in_use(exported_voice: Path) -> None:
    import gc

    from engine.synth.onnx_backend import load_session

    a, n = load_session(exported_voice / "duration_predictor.onnx", threads=1)
    b, m = load_session(exported_voice / "duration_predictor.onnx", threads=1)
    assert a is b and n == m == 1
    c, _ = load_session(exported_voice / "duration_predictor.onnx", threads=2)
    assert c is not a  # other thread settings: another session
    import weakref

    ref = weakref.ref(a)
    del a, b, c
    gc.collect()
    assert ref() is None  # the cache does not keep sessions nobody uses
