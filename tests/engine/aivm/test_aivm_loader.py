"""AivisHub files (`.aivmx`, `.aivm`) as voices: metadata, the adapted graph against the
published graph on plain ONNX Runtime, names, the cache stamp, and every bad file named.

The files are made by the real tools (`tests.helpers.aivm`: aivmlib writes the metadata;
the graph has the production form of Style-Bert-VITS2's convert_onnx + onnxslim)."""

from __future__ import annotations

import base64
import io
import json
import logging
import shutil
import struct
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from engine import EngineOptions, Speaker
from engine.aivm import AivmFileError, read_metadata
from engine.aivm.loader import load_aivm_voice, voices_in_dir, voices_of_file
from engine.aivm.naming import slug
from engine.aivm.store import STAMP_FILE, folder_for
from engine.synth.common import NoiseSource, SynthInputs, SynthParams
from engine.synth.exact_speed import exact_speed_frames
from engine.synth.onnx_backend import NOISE_INPUT, make_noise_inputs
from tests.helpers.aivm import BERT_WIDTH, Spec, write_aivmx
from tests.helpers.aivm import Speaker as SpecSpeaker
from tests.helpers.voices import FakeBert

pytestmark = pytest.mark.timeout(900)

ONE_THREAD = EngineOptions(threads=1)


def _load(name: str, source: Path | str, cache: Path, **kw) -> object:
    return load_aivm_voice(
        name,
        str(source),
        bert=FakeBert(BERT_WIDTH),
        cache_dir=cache,
        options=kw.pop("options", ONE_THREAD),
    )


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("aivm-cache")


@pytest.fixture(scope="module")
def voices(aivm_files, cache) -> dict[str, object]:
    return {
        "one": _load("one", aivm_files.one, cache),
        "bob": _load("bob", f"{aivm_files.multi}#speaker=1", cache),
        "carol": _load("carol", aivm_files.aivm, cache),
    }


# -- metadata ---------------------------------------------------------------------------


def test_metadata_read_from_both_formats_matches_aivmlib(aivm_files) -> None:
    import aivmlib

    for path in (aivm_files.one, aivm_files.multi, aivm_files.aivm):
        meta = read_metadata(path)
        with path.open("rb") as f:
            ref = (
                aivmlib.read_aivmx_metadata
                if path.suffix == ".aivmx"
                else aivmlib.read_aivm_metadata
            )(f)
        assert meta.kind == path.suffix[1:]
        assert meta.manifest.uuid == str(ref.manifest.uuid)
        assert meta.manifest.version == ref.manifest.version
        assert meta.manifest.license == ref.manifest.license
        assert [
            (s.name, s.local_id, [(t.name, t.local_id) for t in s.styles])
            for s in meta.manifest.speakers
        ] == [
            (s.name, s.local_id, [(t.name, t.local_id) for t in s.styles])
            for s in ref.manifest.speakers
        ]
        assert np.array_equal(meta.style_vectors, np.load(io.BytesIO(ref.style_vectors)))
    one = read_metadata(aivm_files.one).manifest
    assert [s.name for s in one.speakers[0].styles] == [
        "ノーマル",
        "Happy",
        "Sad",
    ]  # aivmlib's rename
    assert read_metadata(aivm_files.aivm).manifest.creators == ("Carol Creator",)


# -- the .aivmx graph against the published graph on plain ONNX Runtime ----------------------


