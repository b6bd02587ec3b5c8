"""Windowed (sub-sentence) decoding equals whole-sentence decoding.

Uses the project's own HiFi-GAN `Generator` with small channel counts but the real JP-Extra
geometry (upsample rates/kernels, residual kernels/dilations), random weights rescaled so the
audio depends strongly on the latent (a fresh init barely does, which would hide a too-small
context). Checks, in float64 (where rounding cannot mask a missing frame of context):
- the computed receptive field is sufficient *and* tight (one frame less breaks equality);
- in float32 with PyTorch and with ONNX Runtime, joined windows equal whole decoding within
  the stated tolerance, for several window plans.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

import numpy as np
import pytest
import torch

from engine.model.generator import Generator
from engine.options import EngineOptions
from engine.synth.windowed import (
    WHOLE,
    DecoderGeometry,
    DecoderStage,
    StagedDecoding,
    StageShape,
    WindowPlan,
    decode_windows,
)

# Joined windows vs whole-sentence decoding, float32, audio in [-1, 1]. Measured on this
# test model: ~1e-7 (PyTorch) and ~1e-7 (ONNX Runtime); the full-size random voice in
# benchmarks/ gives the same order. The bound leaves room for other CPUs' kernels.
TOLERANCE_F32 = 1e-5

JP_EXTRA = DecoderGeometry()
GIN = 8
LATENT = 8


def _generator(geom: DecoderGeometry, seed: int = 0, dtype=torch.float32) -> Generator:
    torch.manual_seed(seed)
    gen = Generator(
        LATENT,
        geom.resblock,
        list(geom.resblock_kernel_sizes),
        [list(d) for d in geom.resblock_dilation_sizes],
        list(geom.upsample_rates),
        32,
        list(geom.upsample_kernel_sizes),
        gin_channels=GIN,
    )
    with torch.no_grad():
        for module in gen.modules():
            if isinstance(module, torch.nn.Conv1d):
                fan_in = module.weight.shape[1] * module.weight.shape[2]
            elif isinstance(module, torch.nn.ConvTranspose1d):
                fan_in = module.weight.shape[0] * module.weight.shape[2] / module.stride[0]
            else:
                continue
            module.weight.normal_(0.0, 1.4 / math.sqrt(fan_in))
    return gen.to(dtype).eval()


def _decoder(gen: Generator, g: torch.Tensor):
    def decode(z: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return gen(torch.from_numpy(z), g).numpy()

    return decode


def _joined(z, decode, context, plan, hop):
    return np.concatenate(list(decode_windows(z, decode, context, plan.windows(z.shape[2]), hop)))


def test_jp_extra_receptive_field_is_13_frames_each_side():
    assert JP_EXTRA.hop == 512
    assert JP_EXTRA.context_frames() == (13, 13)


GEOMETRIES = [
    JP_EXTRA,
    # HiFi-GAN V2/V3-like shapes: other rates, kernels and the type-2 residual block.
    DecoderGeometry((8, 8, 4), (16, 16, 8), "2", (3, 5, 7), ((1, 2), (2, 6), (3, 12))),
    DecoderGeometry((4, 4, 2), (8, 8, 4), "1", (3, 5), ((1, 2, 4), (1, 3, 9))),
]


@pytest.mark.parametrize("geom", GEOMETRIES, ids=["jp-extra", "type2", "small"])
def test_context_is_sufficient_and_tight_float64(geom: DecoderGeometry):
    torch.set_num_threads(1)
    gen = _generator(geom, dtype=torch.float64)
    g = torch.randn(1, GIN, 1, dtype=torch.float64)
    z = np.random.default_rng(1).standard_normal((1, LATENT, 60))
    decode = _decoder(gen, g)
    whole = decode(z).reshape(-1)
    left, right = geom.context_frames()
    one_frame = WindowPlan(first=1, growth=1.0, largest=1, min_tail=0)

    exact = _joined(z, decode, (left, right), one_frame, geom.hop)
    assert exact.shape == whole.shape
    assert np.abs(exact - whole).max() < 1e-12

    # One frame less on either side is not enough: the receptive field is tight.
    for ctx in ((left - 1, right), (left, right - 1)):
        short = _joined(z, decode, ctx, one_frame, geom.hop)
        assert np.abs(short - whole).max() > 1e-10, ctx


def test_perturbation_never_reaches_beyond_the_context():
    """Changing one latent frame changes only audio within the receptive field."""
    torch.set_num_threads(1)
    gen = _generator(JP_EXTRA, dtype=torch.float64)
    g = torch.randn(1, GIN, 1, dtype=torch.float64)
    z = np.random.default_rng(2).standard_normal((1, LATENT, 60))
    decode = _decoder(gen, g)
    base = decode(z).reshape(-1, 512)
    z2 = z.copy()
    z2[:, :, 30] += 1.0
    changed = np.nonzero(np.abs(decode(z2).reshape(-1, 512) - base).max(axis=1) > 0)[0]
    left, right = JP_EXTRA.context_frames()
    # Output frame f reads latent frames f-left .. f+right.
    assert changed.min() >= 30 - right and changed.max() <= 30 + left
    assert 30 - changed.min() >= right - 1 and changed.max() - 30 >= left - 1


PLANS = [
    WindowPlan(first=1, growth=1.0, largest=1, min_tail=0),
    WindowPlan(first=4, growth=2.0, largest=32, min_tail=2),
    WindowPlan(first=24, growth=2.0, largest=512, min_tail=16),
    WindowPlan(first=10, growth=1.5, largest=20, min_tail=0),
    WHOLE,
]


@pytest.fixture(scope="module")
def f32_model():
    torch.set_num_threads(1)
    gen = _generator(JP_EXTRA)
    g = torch.randn(1, GIN, 1)
    z = np.random.default_rng(3).standard_normal((1, LATENT, 97)).astype(np.float32)
    return gen, g, z


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: f"first{p.first}-x{p.growth}-max{p.largest}")
def test_windowed_equals_whole_pytorch_float32(f32_model, plan):
    gen, g, z = f32_model
    decode = _decoder(gen, g)
    whole = decode(z).reshape(-1)
    joined = _joined(z, decode, JP_EXTRA.context_frames(), plan, JP_EXTRA.hop)
    assert joined.dtype == np.float32 and joined.shape == whole.shape
    assert np.abs(joined - whole).max() <= TOLERANCE_F32


def test_windowed_equals_whole_onnxruntime(f32_model, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    gen, g, z = f32_model
    path = tmp_path / "decoder.onnx"

    class _Dec(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gen = gen

        def forward(self, z: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
            return self.gen(z, g)

    torch.onnx.export(
        _Dec(),
        (torch.from_numpy(z[:, :, :20]), g),
        str(path),
        input_names=["z", "g"],
        output_names=["audio"],
        dynamic_axes={"z": {2: "frames"}, "audio": {2: "samples"}},
        opset_version=17,
        dynamo=False,
    )
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    gnp = g.numpy()

    def decode(zz: np.ndarray) -> np.ndarray:
        return sess.run(None, {"z": zz, "g": gnp})[0]

    whole = decode(z).reshape(-1)
    with torch.no_grad():
        torch_whole = gen(torch.from_numpy(z), g).numpy().reshape(-1)
    assert np.abs(whole - torch_whole).max() <= TOLERANCE_F32  # the export is the same model
    for plan in PLANS[1:4]:
        joined = _joined(z, decode, JP_EXTRA.context_frames(), plan, JP_EXTRA.hop)
        assert np.abs(joined - whole).max() <= TOLERANCE_F32, plan


@pytest.mark.parametrize("n", [1, 5, 24, 40, 41, 100, 1000, 1001])
def test_plan_covers_every_frame_once(n: int):
    plan = WindowPlan(first=24, growth=2.0, largest=256, min_tail=16)
    wins = plan.windows(n)
    assert wins[0][0] == 0 and wins[-1][1] == n
    assert all(a[1] == b[0] for a, b in itertools.pairwise(wins))
    sizes = [e - s for s, e in wins]
    assert all(s > 0 for s in sizes)
    if n > 40:
        assert sizes[0] == 24  # small first window: latency
        assert all(s <= 256 + 16 for s in sizes)
        assert all(s >= 16 for s in sizes)  # no tiny tail window
    else:
        assert wins == [(0, n)]  # too short to be worth splitting


def test_plan_edge_cases():
    assert WindowPlan().windows(0) == []
    assert WHOLE.windows(500) == [(0, 500)]


def test_wrong_decoder_output_length_is_an_error():
    z = np.zeros((1, 4, 10), np.float32)
    with pytest.raises(ValueError, match="expected 5120"):
        list(decode_windows(z, lambda zz: np.zeros(7), (2, 2), [(0, 10)], 512))
    with pytest.raises(ValueError, match="outside"):
        list(decode_windows(z, lambda zz: np.zeros(zz.shape[2] * 512), (2, 2), [(0, 11)], 512))


def test_geometry_from_config_names_bad_field():
    geom = DecoderGeometry.from_config(
        {
            "model": {
                "upsample_rates": [8, 8, 2, 2, 2],
                "upsample_kernel_sizes": [16, 16, 8, 2, 2],
                "resblock": "1",
                "resblock_kernel_sizes": [3, 7, 11],
                "resblock_dilation_sizes": [[1, 3, 5]] * 3,
            }
        }
    )
    assert geom == JP_EXTRA
    with pytest.raises(ValueError, match="model.resblock_kernel_sizes"):
        DecoderGeometry.from_config(
            {
                "upsample_rates": [8],
                "upsample_kernel_sizes": [16],
                "resblock": "1",
                "resblock_dilation_sizes": [[1]],
            }
        )
    with pytest.raises(ValueError, match="upsample kernel 15"):
        DecoderGeometry.from_config(
            {
                "upsample_rates": [8],
                "upsample_kernel_sizes": [15],
                "resblock": "1",
                "resblock_kernel_sizes": [3],
                "resblock_dilation_sizes": [[1]],
            }
        )


# ------------------------------------------------------------ wired into the ONNX voice ---

LONG = (
    "今日は朝から良い天気だったので、少し遠くの公園まで歩いて行き、"
    "池のまわりをのんびりと散歩しました。"
)


@pytest.fixture(scope="module")
def small_root(tmp_path_factory: pytest.TempPathFactory):
    from engine.synth.export import export_model_dir
    from tests.helpers.voices import copy_small

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("voices")
    plain = copy_small(root / "plain")
    export_model_dir(
        plain / "config.json",
        plain / "model.safetensors",
        plain / "style_vectors.npy",
        root / "onnx" / "speakers" / "small",
    )
    return root


def _inputs(length: int = 41, seed: int = 0):
    from engine.synth.common import SynthInputs

    rng = np.random.default_rng(seed)
    return SynthInputs(
        rng.integers(1, 100, length),
        rng.integers(0, 12, length),
        np.ones(length, np.int64),
        rng.standard_normal((1024, length)).astype(np.float32),
        rng.standard_normal(256).astype(np.float32),
    )


def test_split_graphs_equal_hayakoes_synthesizer(small_root, tmp_path):
    """Front + decoder (derived once, into the cache) = the original synthesizer.onnx at
    speed 1; at another speed, the original with its frames rounded over the sentence
    (`engine.synth.exact_speed`), as the front is."""
    import onnx

    from engine.synth.common import NoiseSource, SynthParams
    from engine.synth.decoder_split import (
        DECODER_FILE,
        FRONT_FILE,
        SplitOnnxSynthesizer,
    )
    from engine.synth.exact_speed import exact_speed_frames
    from engine.synth.onnx_backend import OnnxSynthesizer

    folder = small_root / "onnx" / "speakers" / "small"
    original = (folder / "synthesizer.onnx").read_bytes()
    kw = {"inter_channels": 32, "hop_length": 512, "sample_rate": 44100, "threads": 1}
    whole = OnnxSynthesizer(folder / "synthesizer.onnx", None, **kw)
    exact = onnx.load(folder / "synthesizer.onnx")
    assert exact_speed_frames(exact)
    onnx.save(exact, tmp_path / "exact.onnx")
    whole_exact = OnnxSynthesizer(tmp_path / "exact.onnx", None, **kw)
    before = sorted(p.name for p in folder.iterdir())
    split = SplitOnnxSynthesizer(
        folder / "synthesizer.onnx",
        folder / "duration_predictor.onnx",
        geometry=JP_EXTRA,
        cache_dir=tmp_path,
        **kw,
    )
    assert (folder / "synthesizer.onnx").read_bytes() == original  # hayakoe's file untouched
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing written beside it
    front_file, decoder_file = (
        split.fp32_decoder_path.with_name(FRONT_FILE.format("")),
        split.fp32_decoder_path,
    )
    assert decoder_file.name == DECODER_FILE.format("")
    assert tmp_path in decoder_file.parents
    front_mtime = front_file.stat().st_mtime_ns
    assert decoder_file.stat().st_size < front_file.stat().st_size
    for seed, params, reference in (
        (5, SynthParams(), whole),
        (6, SynthParams(sdp_ratio=0.0, length_scale=1.3), whole_exact),
    ):
        a = reference.synthesize(_inputs(), params, NoiseSource(seed))
        b = split.synthesize(_inputs(), params, NoiseSource(seed))
        assert a.audio.shape == b.audio.shape
        assert np.abs(a.audio - b.audio).max() <= TOLERANCE_F32
        np.testing.assert_array_equal(a.durations, b.durations)
    assert split._dp is None  # duration predictor opened only when asked for
    assert split.predict_durations(_inputs(), SynthParams(), NoiseSource(1)) is not None
    # A second load reuses the derived files.
    SplitOnnxSynthesizer(
        folder / "synthesizer.onnx", None, geometry=JP_EXTRA, cache_dir=tmp_path, **kw
    )
    assert front_file.stat().st_mtime_ns == front_mtime


def test_windowed_sentence_equals_whole_onnx(small_root):
    from engine.synth.common import NoiseSource, SynthParams
    from engine.synth.decoder_split import SplitOnnxSynthesizer
    from engine.synth.windowed import WindowedSentence

    folder = small_root / "onnx" / "speakers" / "small"
    synth = SplitOnnxSynthesizer(
        folder / "synthesizer.onnx",
        None,
        geometry=JP_EXTRA,
        inter_channels=32,
        hop_length=512,
        sample_rate=44100,
        threads=1,
    )
    inputs = _inputs(61, seed=3)
    whole = synth.synthesize(inputs, SynthParams(), NoiseSource(9))
    for plan in PLANS[:4]:
        ws = WindowedSentence(
            synth,
            inputs,
            SynthParams(),
            NoiseSource(9),
            plan,
            sample_rate=44100,
            trim_lead=False,
            trim_trail=False,
            margin=0,
        )
        pieces = list(ws.pieces())
        n_frames = len(whole.audio) // 512
        assert len(pieces) == len(plan.windows(n_frames)) > 1
        assert [final for _, final in pieces] == [False] * (len(pieces) - 1) + [True]
        joined = np.concatenate([p for p, _ in pieces])
        assert np.abs(joined - np.clip(whole.audio, -1, 1)).max() <= TOLERANCE_F32
        np.testing.assert_array_equal(ws.durations, whole.durations)


def test_voice_streams_windows_and_generate_does_not(small_root, monkeypatch):
    """Through the public API: stream() yields a small first chunk and then the rest of the
    sentence; joined it is the same audio as generate() (whole-sentence decoding) up to the
    leading-silence cut, which streaming measures on the first window alone."""
    from engine.neural.loader import load_neural_voice
    from engine.speaker import Speaker
    from tests.helpers.voices import ONE_THREAD, FakeBert

    voice = load_neural_voice("small", small_root, bert=FakeBert(), options=ONE_THREAD)
    assert voice.window_plans is not None
    speaker = Speaker(voice, rewrite=False)
    chunks = list(speaker.stream(LONG, seed=4, sdp_ratio=0.0))
    whole = speaker.generate(LONG, seed=4, sdp_ratio=0.0)
    first_window = voice.window_plans.first.first * 512
    assert len(chunks) >= 2
    assert len(chunks[0].data) <= first_window  # first audio after one small window
    joined = np.concatenate([c.data for c in chunks])
    # generate() is one piece per sentence; the streamed audio ends the same way.
    assert abs(len(joined) - len(whole.data)) <= first_window
    n = min(len(joined), len(whole.data)) - first_window
    assert n > 0
    assert np.abs(joined[-n:].astype(int) - whole.data[-n:].astype(int)).max() <= 1

    no_windows = EngineOptions(threads=1, first_window=0)
    voice_off = load_neural_voice("small", small_root, bert=FakeBert(), options=no_windows)
    assert voice_off.window_plans is None
    assert len(list(Speaker(voice_off, rewrite=False).stream(LONG, seed=4))) == 1


def test_first_window_setting():
    from engine.synth.windowed import StreamingPlans

    def plans(env: dict[str, str]) -> StreamingPlans | None:
        return StreamingPlans.for_first_window(EngineOptions.from_env(env).first_window)

    assert plans({}) == StreamingPlans()
    assert plans({"WYOMING_HAYAKOE_FIRST_WINDOW": "0"}) is None
    twelve = plans({"WYOMING_HAYAKOE_FIRST_WINDOW": "12"})
    assert twelve is not None and twelve.first.first == 12
    assert plans({"WYOMING_HAYAKOE_FIRST_WINDOW": "x"}) == StreamingPlans()


def test_graph_without_decoder_is_refused():
    from onnx import TensorProto, helper

    from engine.synth.decoder_split import SplitError, find_decoder_cut

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    model = helper.make_model(
        helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    )
    with pytest.raises(SplitError, match="ConvTranspose"):
        find_decoder_cut(model)


def test_conv2d_rewrite_keeps_the_audio(small_root, monkeypatch):
    """With `EngineOptions.conv2d` the derived graphs run 1-D convolutions as 2-D ones
    (opt-in); the audio is the same as with the default 1-D graphs."""
    import onnx

    from engine.synth.common import NoiseSource, SynthParams
    from engine.synth.decoder_split import SplitOnnxSynthesizer, derived_graphs

    folder = small_root / "onnx" / "speakers" / "small"
    kw = {
        "inter_channels": 32,
        "hop_length": 512,
        "sample_rate": 44100,
        "threads": 1,
        "geometry": JP_EXTRA,
    }
    fast = SplitOnnxSynthesizer(folder / "synthesizer.onnx", None, conv2d=True, **kw)
    _, dec_path = derived_graphs(folder / "synthesizer.onnx", conv2d=True)
    assert dec_path.name.endswith(".conv2d.onnx")
    weights = {t.name: t for t in onnx.load(str(dec_path)).graph.initializer}
    convs = [
        n for n in onnx.load(str(dec_path)).graph.node if n.op_type in ("Conv", "ConvTranspose")
    ]
    assert convs and all(len(weights[n.input[1]].dims) == 4 for n in convs)

    plain = SplitOnnxSynthesizer(folder / "synthesizer.onnx", None, **kw)
    _, plain_path = derived_graphs(folder / "synthesizer.onnx")
    assert plain_path != dec_path
    a = fast.synthesize(_inputs(), SynthParams(), NoiseSource(2))
    b = plain.synthesize(_inputs(), SynthParams(), NoiseSource(2))
    assert a.audio.shape == b.audio.shape
    assert np.abs(a.audio - b.audio).max() <= TOLERANCE_F32


def test_release_memory_setting_keeps_the_audio(small_root, monkeypatch):
    """Giving decoder activation memory back after long windows changes nothing audible."""
    from engine.synth.common import NoiseSource, SynthParams
    from engine.synth.decoder_split import RELEASE_FRAMES, SplitOnnxSynthesizer

    folder = small_root / "onnx" / "speakers" / "small"
    kw = {
        "inter_channels": 32,
        "hop_length": 512,
        "sample_rate": 44100,
        "threads": 1,
        "geometry": JP_EXTRA,
    }
    on = SplitOnnxSynthesizer(folder / "synthesizer.onnx", None, **kw)
    off = SplitOnnxSynthesizer(folder / "synthesizer.onnx", None, release_memory=False, **kw)
    assert on._release and not off._release
    inputs = _inputs(121, seed=8)
    a = on.synthesize(inputs, SynthParams(length_scale=1.5), NoiseSource(1))
    b = off.synthesize(inputs, SynthParams(length_scale=1.5), NoiseSource(1))
    assert len(a.audio) // 512 > RELEASE_FRAMES and on._used > RELEASE_FRAMES
    on.release_memory()
    off.release_memory()
    assert on._used == 0 and off._used > RELEASE_FRAMES  # released / kept
    c = on.synthesize(inputs, SynthParams(length_scale=1.5), NoiseSource(1))
    np.testing.assert_array_equal(a.audio, b.audio)
    np.testing.assert_array_equal(a.audio, c.audio)


class _TimedDecoder:
    """A stand-in decoder for window sizing: silence, `cost` simulated seconds per latent
    frame decoded (context included) on `clock`."""

    context = (13, 13)
    hop_length = 512

    def __init__(self, clock: Any, frames: int, cost: float) -> None:
        self.clock, self.frames, self.cost = clock, frames, cost

    def latent(self, inputs: Any, params: Any, noise: Any) -> Any:
        from engine.synth.common import Latent

        return Latent(np.zeros((1, 4, self.frames), np.float32), None, None)

    def decode(self, latent: Any, z: np.ndarray) -> np.ndarray:
        self.clock.advance(self.cost * z.shape[-1])
        return np.zeros(z.shape[-1] * self.hop_length, np.float32)


class _InHand:
    """A listener (`ListenerView`) with a fixed amount of audio in hand."""

    def __init__(self, clock: Any, seconds: float) -> None:
        self.clock, self.seconds = clock, seconds

    def now(self) -> float:
        return self.clock.now()

    def in_hand(self) -> float:
        return self.seconds


ADAPTIVE = WindowPlan(first=24, growth=2.0, largest=512, min_tail=16, adaptive=True)


def _windows(cost: float, listener_s: float | None, frames: int = 400) -> list[tuple[int, int]]:
    from engine.synth.windowed import WindowedSentence
    from tests.helpers.sim_clock import SimulatedClock

    clock = SimulatedClock()
    synth = _TimedDecoder(clock, frames, cost)
    listener = None if listener_s is None else _InHand(clock, listener_s)
    ws = WindowedSentence(
        synth, None, None, None, ADAPTIVE, sample_rate=44100, trim_lead=False,
        trim_trail=False, margin=0, listener=listener,
    )  # fmt: skip
    pieces = list(ws.pieces())
    assert sum(len(p) for p, _ in pieces) == frames * 512
    return ws.windows


def test_adaptive_windows_follow_the_listener_and_the_decoders_speed():
    """Windows after the first are as large as the decoder (timed on the listener's clock)
    can make before the audio the listener has in hand runs out, at least 1.5x the last."""
    fast = 0.001  # s per frame: about 12x faster than real time (frame: 11.6 ms)
    # a second in hand: 0.9 s / 1 ms = 900 frames less 26 of context, capped at 512
    assert _windows(fast, 1.0) == [(0, 24), (24, 400)]
    # 0.1 s in hand: 90 frames less the context, then at least 1.5x the window before
    assert _windows(fast, 0.1) == [(0, 24), (24, 88), (88, 184), (184, 328), (328, 400)]
    # nothing in hand: the least growth
    assert _windows(fast, 0.0) == [(0, 24), (24, 60), (60, 114), (114, 195), (195, 317), (317, 400)]
    # slower than real time: the plan's growth (fewer windows, less repeated context)
    slow = [(0, 24), (24, 72), (72, 168), (168, 360), (360, 400)]
    assert _windows(0.02, 1.0) == slow
    # nobody listening: the plan's own windows
    assert _windows(fast, None) == ADAPTIVE.windows(400) == slow


# ------------------------------------------------------------- staged (stage by stage) ---


def _torch_stages(gen: Generator, g: torch.Tensor, geom: DecoderGeometry) -> list[DecoderStage]:
    """The generator's forward pass cut where `DecoderGeometry.stages` cuts it."""
    import torch.nn.functional as F

    from engine.model.generator import LRELU_SLOPE

    def pre(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return (gen.conv_pre(torch.from_numpy(x)) + gen.cond(g)).numpy()

    def upsample(i: int):
        def run(x: np.ndarray) -> np.ndarray:
            with torch.no_grad():
                y = gen.ups[i](F.leaky_relu(torch.from_numpy(x), LRELU_SLOPE))
                k = gen.num_kernels
                y = sum(gen.resblocks[i * k + j](y) for j in range(k)) / k
                if i == len(gen.ups) - 1:
                    y = torch.tanh(gen.conv_post(F.leaky_relu(y)))
                return y.numpy()

        return run

    runs = [pre] + [upsample(i) for i in range(len(gen.ups))]
    return [DecoderStage(r, s) for r, s in zip(runs, geom.stages(), strict=True)]


@pytest.mark.parametrize("geom", GEOMETRIES, ids=["jp-extra", "type2", "small"])
def test_staged_decoding_is_exact_and_its_contexts_tight_float64(geom: DecoderGeometry):
    """Decoding stage by stage, in any steps, equals whole decoding; one input sample less
    of context at any stage, on either side, breaks that."""
    torch.set_num_threads(1)
    gen = _generator(geom, dtype=torch.float64)
    g = torch.randn(1, GIN, 1, dtype=torch.float64)
    z = np.random.default_rng(1).standard_normal((1, LATENT, 60))
    whole = _decoder(gen, g)(z).reshape(-1)
    stages = _torch_stages(gen, g, geom)
    for steps in ([1] * 60, [5, 7, 11, 37], [24, 36], [60], [0, 3, 0, 57]):
        dec = StagedDecoding(z, stages)
        ends = list(itertools.accumulate(steps))
        parts = [dec.audio_until(e) for e in ends]
        assert [len(p) for p in parts] == [s * geom.hop for s in steps]
        assert np.abs(np.concatenate(parts) - whole).max() < 1e-12, steps
    for j, stage in enumerate(stages):
        for side in ("left", "right"):
            if getattr(stage.shape, side) == 0:
                continue
            short = list(stages)
            fewer = {side: getattr(stage.shape, side) - 1}
            short[j] = DecoderStage(stage.run, dataclasses.replace(stage.shape, **fewer))
            dec = StagedDecoding(z, short)
            joined = np.concatenate([dec.audio_until(e) for e in range(1, 61)])
            assert np.abs(joined - whole).max() > 1e-10, (j, side)


def test_staged_decoding_refuses_going_back():
    stages = [DecoderStage(lambda x: np.repeat(x, 2, axis=2), StageShape(2, 0, 0))]
    dec = StagedDecoding(np.ones((1, 1, 4), np.float32), stages)
    assert len(dec.audio_until(3)) == 6
    with pytest.raises(ValueError, match=r"frames \[3, 2\)"):
        dec.audio_until(2)
    with pytest.raises(ValueError, match="latent must be"):
        StagedDecoding(np.ones((4,), np.float32), stages)


def test_split_decoder_stages_run_in_order_equal_the_decoder(small_root):
    """The ONNX decoder cut into one graph per stage (what streaming runs): stage by stage
    equals the whole decoder graph, bit for bit, and there is one stage per upsampling
    layer plus conv_pre."""
    import onnx
    import onnxruntime as ort

    from engine.synth.decoder_split import (
        G_NAME,
        STAGE_IN,
        Z_NAME,
        derived_graphs,
        split_decoder_stages,
    )

    _, decoder_path = derived_graphs(
        small_root / "onnx" / "speakers" / "small" / "synthesizer.onnx"
    )
    decoder = onnx.load(str(decoder_path))
    stages = split_decoder_stages(decoder)
    assert len(stages) == len(JP_EXTRA.upsample_rates) + 1
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    whole = ort.InferenceSession(
        decoder.SerializeToString(), opts, providers=["CPUExecutionProvider"]
    )
    rng = np.random.default_rng(4)
    dims = {i.name: i.shape for i in whole.get_inputs()}
    feeds = {Z_NAME: rng.standard_normal((1, dims[Z_NAME][1], 9)).astype(np.float32)}
    if G_NAME in dims:
        feeds[G_NAME] = rng.standard_normal((1, dims[G_NAME][1], 1)).astype(np.float32)
    x = None
    for k, stage in enumerate(stages):
        sess = ort.InferenceSession(
            stage.SerializeToString(), opts, providers=["CPUExecutionProvider"]
        )
        x = sess.run(None, feeds if k == 0 else {STAGE_IN: x})[0]
    np.testing.assert_array_equal(x, whole.run(None, feeds)[0])
