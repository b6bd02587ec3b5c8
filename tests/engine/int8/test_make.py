"""int8 graphs (decoder, and the flow's feed-forward convolutions in the front graph):
calibration on the voice's own latents, the fidelity gate, the precision choice over the
real loading code, exactness of windowed decoding, unchanged durations, stamps.

The voices are model_small (reference weights: passes the gate) and the same network with one
decoder channel made an outlier (`write_outlier_voice`: identical fp32 audio, int8 broken).
Calibration uses a part of the shipped sentence set so each quantization takes seconds.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from engine import EngineOptions, layout
from engine.int8.recipe import (
    CALIBRATION_FILE,
    DECODER_FILE,
    FRONT_FILE,
    HELDOUT_FILE,
    REPORT_FILE,
    STAMP_FILE,
    read_sentences,
)
from engine.neural.loader import load_neural_voice
from tests.helpers.voices import FakeBert, shared_small_root, write_outlier_voice

CALIBRATION = read_sentences(CALIBRATION_FILE)[:10]
HELDOUT = [read_sentences(HELDOUT_FILE)[i] for i in (0, 3)]
WINDOW_TOLERANCE = 1e-6
"""int8 windows joined vs the int8 whole-sentence decode (observed: 0, integer kernels)."""


def _quantize(root: Path, name: str, out_root: Path):
    from engine.neural.quantize import quantize_voice

    return quantize_voice(
        name,
        root,
        out_root,
        bert=FakeBert(1024),
        threads=1,
        calibration=CALIBRATION,
        heldout=HELDOUT,
    )


def _load(root: Path, name: str, precision: str, cache: Path, runtime: str = "onnxruntime"):
    """The voice as the engine loads it; on ONNX Runtime alone unless `runtime` says
    otherwise (OpenVINO's candidates: tests/engine/int8/test_measure.py)."""
    return load_neural_voice(
        name,
        root,
        bert=FakeBert(1024),
        cache_dir=cache,
        options=EngineOptions(threads=1, precision=precision, runtime=runtime),
    )


@pytest.fixture(scope="module")
def good_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """model_small quantized into a hayakoe-layout root (as `wyoming-hayakoe quantize` bakes)."""
    out = tmp_path_factory.mktemp("good")
    _quantize(shared_small_root(), "small", out)
    return out


@pytest.fixture(scope="module")
def bad_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The outlier voice, exported and quantized into a root."""
    from engine.synth.export import export_model_dir

    base = tmp_path_factory.mktemp("bad")
    plain = write_outlier_voice(base / "plain")
    src = base / "src"
    export_model_dir(
        plain / "config.json",
        plain / "model.safetensors",
        plain / "style_vectors.npy",
        src / layout.speaker_prefix("bad", "onnx"),
    )
    out = base / "out"
    _quantize(src, "bad", out)
    return out


def _report(root: Path, name: str) -> dict:
    folder = root / layout.speaker_prefix(name, "onnx") / layout.INT8_SUBDIR
    return json.loads((folder / REPORT_FILE).read_text(encoding="utf-8"))


def test_quantize_writes_graphs_report_and_stamp(good_root: Path) -> None:
    voice = good_root / layout.speaker_prefix("small", "onnx")
    folder = voice / layout.INT8_SUBDIR
    for name in (DECODER_FILE, FRONT_FILE, REPORT_FILE, STAMP_FILE):
        assert (folder / name).is_file(), name
    assert (voice / "synthesizer.onnx").is_file() and (voice / "config.json").is_file()
    report = _report(good_root, "small")
    assert report["passed"], report["reasons"]
    assert len(report["sentences"]) == len(HELDOUT) * 3  # every style
    assert {s["sentence"] for s in report["sentences"]} == set(HELDOUT)
    assert not set(HELDOUT) & set(CALIBRATION)
    assert report["snr_db_min"] >= report["thresholds"]["min_snr_db"]
    assert 0 < report["logmel_db_mean"] <= report["thresholds"]["max_logmel_db"]
    assert report["settings"]["method"] == "minmax"
    assert report["settings"]["calibration_sentences"] == len(CALIBRATION)
    assert report["settings"]["int8_front_convolutions"] == 48  # 4 flows x 6 layers x 2
    stamp = json.loads((folder / STAMP_FILE).read_text(encoding="utf-8"))
    assert stamp["source_size"] == (voice / "synthesizer.onnx").stat().st_size


def test_gate_fails_on_an_outlier_channel(bad_root: Path) -> None:
    report = _report(bad_root, "bad")
    assert not report["passed"]
    assert any(r.startswith("SNR") for r in report["reasons"])
    assert report["logmel_db_mean"] > 3 * report["thresholds"]["max_logmel_db"]


def test_auto_runs_baked_graphs_that_passed_the_gate(
    good_root: Path, tmp_path: Path, caplog
) -> None:
    """int8 graphs baked beside the voice (`wyoming-hayakoe quantize`) that passed their
    gate: `auto` takes them at once, measuring nothing (no stored measurement: the library
    starts no timing of its own); `int8` asked for runs the baked graphs too."""
    voice_dir = good_root / layout.speaker_prefix("small", "onnx")
    before = sorted(p.name for p in voice_dir.iterdir())
    with caplog.at_level(logging.INFO):
        voice = _load(good_root, "small", "auto", tmp_path)
    assert voice.precision_choice.measurement is None
    assert voice.synth.precision == "int8"
    assert voice.synth.decoder_path == voice_dir / layout.INT8_SUBDIR / DECODER_FILE
    assert "int8 fidelity of small: passed" in caplog.text
    assert "measuring which" not in caplog.text
    with caplog.at_level(logging.INFO, logger="engine.neural.build"):
        forced = _load(good_root, "small", "int8", tmp_path)
    assert forced.synth.precision == "int8"
    assert forced.synth.decoder_path == voice_dir / layout.INT8_SUBDIR / DECODER_FILE
    assert forced.synth.front_path == voice_dir / layout.INT8_SUBDIR / FRONT_FILE
    assert "Voice small runs int8: int8 fidelity of small: passed" in caplog.text
    assert sorted(p.name for p in voice_dir.iterdir()) == before  # derived files: cache only
    fp32 = _load(good_root, "small", "fp32", tmp_path)
    assert fp32.synth.precision == "fp32"
    assert fp32.synth.decoder_path == fp32.synth.fp32_decoder_path
    assert fp32.synth.front_path == fp32.synth.fp32_front_path
    assert tmp_path in fp32.synth.fp32_decoder_path.parents


def test_auto_picks_fp32_where_the_gate_failed(bad_root: Path, tmp_path: Path, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="engine.neural.build"):
        voice = _load(bad_root, "bad", "auto", tmp_path)
    assert voice.synth.precision == "fp32"
    assert "Voice bad runs fp32: int8 fidelity of bad: FAILED (SNR" in caplog.text
    forced = _load(bad_root, "bad", "int8", tmp_path)
    assert forced.synth.precision == "int8"


def test_int8_windows_join_to_the_int8_whole_sentence(good_root: Path, tmp_path: Path) -> None:
    from engine.synth.common import NoiseSource, SynthInputs, SynthParams
    from engine.synth.windowed import WindowPlan, decode_windows
    from engine.text import analyze

    voice = _load(good_root, "small", "int8", tmp_path)
    synth = voice.synth
    a = analyze(HELDOUT[1]).with_blanks()
    feats = FakeBert(1024).features([a.bert_text], [a.word2ph])[0]
    inputs = SynthInputs(
        np.asarray(a.phone_ids),
        np.asarray(a.tone_ids),
        np.asarray(a.lang_ids),
        feats,
        voice.style_vectors[1],
        0,
    )
    latent = synth.latent(inputs, SynthParams(), NoiseSource(3))
    whole = synth.decode(latent, latent.z)
    n = latent.frames
    assert n > 60
    for plan in (WindowPlan(first=1, growth=1.0, largest=1, min_tail=0), WindowPlan()):

        def dec(z: np.ndarray) -> np.ndarray:
            return synth.decode(latent, z)

        joined = np.concatenate(
            list(decode_windows(latent.z, dec, synth.context, plan.windows(n), synth.hop_length))
        )
        assert joined.shape == whole.shape
        assert np.abs(joined - whole).max() <= WINDOW_TOLERANCE
    # ...and the streamed voice gives the same audio as the whole-sentence voice.
    from engine.voice_backend import SynthesisOptions

    opts = SynthesisOptions(style="Happy", seed=11)
    streamed = np.concatenate([p.samples for p in voice.render([HELDOUT[1]], opts)])
    whole_opts = SynthesisOptions(style="Happy", seed=11, whole_sentences=True)
    at_once = np.concatenate([p.samples for p in voice.render([HELDOUT[1]], whole_opts)])
    assert streamed.shape == at_once.shape
    assert np.abs(streamed - at_once).max() <= WINDOW_TOLERANCE


def test_int8_stages_hand_uint8_on_and_equal_the_whole_graph(good_root: Path) -> None:
    """The int8 decoder as the engine runs it (simplified, cut where each stage's result is
    still 8-bit: `split_decoder_stages`) gives what the quantizer's file gives in one
    session, to the sample, with uint8 tensors between stages."""
    import onnx
    import onnxruntime as ort

    from engine.synth.decoder_split import STAGE_IN, split_decoder_stages

    path = good_root / layout.speaker_prefix("small", "onnx") / layout.INT8_SUBDIR / DECODER_FILE
    whole = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(5)
    feeds = {
        i.name: rng.standard_normal([d if isinstance(d, int) else 37 for d in i.shape]).astype(
            np.float32
        )
        for i in whole.get_inputs()
    }
    want = whole.run(None, feeds)[0]
    stages = [
        ort.InferenceSession(s.SerializeToString(), providers=["CPUExecutionProvider"])
        for s in split_decoder_stages(onnx.load(str(path)))
    ]
    assert len(stages) > 2
    between = [s.get_inputs()[0].type for s in stages[1:]]
    assert between == ["tensor(uint8)"] * len(between)  # the fp32 last stage's input too
    x = stages[0].run(None, feeds)[0]
    for sess in stages[1:]:
        assert x.dtype == np.uint8
        x = sess.run(None, {STAGE_IN: x})[0]
    assert x.shape == want.shape
    np.testing.assert_array_equal(x, want)


def test_int8_front_is_the_flow_feed_forward_only(good_root: Path, tmp_path: Path) -> None:
    """The int8 front graph quantizes exactly the flow's feed-forward convolutions (found by
    structure): the text encoder and duration predictors stay fp32, so the same sentence
    and noise give the same durations and latent length as fp32, and a latent close to it."""
    import onnx

    from engine.int8.quantize import flow_ffn_nodes
    from engine.synth.common import NoiseSource, SynthInputs, SynthParams
    from engine.text import analyze

    int8 = _load(good_root, "small", "int8", tmp_path).synth
    fp32 = _load(good_root, "small", "fp32", tmp_path).synth
    assert int8.prior_noise_input == fp32.prior_noise_input == "noise_1"
    flow = flow_ffn_nodes(fp32.fp32_front_path, "noise_1")
    assert len(flow) == 48
    assert all(n.startswith("/enc/ffn_layers.") for n in flow), flow[:3]

    graph = onnx.load(str(int8.front_path)).graph
    dequantized = {o for n in graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    int8_convs = {n.name for n in graph.node if n.op_type == "Conv" and n.input[1] in dequantized}
    assert int8_convs == set(flow)
    fp32_convs = [n.name for n in graph.node if n.op_type == "Conv" and n.name not in flow]
    assert any(n.startswith("/dp/") for n in fp32_convs)  # duration predictors stay fp32
    assert any(n.startswith("/enc_p/") for n in fp32_convs)  # and the text encoder

    a = analyze(HELDOUT[0]).with_blanks()
    feats = FakeBert(1024).features([a.bert_text], [a.word2ph])[0]
    inputs = SynthInputs(
        np.asarray(a.phone_ids),
        np.asarray(a.tone_ids),
        np.asarray(a.lang_ids),
        feats,
        np.load(good_root / layout.speaker_prefix("small", "onnx") / "style_vectors.npy")[1],
        0,
    )
    for sdp_ratio in (0.0, 0.7):
        params = SynthParams(sdp_ratio=sdp_ratio)
        got = int8.latent(inputs, params, NoiseSource(5))
        want = fp32.latent(inputs, params, NoiseSource(5))
        assert np.array_equal(got.durations, want.durations)
        assert got.z.shape == want.z.shape
        diff = float(np.abs(got.z - want.z).max())
        assert 0 < diff < 0.2 * float(np.abs(want.z).max())


def test_stamp_mismatch_and_narrow_decoders(good_root: Path, tmp_path: Path, caplog) -> None:
    """Graphs made from another source are ignored; `auto` then keeps a narrow (test-sized)
    decoder on fp32 without making any, and says why."""
    copy = tmp_path / "root"
    shutil.copytree(good_root, copy)
    voice_dir = copy / layout.speaker_prefix("small", "onnx")
    stamp_path = voice_dir / layout.INT8_SUBDIR / STAMP_FILE
    stamp = json.loads(stamp_path.read_text(encoding="utf-8"))
    stamp["source_sha256"] = "0" * 64
    stamp["source_mtime_ns"] += 1
    stamp_path.write_text(json.dumps(stamp), encoding="utf-8")
    with caplog.at_level(logging.INFO):
        voice = _load(copy, "small", "auto", tmp_path / "cache")
    assert voice.synth.precision == "fp32"
    assert "made from another source or recipe" in caplog.text
    assert "the decoder is narrow (32 channels < 256)" in caplog.text
    assert not (tmp_path / "cache" / "int8").exists()


def test_int8_is_made_once_into_the_cache(tmp_path: Path, monkeypatch) -> None:
    """`precision="int8"` with no graphs anywhere makes them into the cache (not the voice
    folder), and a second load finds them there."""
    import engine.int8.make as quantize

    root = tmp_path / "root"
    src = shared_small_root() / layout.speaker_prefix("small", "onnx")
    shutil.copytree(src, root / layout.speaker_prefix("small", "onnx"))
    before = sorted(p.name for p in (root / layout.speaker_prefix("small", "onnx")).iterdir())
    cache = tmp_path / "cache"
    orig = quantize.read_sentences

    def short(path: Path) -> list[str]:  # the shipped sets, shortened for the test's sake
        return orig(path)[:6] if path == CALIBRATION_FILE else orig(path)[:1]

    monkeypatch.setattr(quantize, "read_sentences", short)
    voice = _load(root, "small", "int8", cache)
    assert voice.synth.precision == "int8"
    made = voice.synth.decoder_path
    assert cache / "int8" in made.parents
    assert (made.parent / REPORT_FILE).is_file()
    assert (
        sorted(p.name for p in (root / layout.speaker_prefix("small", "onnx")).iterdir()) == before
    )
    mtime = made.stat().st_mtime_ns
    again = _load(root, "small", "int8", cache)
    assert again.synth.decoder_path == made
    assert made.stat().st_mtime_ns == mtime


def test_precision_is_validated() -> None:
    from engine import TTS

    with pytest.raises(ValueError, match="precision must be one of auto, fp32, int8"):
        EngineOptions(precision="int4")
    assert TTS(precision="fp32").options.precision == "fp32"
    assert TTS().options.precision == "auto"
    with pytest.raises(ValueError, match="precision"):
        TTS(precision="fast")
    env = EngineOptions.from_env({"WYOMING_HAYAKOE_PRECISION": "INT8"})
    assert env.precision == "int8"
    assert EngineOptions.from_env({"WYOMING_HAYAKOE_PRECISION": "bogus"}).precision == "auto"


def test_quantize_command(layout_root: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    """`wyoming-hayakoe quantize SRC OUT_ROOT --name NAME` with the real (small) BERT of a
    hayakoe-layout root: graphs, report and a per-sentence table; bad input → status 2."""
    import engine.int8.make as quantize
    from tests.helpers.voices import LAYOUT_VOICE
    from wyoming_hayakoe.__main__ import main

    orig = quantize.read_sentences
    monkeypatch.setattr(
        quantize,
        "read_sentences",
        lambda path: orig(path)[:4] if path == CALIBRATION_FILE else orig(path)[:1],
    )
    out = tmp_path / "out"
    argv = ["quantize", str(layout_root), str(out), "--name", LAYOUT_VOICE]
    code = main([*argv, "--bert-source", str(layout_root), "--threads", "1"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    folder = out / layout.speaker_prefix(LAYOUT_VOICE, "onnx") / layout.INT8_SUBDIR
    assert f"wrote {folder}" in printed.out
    assert "SNR dB" in printed.out and f"int8 fidelity of {LAYOUT_VOICE}:" in printed.out
    assert (folder / DECODER_FILE).is_file() and (folder / REPORT_FILE).is_file()
    assert "calibration latents" in printed.err  # progress lines
    stamp = folder / STAMP_FILE
    made = {f.name: f.stat().st_mtime_ns for f in folder.iterdir() if f.is_file()}
    # a second run keeps what is made: no calibration, the same files
    assert main([*argv, "--bert-source", str(layout_root), "--threads", "1"]) == 0
    again = capsys.readouterr()
    assert "already made" in again.err and "kept (--force makes them again)" in again.err
    assert "calibration latents" not in again.err
    assert {f.name: f.stat().st_mtime_ns for f in folder.iterdir() if f.is_file()} == made
    # --force makes them again
    assert main([*argv, "--bert-source", str(layout_root), "--threads", "1", "--force"]) == 0
    assert "calibration latents" in capsys.readouterr().err
    assert stamp.stat().st_mtime_ns != made[stamp.name]
    assert main(["quantize", str(layout_root), str(out), "--name", "nobody"]) == 2
    assert "nobody" in capsys.readouterr().err