def _case(t: int = 31, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    phones = rng.integers(1, 100, t)
    phones[::2] = 0
    tones = np.where(phones > 0, 7, 0)
    langs = np.where(phones > 0, 1, 0)
    bert = rng.standard_normal((BERT_WIDTH, t)).astype(np.float32)
    return phones.astype(np.int64), tones.astype(np.int64), langs.astype(np.int64), bert


def _plain_feeds(sess, phones, tones, langs, bert, style, sid, params) -> dict[str, np.ndarray]:
    """AivisSpeech's feeds: by position, the scalars 0-d."""
    t = len(phones)
    values = [
        phones.reshape(1, t),
        np.array([t], np.int64),
        np.array([sid], np.int64),
        tones.reshape(1, t),
        langs.reshape(1, t),
        bert[None],
        style.reshape(1, -1),
        np.array(params.length_scale, np.float32),
        np.array(params.sdp_ratio, np.float32),
        np.array(params.noise_scale, np.float32),
        np.array(params.noise_scale_w, np.float32),
    ]
    return {i.name: v for i, v in zip(sess.get_inputs(), values, strict=False)}


@pytest.mark.parametrize("which,sid", [("one", 0), ("bob", 1)])
def test_engine_equals_the_published_graph_on_plain_onnx_runtime(
    aivm_files, voices, which, sid
) -> None:
    """Noise off, speed 1: the file itself, untouched, bound by position with 0-d scalars
    (as AivisSpeech runs it); at another speed, the file with its frames rounded over the
    sentence (`engine.synth.exact_speed`, found through the adapted graph's reshapes). Noise
    on: the same graph with its noise fed from the same seed. Audio within 1e-4, durations =
    the alignment summed over frames, exactly."""
    path = aivm_files.one if which == "one" else aivm_files.multi
    voice = voices[which]
    phones, tones, langs, bert = _case()
    style = voice.style_vectors[1]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    exact = onnx.load(str(path))
    assert exact_speed_frames(exact)
    for speed, graph in ((1.0, str(path)), (1.1, exact.SerializeToString())):
        quiet = SynthParams(noise_scale=0.0, length_scale=speed, noise_scale_w=0.0, sdp_ratio=0.4)
        plain = ort.InferenceSession(graph, opts, providers=["CPUExecutionProvider"])
        assert len(plain.get_outputs()) == 7 and plain.get_outputs()[0].name == "output"
        feeds = _plain_feeds(plain, phones, tones, langs, bert, style, sid, quiet)
        outs = plain.run(None, feeds)
        ours = voice.synth.synthesize(
            SynthInputs(phones, tones, langs, bert, style, 0), quiet, NoiseSource(0)
        )  # speaker id 0 asked: the voice is pinned to its own speaker
        assert ours.audio.shape == outs[0][0, 0].shape, speed
        assert float(np.abs(ours.audio - outs[0][0, 0]).max()) <= 1e-4
        frames = np.rint(outs[1].sum(axis=2)[0, 0]).astype(np.int64)
        assert np.array_equal(ours.durations, frames)

    noisy = SynthParams(noise_scale=0.667, length_scale=1.0, noise_scale_w=0.8, sdp_ratio=0.5)
    model = onnx.load(str(path))
    assert make_noise_inputs(model) == 2
    seeded = ort.InferenceSession(
        model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
    )
    noise = NoiseSource(11).for_sentence(2)
    feeds = _plain_feeds(seeded, phones, tones, langs, bert, style, sid, noisy)
    feeds[NOISE_INPUT.format(0)] = noise.stream(0, 2 * len(phones))
    feeds[NOISE_INPUT.format(1)] = noise.stream(1, 32 * 4000)
    ref = seeded.run(None, feeds)[0][0, 0]
    got = voice.synth.synthesize(SynthInputs(phones, tones, langs, bert, style, 0), noisy, noise)
    assert got.audio.shape == ref.shape
    assert float(np.abs(got.audio - ref).max()) <= 1e-4


def test_windows_joined_equal_the_whole_decode(voices) -> None:
    synth = voices["bob"].synth
    phones, tones, langs, bert = _case(45, seed=5)
    params = SynthParams(noise_scale=0.667, length_scale=1.0, noise_scale_w=0.8, sdp_ratio=0.2)
    lat = synth.latent(
        SynthInputs(phones, tones, langs, bert, voices["bob"].style_vectors[2], 0),
        params,
        NoiseSource(4),
    )
    whole = synth.decode(lat, lat.z)
    staged = synth.staged(lat)
    cuts = [7, 20, lat.frames]
    joined = np.concatenate([staged.audio_until(c) for c in cuts])
    assert lat.frames > 20
    assert float(np.abs(joined - whole).max()) <= 1e-5


def test_voices_speak_with_manifest_styles_and_defaults(voices) -> None:
    one, bob, carol = Speaker(voices["one"]), Speaker(voices["bob"]), Speaker(voices["carol"])
    assert one.styles == ["ノーマル", "Happy", "Sad"] and one.default_style == "ノーマル"
    assert bob.styles == ["Happy", "Sad"] and bob.default_style == "Happy"
    assert carol.styles == ["Calm", "Angry"] and carol.default_style == "Angry"
    assert "license: ACML-NC 1.0" in carol.description and "Carol Creator" in carol.description
    assert carol.attribution_name == "Carol Creator"
    assert "hub.aivis-project.com" in carol.attribution_url
    for sp in (one, bob, carol):
        audio = sp.generate("こんにちは。", seed=1)
        assert audio.duration > 0.2 and np.abs(audio.data).max() > 50


def test_a_voice_declares_its_aivishub_identity(aivm_files, voices) -> None:
    """`Speaker.identity`: the file, the speaker it is (the second of a two-speaker file
    too) and that speaker's local style IDs, as the manifest says; what the server's style
    IDs and ``/speaker_info`` read instead of the file."""
    multi = read_metadata(aivm_files.multi).manifest.speakers
    bob = Speaker(voices["bob"]).identity
    assert bob is not None and bob.aivm and bob.source == str(aivm_files.multi)
    assert bob.speaker_uuid == multi[1].uuid != multi[0].uuid
    assert dict(bob.style_ids) == {"Sad": 2, "Happy": 1}
    carol = Speaker(voices["carol"]).identity
    assert carol is not None and carol.source == str(aivm_files.aivm)
    assert carol.speaker_uuid == read_metadata(aivm_files.aivm).manifest.speakers[0].uuid
    assert carol.license is not None and "ACML-NC" in carol.license
    assert carol.creators == ("Carol Creator",)


def test_the_aivm_weights_give_the_aivmx_voice(aivm_files, voices) -> None:
    """carol.aivm holds the weights of tsukuyomi.aivmx (another manifest): exported by our
    own path, it speaks like the published graph does."""
    phones, tones, langs, bert = _case(25, seed=9)
    style = voices["one"].style_vectors[1]
    params = SynthParams(noise_scale=0.667, length_scale=1.0, noise_scale_w=0.8, sdp_ratio=0.3)
    inputs = SynthInputs(phones, tones, langs, bert, style, 0)
    a = voices["one"].synth.synthesize(inputs, params, NoiseSource(5))
    b = voices["carol"].synth.synthesize(inputs, params, NoiseSource(5))
    assert a.audio.shape == b.audio.shape
    assert np.array_equal(a.durations, b.durations)
    assert float(np.abs(a.audio - b.audio).max()) <= 1e-4


def test_the_cache_folder_is_stamped_and_reused(aivm_files, cache, caplog) -> None:
    meta = read_metadata(aivm_files.one)
    folder = folder_for(meta, cache)
    stamp = json.loads((folder / STAMP_FILE).read_text())
    assert (stamp["uuid"], stamp["version"]) == (meta.manifest.uuid, meta.manifest.version)
    assert meta.manifest.uuid in folder.name and meta.manifest.version in folder.name
    props = {
        p.key: p.value
        for p in onnx.load(
            str(folder / "synthesizer.onnx"), load_external_data=False
        ).metadata_props
    }
    assert props["aivm_uuid"] == meta.manifest.uuid and props["aivm_version"] == "1.0.0"
    assert "aivm_style_vectors" not in props
    before = (folder / "synthesizer.onnx").stat().st_mtime_ns
    with caplog.at_level(logging.INFO):
        _load("again", aivm_files.one, cache)
    assert "preparing" not in caplog.text
    assert (folder / "synthesizer.onnx").stat().st_mtime_ns == before


def test_precision_int8_quantizes_an_aivmx_voice_behind_the_gate(
    aivm_files, tmp_path, caplog
) -> None:
    caplog.set_level(logging.INFO)
    voice = _load("q", aivm_files.one, tmp_path, options=EngineOptions(threads=1, precision="int8"))
    assert voice.synth.precision == "int8"
    assert voice.synth.decoder_path != voice.synth.fp32_decoder_path
    uuid = read_metadata(aivm_files.one).manifest.uuid
    assert uuid in str(voice.synth.decoder_path)  # one set per file version, any speaker
    assert "fidelity gate" in caplog.text


# -- names ------------------------------------------------------------------------------


def test_names_come_from_manifests_stable_and_distinct(aivm_files, tmp_path, caplog) -> None:
    folder = aivm_files.one.parent
    found, bad = voices_in_dir(folder)
    assert bad == []
    uuid8 = read_metadata(aivm_files.multi).manifest.uuid.replace("-", "")[:8]
    names = dict(found)
    assert names == {
        "tsukuyomi-test": str(aivm_files.one),
        f"aivm-{uuid8}-alice": f"{aivm_files.multi}#speaker=0",
        f"aivm-{uuid8}-bob": f"{aivm_files.multi}#speaker=1",
        "carol-voice": str(aivm_files.aivm),
    }
    assert voices_in_dir(folder)[0] == found  # the same names on every start
    copy = tmp_path / "v"
    copy.mkdir()
    shutil.copy(aivm_files.one, copy / "a.aivmx")
    shutil.copy(aivm_files.one, copy / "b.aivmx")
    with caplog.at_level(logging.WARNING):
        twins, _ = voices_in_dir(copy, taken=["Tsukuyomi-Test"])
    uuid_one = read_metadata(aivm_files.one).manifest.uuid.replace("-", "")[:8]
    assert [n for n, _ in twins] == [f"tsukuyomi-test-{uuid_one}", "tsukuyomi-test-1-0-0"]
    assert "Voice name tsukuyomi-test is taken" in caplog.text
    assert voices_of_file(str(aivm_files.multi), "duo") == [
        ("duo-alice", f"{aivm_files.multi}#speaker=0"),
        ("duo-bob", f"{aivm_files.multi}#speaker=1"),
    ]
    assert slug("Ｍａｉ　（ノーマル）!") == "mai"


# -- bad files --------------------------------------------------------------------------


def _aivmx_with(aivm_files, tmp_path: Path, name: str, **props: str | None) -> Path:
    """The one-speaker test file with some metadata entries replaced (None: removed)."""
    model = onnx.load(str(aivm_files.one))
    for key, value in props.items():
        for i, p in enumerate(model.metadata_props):
            if p.key == key:
                if value is None:
                    del model.metadata_props[i]
                else:
                    p.value = value
                break
    out = tmp_path / name
    onnx.save(model, str(out))
    return out


def _manifest(aivm_files, **changes) -> str:
    model = onnx.load(str(aivm_files.one), load_external_data=False)
    raw = json.loads(next(p.value for p in model.metadata_props if p.key == "aivm_manifest"))
    raw.update(changes)
    return json.dumps(raw)


def _bad_files(aivm_files, tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """name -> (file, what the error must say)."""
    out: dict[str, tuple[Path, str]] = {}
    t = tmp_path / "truncated.aivmx"
    data = aivm_files.one.read_bytes()
    t.write_bytes(data[: len(data) // 2])
    out["truncated aivmx"] = (t, "truncated")
    t = tmp_path / "truncated.aivm"
    data = aivm_files.aivm.read_bytes()
    t.write_bytes(data[: len(data) - 1000])
    out["truncated aivm"] = (t, "truncated")
    c = tmp_path / "corrupted.aivmx"
    data = bytearray(aivm_files.one.read_bytes())
    data[:16] = b"\xff" * 16
    c.write_bytes(bytes(data))
    out["corrupted"] = (c, "not an ONNX file")
    cfg = dict(aivm_files.configs["one"])
    cfg = json.loads(json.dumps(cfg))
    cfg["data"]["use_jp_extra"] = False
    cfg["version"] = "2.5.0"
    spec = Spec("Old", [SpecSpeaker("x", 0, {"Neutral": 0})])
    out["not JP-Extra"] = (
        write_aivmx(
            aivm_files.graphs / "one.onnx", tmp_path / "old.aivmx", cfg, aivm_files.vectors, spec
        ),
        "model architecture 'Style-Bert-VITS2' is not supported",
    )
    out["manifest version"] = (
        _aivmx_with(
            aivm_files,
            tmp_path,
            "v2.aivmx",
            aivm_manifest=_manifest(aivm_files, manifest_version="2.0"),
        ),
        "unknown manifest version '2.0'",
    )
    out["no style vectors"] = (
        _aivmx_with(aivm_files, tmp_path, "nostyle.aivmx", aivm_style_vectors=None),
        "no aivm_style_vectors",
    )
    buf = io.BytesIO()
    np.save(buf, aivm_files.vectors[:2])
    out["style id past the vectors"] = (
        _aivmx_with(
            aivm_files,
            tmp_path,
            "short.aivmx",
            aivm_style_vectors=base64.b64encode(buf.getvalue()).decode(),
        ),
        "style 'Sad' of speaker 'つくよみ' has local_id 2, past the style vectors (2 rows)",
    )
    h = tmp_path / "huge.aivm"
    data = aivm_files.aivm.read_bytes()
    h.write_bytes(struct.pack("<Q", 300 * 1024 * 1024) + data[8:])
    out["header over the limit"] = (h, "over the 100 MiB limit")
    return out


def test_each_bad_file_is_one_clear_error_naming_it(aivm_files, tmp_path) -> None:
    for what, (path, reason) in _bad_files(aivm_files, tmp_path).items():
        with pytest.raises(AivmFileError) as err:
            read_metadata(path)
        assert str(err.value).startswith(f"{path}: "), what
        assert reason in str(err.value), (what, str(err.value))


def test_a_graph_corrupted_inside_is_named_when_loaded(aivm_files, tmp_path) -> None:
    model = onnx.load(str(aivm_files.one))
    del model.graph.input[-1]  # AivisSpeech's last scalar gone: not the graph it binds
    bad = tmp_path / "ten-inputs.aivmx"
    onnx.save(model, str(bad))
    with pytest.raises(AivmFileError, match=r"ten-inputs.aivmx: the graph takes 10 inputs"):
        _load("bad", bad, tmp_path)


def test_a_multi_speaker_file_needs_a_speaker(aivm_files, tmp_path) -> None:
    with pytest.raises(AivmFileError, match="the model has 2 speakers; name one: Alice"):
        _load("duo", aivm_files.multi, tmp_path)
