"""Voice-folder detection and loading (`engine.neural.loader`): plain Style-Bert-VITS2 folders and
hayakoe's `onnx/speakers/<name>/` and `pytorch/speakers/<name>/` layouts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.layout import VoiceFolderError, onnx_folder_files, plain_folder_files
from engine.neural.loader import load_neural_voice, locate_voice
from engine.voice_backend import SynthesisOptions
from tests.helpers.voices import FakeBert, copy_small, shared_small_root

SENTENCES = ["リビングの照明をつけました。"]


@pytest.fixture(scope="module")
def hayakoe_root() -> Path:
    """A root holding both hayakoe layouts of model_small under the name 'small'."""
    torch.set_num_threads(1)
    return shared_small_root()


def test_plain_folder_files_and_newest_checkpoint(tmp_path: Path) -> None:
    d = copy_small(tmp_path / "v")
    older = d / "G_100.safetensors"
    shutil.copyfile(d / "model.safetensors", older)
    os.utime(older, (1_000_000, 1_000_000))
    files = plain_folder_files(d)
    assert files.checkpoint == d / "model.safetensors"
    os.utime(older, None)
    os.utime(d / "model.safetensors", (1_000_000, 1_000_000))
    assert plain_folder_files(d).checkpoint == older


def test_missing_files_are_named(tmp_path: Path) -> None:
    d = tmp_path / "broken"
    d.mkdir()
    (d / "config.json").write_text("{}")
    with pytest.raises(VoiceFolderError) as err:
        plain_folder_files(d)
    assert str(d) in str(err.value)
    assert "*.safetensors" in str(err.value) and "style_vectors.npy" in str(err.value)
    with pytest.raises(VoiceFolderError, match=r"lacks style_vectors\.npy, synthesizer\.onnx"):
        onnx_folder_files(d)
    # A root that is almost a plain voice says what it lacks, not just "not found".
    with pytest.raises(VoiceFolderError, match=r"lacks \*\.safetensors, style_vectors\.npy"):
        locate_voice("x", d)
    with pytest.raises(VoiceFolderError, match="voice 'x' not found in"):
        locate_voice("x", tmp_path / "nothing")


def test_layout_detection(hayakoe_root: Path, tmp_path: Path) -> None:
    loc = locate_voice("small", hayakoe_root, "cpu")
    assert (loc.kind, loc.directory) == ("onnx", hayakoe_root / "onnx" / "speakers" / "small")
    loc = locate_voice("small", hayakoe_root, "cuda")
    assert (loc.kind, loc.directory) == ("pytorch", hayakoe_root / "pytorch" / "speakers" / "small")
    # Only the pytorch layout: CPU falls back to it.
    only_pt = tmp_path / "only_pt"
    shutil.copytree(hayakoe_root / "pytorch", only_pt / "pytorch")
    assert locate_voice("small", only_pt, "cpu").kind == "pytorch"
    # The folder given directly: an ONNX speaker folder or a plain model folder.
    onnx_dir = hayakoe_root / "onnx" / "speakers" / "small"
    assert locate_voice("whatever", onnx_dir).directory == onnx_dir
    plain = copy_small(tmp_path / "plain")
    assert locate_voice("whatever", plain).kind == "pytorch"
    # Through a Source object (anything with fetch()).
    from engine.sources.local import LocalSource

    assert locate_voice("small", LocalSource(str(hayakoe_root))).kind == "onnx"


def _audio(voice, seed: int = 1) -> np.ndarray:
    pieces = list(voice.render(SENTENCES, SynthesisOptions(seed=seed, sdp_ratio=0.5)))
    return np.concatenate([p.samples for p in pieces])


def test_every_layout_loads_and_speaks_alike(hayakoe_root: Path, tmp_path: Path) -> None:
    bert = FakeBert()
    onnx_voice = load_neural_voice("small", hayakoe_root, bert=bert)
    assert onnx_voice.synth.kind == "onnx" and onnx_voice.styles == ["Neutral", "Happy", "Sad"]
    torch_voice = load_neural_voice("small", hayakoe_root, bert=bert, backend="torch")
    assert torch_voice.synth.kind == "torch"
    a, b = _audio(onnx_voice), _audio(torch_voice)
    assert a.shape == b.shape and a.size > 0
    assert np.abs(a - b).max() <= 1e-3

    # A plain folder on the CPU is exported once into the cache, then read from there.
    plain = copy_small(tmp_path / "plain")
    cache = tmp_path / "cache"
    v1 = load_neural_voice("mine", plain, bert=bert, cache_dir=cache)
    exported = sorted(cache.rglob("synthesizer.onnx"))
    assert v1.synth.kind == "onnx" and len(exported) == 1
    stamp = exported[0].stat().st_mtime_ns
    v2 = load_neural_voice("mine", plain, bert=bert, cache_dir=cache)
    assert exported[0].stat().st_mtime_ns == stamp
    np.testing.assert_array_equal(_audio(v1), _audio(v2))
    assert np.abs(_audio(v1) - a).max() <= 1e-3


def test_torch_voice_takes_no_int8_option(hayakoe_root: Path) -> None:
    """PyTorch's CPU int8 was removed (it lost to ONNX Runtime int8 on speed and fidelity,
    docs/synthesizer.md): asking for it is an error, not a silent fp32 voice."""
    with pytest.raises(TypeError, match="quantize"):
        load_neural_voice("small", hayakoe_root, bert=FakeBert(), quantize=True)  # type: ignore[call-arg]


def test_voice_whose_graph_lacks_durations(hayakoe_root: Path, tmp_path: Path) -> None:
    """hayakoe's own exporter writes `audio` only and no duration predictor: such a voice
    loads, speaks, takes seeds, and falls back to the minimum pause."""
    import onnx

    from engine.neural.voice import MIN_PAUSE_S, silent_edges

    src = hayakoe_root / "onnx" / "speakers" / "small"
    dst = tmp_path / "onnx" / "speakers" / "hk"
    dst.mkdir(parents=True)
    for name in ("config.json", "style_vectors.npy"):
        shutil.copyfile(src / name, dst / name)
    model = onnx.load(str(src / "synthesizer.onnx"))
    keep = [o for o in model.graph.output if o.name == "audio"]
    del model.graph.output[:]
    model.graph.output.extend(keep)
    onnx.save(model, str(dst / "synthesizer.onnx"))

    voice = load_neural_voice("hk", tmp_path, bert=FakeBert())
    opts = SynthesisOptions(seed=4, whole_sentences=True)
    pieces = list(voice.render(["こんにちは。", "さようなら。"], opts))
    again = list(voice.render(["こんにちは。", "さようなら。"], opts))
    assert [p.sentence for p in pieces] == [0, 1]
    assert all(np.array_equal(a.samples, b.samples) for a, b in zip(pieces, again))
    gap = silent_edges(pieces[0].samples, 44100)[1] + silent_edges(pieces[1].samples, 44100)[0]
    assert abs(gap - MIN_PAUSE_S * 44100) <= 0.011 * 44100
