"""Speed exact over a sentence (`engine.synth.exact_speed`): the tests' small voice's real
synthesizer graph, before and after the rewrite, run by ONNX Runtime; then the front graph
the engine cuts, through a voice."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from engine import layout
from engine.neural.loader import load_neural_voice
from engine.synth.exact_speed import exact_speed_frames
from engine.voice_backend import SynthesisOptions
from tests.helpers.voices import ONE_THREAD, FakeBert, shared_small_root


def _synthesizer() -> onnx.ModelProto:
    folder = shared_small_root() / layout.speaker_prefix("small", "onnx")
    return onnx.load(str(layout.onnx_folder_files(folder).synthesizer))


def _feeds(session: ort.InferenceSession, length_scale: float, t: int = 37) -> dict:
    rng = np.random.default_rng(t)
    shapes = {i.name: i for i in session.get_inputs()}
    feeds = {
        "x": rng.integers(1, 40, (1, t)),
        "x_lengths": np.array([t]),
        "sid": np.array([0]),
        "tone": rng.integers(0, 2, (1, t)),
        "language": np.ones((1, t), np.int64),
        "bert": rng.standard_normal((1, shapes["bert"].shape[1], t)).astype(np.float32),
        "style_vec": rng.standard_normal((1, shapes["style_vec"].shape[1])).astype(np.float32),
        "length_scale": np.array([length_scale], np.float32),
    }
    for name in ("noise_scale", "noise_scale_w", "sdp_ratio"):  # no noise: same durations
        feeds[name] = np.array([0.0], np.float32)
    return {k: v for k, v in feeds.items() if k in shapes}


def test_frames_at_speed_1_are_the_originals_and_other_speeds_scale_the_sum() -> None:
    model = _synthesizer()
    before = ort.InferenceSession(model.SerializeToString())
    assert exact_speed_frames(model) is True
    onnx.checker.check_model(model)
    assert exact_speed_frames(model) is False  # once
    assert [n.op_type for n in model.graph.node].count("Ceil") == 1
    after = ort.InferenceSession(model.SerializeToString())
    for t in (5, 37, 90):
        at_1 = before.run(["durations"], _feeds(before, 1.0, t))[0]
        assert np.array_equal(after.run(["durations"], _feeds(after, 1.0, t))[0], at_1)
        total = float(at_1.sum())
        for speed in (0.5, 0.8, 1.25, 1.5, 2.0, 4.0):
            ceil_each = before.run(["durations"], _feeds(before, 1 / speed, t))[0]
            exact = after.run(["durations"], _feeds(after, 1 / speed, t))[0]
            assert exact.min() >= 0 and np.array_equal(exact, np.round(exact))
            # the sum follows the speed to one frame, wherever the rounding falls
            assert abs(float(exact.sum()) - total / speed) <= 1.0, (t, speed)
            # and no id moves by more than one frame from its share
            assert np.abs(exact - at_1 / speed).max() <= 1.0
            if speed > 1:  # rounding each id up keeps short ids long: the sum falls short
                assert float(ceil_each.sum()) >= float(exact.sum())


def test_a_graph_without_the_pattern_is_left_as_it_is() -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    ls = helper.make_tensor_value_info("length_scale", TensorProto.FLOAT, [1])
    # a Ceil that is not of a product with length_scale
    graph = helper.make_graph([helper.make_node("Ceil", ["x"], ["y"])], "g", [x, ls], [y])
    model = helper.make_model(graph)
    data = model.SerializeToString()
    assert exact_speed_frames(model) is False
    assert model.SerializeToString() == data


@pytest.mark.timeout(300)
def test_a_voice_at_1_5x_lasts_two_thirds_of_its_length(tmp_path) -> None:
    """Through a voice (the front graph the engine cuts and caches): sentences at speed 1.5
    last 1/1.5 of their length at speed 1, within 3 % (hayakoe's pause rule keeps a minimum
    pause between sentences, and the edge margins are fixed)."""
    voice = load_neural_voice(
        "small", shared_small_root(), bert=FakeBert(), cache_dir=tmp_path, options=ONE_THREAD
    )

    def samples(sentences: list[str], speed: float) -> int:
        pieces = voice.render(sentences, SynthesisOptions(seed=1, speed=speed))
        return sum(p.samples.size for p in pieces)

    for sentences in (["今日は元気ですか。"], ["照明を消しました。", "エアコンは二十五度です。"]):
        at_1 = samples(sentences, 1.0)
        for speed in (1.5, 2.0):
            assert at_1 / samples(sentences, speed) == pytest.approx(speed, rel=0.03)
