"""Per-voice int8 graphs, calibrated on the voice's own latents and gated on fidelity.

About 80 % of a JP-Extra voice's CPU time is the HiFi-GAN decoder (44.1 kHz, ~54 GFLOP per
second of audio). Its convolutions run about twice as fast in int8 on ONNX Runtime's CPU
kernels. This module makes, for one ONNX voice:

1. **calibration latents**: the fp32 front graph (text encoder, durations, flow; cut at the
   decoder by `decoder_split`) run over the calibration sentences shipped in
   `data/calibration_ja.txt`, for every style of the voice, with a fixed seed → `z`, `g`
   (and the front graph's own inputs, for step 3);
2. **an int8 decoder**: ONNX Runtime's static QDQ quantization of the fp32 decoder graph
   (`QuantSettings`: which ops, per-channel int8 weights, uint8 activations, calibration
   method), calibrated on crops of those latents (a crop exercises the same activations as
   a whole sentence, at a fraction of the cost, and is what the windowed decoder runs);
3. **an int8 front graph** (`QuantSettings.front_ffn`): the same quantization applied to the
   flow's feed-forward convolutions only (`flow_ffn_nodes`), calibrated on the front graph's
   inputs of one sentence in every style. They are most of the front graph's time; the
   flow runs after the durations are fixed, so durations (and the audio's length) stay
   exactly those of fp32, while the text encoder and duration predictors stay fp32;
4. **a fidelity report** (`engine.synth.fidelity`): held-out sentences (`data/heldout_ja.txt`,
   never used for calibration), every style, the fp32 front and decoder against the int8
   ones, on the same inputs and noise.

The graphs and report live in one folder (`Int8Graphs`) with a stamp: a hash of the source
graph, the settings, the calibration texts and this format, so that a changed voice, recipe
or engine makes new ones and an old folder is never used by mistake.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .fidelity import FidelityReport, GateThresholds, SentenceFidelity, compare, judge

_LOGGER = logging.getLogger(__name__)

DATA = Path(__file__).resolve().parent / "data"
CALIBRATION_FILE = DATA / "calibration_ja.txt"
HELDOUT_FILE = DATA / "heldout_ja.txt"

FORMAT = 2
"""Bump when the recipe changes in a way the settings do not show: old graphs are remade."""

DECODER_FILE = "synthesizer.decoder.int8.onnx"
FRONT_FILE = "synthesizer.front.int8.onnx"
REPORT_FILE = "fidelity.json"
STAMP_FILE = "int8.stamp.json"

METHODS = ("minmax", "entropy", "percentile")


class QuantizeError(RuntimeError):
    """int8 graphs could not be made for a voice (names the voice and the cause)."""


@dataclass(frozen=True)
class QuantSettings:
    """How the int8 graphs are made (part of the stamp)."""

    method: str = "minmax"
    """Activation range calibration: "minmax", "entropy" or "percentile" (measured in
    docs/synthesizer.md; min-max was best and cheapest on the decoder)."""
    op_types: tuple[str, ...] = ("Conv", "ConvTranspose")
    """Operators given int8 kernels (the decoder is convolutions; adding Add/Mul/LeakyRelu
    only adds requantization steps)."""
    per_channel: bool = True
    """One weight scale per output channel (decoder weights differ a lot between channels)."""
    fp32_tail_stages: int = 1
    """Upsampling stages at the end of the decoder left in fp32 (their convolutions are
    narrow, so int8 gains little there, and their rounding reaches the audio directly):
    measured on the full-size voice, keeping the last stage in fp32 took the audible-band
    SNR from 13 to 26 dB and the log-mel distance from 1.2 to 0.3 dB for ~20 % of the
    speed-up (docs/synthesizer.md)."""
    crop_frames: int = 48
    """Latent frames per calibration crop (one crop per sentence and style)."""
    front_ffn: bool = True
    """Also quantize the flow's feed-forward convolutions in the front graph
    (`flow_ffn_nodes`). Measured on the full-size voice: the front graph ran in 0.54× the
    time, at 50 dB SNR of the audio against the fp32 front (the flow's attention
    convolutions as well: 0.52×, at 36 dB — not worth it; docs/synthesizer.md)."""
    percentile: float = 99.999
    """For method "percentile": the percentile of |activation| kept."""
    seed: int = 20260101
    """Noise seed of the calibration and held-out latents."""

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(
                f"quantization method must be one of {', '.join(METHODS)}, got {self.method!r}"
            )
        if self.crop_frames < 8:
            raise ValueError(f"crop_frames must be at least 8, got {self.crop_frames}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["op_types"] = list(self.op_types)
        return d


def read_sentences(path: Path) -> list[str]:
    """Non-empty, non-comment lines of a sentence file."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [s.strip() for s in lines if s.strip() and not s.lstrip().startswith("#")]


# --------------------------------------------------------------------------- latents ---


class FeatureSource(Protocol):
    """What `engine.bert` gives: BERT features per sentence."""

    def features(self, bert_texts: list[str], word2phs: list[list[int]]) -> list[np.ndarray]: ...


class LatentBackend(Protocol):
    """A synthesizer cut at the decoder (`SplitOnnxSynthesizer`)."""

    inter_channels: int
    hop_length: int
    sample_rate: int

    fp32_front_path: Path
    fp32_decoder_path: Path

    @property
    def prior_noise_input(self) -> str | None: ...

    def latent_and_feeds(
        self, inputs: Any, params: Any, noise: Any
    ) -> tuple[Any, dict[str, np.ndarray]]: ...

    def decode(self, latent: Any, z: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class VoiceSpec:
    """What calibration needs to know about a voice besides its graphs."""

    name: str
    style_vectors: np.ndarray
    """float32 [num_styles, 256] (row 0 the mean)."""
    styles: dict[str, int]
    """style name → row."""
    n_speakers: int = 1


@dataclass(frozen=True)
class SentenceLatent:
    sentence: str
    style: str
    z: np.ndarray
    g: np.ndarray | None
    feeds: dict[str, np.ndarray] | None = None
    """The front graph's inputs that gave `z` (when asked for)."""


def voice_latents(
    synth: LatentBackend,
    bert: FeatureSource,
    voice: VoiceSpec,
    sentences: Sequence[str],
    seed: int,
    progress: Callable[[int, int], None] | None = None,
    keep_feeds: Callable[[int, int], bool] | None = None,
) -> Iterator[SentenceLatent]:
    """The fp32 latent of every sentence in every style (speaker 0, default options, seed),
    with the front graph's inputs where `keep_feeds(style_index, sentence_index)` says."""
    from ..text import analyze
    from .common import NoiseSource, SynthInputs, SynthParams

    analyses = [analyze(s).with_blanks() for s in sentences]
    feats: list[np.ndarray] = []
    for a in analyses:  # one at a time: peak memory of a long batch is not worth it here
        feats.extend(bert.features([a.bert_text], [a.word2ph]))
    params = SynthParams()  # hayakoe's defaults (noise 0.6, noise_w 0.8, sdp_ratio 0.2)
    total = len(sentences) * len(voice.styles)
    done = 0
    for s, (style, row) in enumerate(sorted(voice.styles.items(), key=lambda kv: kv[1])):
        vec = voice.style_vectors[row].astype(np.float32)
        for i, (sentence, a, f) in enumerate(zip(sentences, analyses, feats, strict=True)):
            inputs = SynthInputs(
                np.asarray(a.phone_ids, np.int64),
                np.asarray(a.tone_ids, np.int64),
                np.asarray(a.lang_ids, np.int64),
                f,
                vec,
                0,
            )
            lat, feeds = synth.latent_and_feeds(inputs, params, NoiseSource(seed, i))
            keep = keep_feeds is not None and keep_feeds(s, i)
            yield SentenceLatent(sentence, style, lat.z, lat.g, feeds if keep else None)
            done += 1
            if progress is not None:
                progress(done, total)


def crop(z: np.ndarray, frames: int, key: str) -> np.ndarray:
    """A deterministic crop of at most `frames` latent frames (offset from `key`)."""
    n = z.shape[-1]
    if n <= frames:
        return z
    offset = int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16) % (n - frames + 1)
    return np.ascontiguousarray(z[..., offset : offset + frames])


# --------------------------------------------------------------------------- quantize ---


def _calibration_method(settings: QuantSettings) -> Any:
    from onnxruntime.quantization import CalibrationMethod

    return {
        "minmax": CalibrationMethod.MinMax,
        "entropy": CalibrationMethod.Entropy,
        "percentile": CalibrationMethod.Percentile,
    }[settings.method]


class _FeedReader:
    """A `CalibrationDataReader` over a list of feeds, read in ranges (ORT's strided
    calibration: one range per `collect_data`, so only one range's activations are held)."""

    def __init__(self, feeds: Sequence[dict[str, np.ndarray]]) -> None:
        self._feeds = list(feeds)
        self._it: Iterator[dict[str, np.ndarray]] = iter(self._feeds)

    def __len__(self) -> int:
        return len(self._feeds)

    def set_range(self, start_index: int, end_index: int) -> None:
        self._it = iter(self._feeds[start_index:end_index])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._it, None)


def quantize_decoder(
    fp32_decoder: Path,
    out: Path,
    feeds: Sequence[dict[str, np.ndarray]],
    settings: QuantSettings,
) -> None:
    """Write the int8 (QDQ) version of `fp32_decoder` to `out`, calibrated on `feeds`
    (the last `settings.fp32_tail_stages` upsampling stages stay fp32)."""
    _quantize_static(
        fp32_decoder,
        out,
        feeds,
        settings,
        exclude=tail_nodes(fp32_decoder, settings.fp32_tail_stages),
    )


def quantize_front(
    fp32_front: Path,
    out: Path,
    feeds: Sequence[dict[str, np.ndarray]],
    settings: QuantSettings,
    nodes: Sequence[str],
) -> None:
    """Write `fp32_front` with int8 `nodes` (`flow_ffn_nodes`) to `out`, calibrated on the
    front graph's inputs `feeds`."""
    if not nodes:
        raise QuantizeError(f"{fp32_front}: no nodes to quantize")
    _quantize_static(fp32_front, out, feeds, settings, include=nodes)


def flow_ffn_nodes(front: Path, prior_noise: str) -> list[str]:
    """The flow's feed-forward convolutions in the front graph: convolutions wider than one
    tap that depend on the prior's noise input `prior_noise` (the flow runs on the noisy
    prior; the text encoder and the duration predictors do not depend on it, and the
    flow's attention projections and couplings are one tap wide). Found by structure, not
    by names, which differ between exporters."""
    import onnx

    graph = onnx.load(str(front), load_external_data=False).graph
    widths = {init.name: int(init.dims[-1]) for init in graph.initializer if len(init.dims) >= 3}
    after = {prior_noise}
    names = []
    for node in graph.node:  # exported graphs list nodes in execution order
        if not any(i in after for i in node.input):
            continue
        after.update(node.output)
        if node.op_type == "Conv" and widths.get(node.input[1], 1) > 1:
            if not node.name:
                raise QuantizeError(f"{front}: unnamed convolutions in the flow")
            names.append(node.name)
    return names


def _quantize_static(
    source: Path,
    out: Path,
    feeds: Sequence[dict[str, np.ndarray]],
    settings: QuantSettings,
    *,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
) -> None:
    """ONNX Runtime's static QDQ quantization of `source` → `out` (`settings`; only the
    `include` nodes when given, never the `exclude` ones)."""
    import tempfile

    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(_FeedReader, CalibrationDataReader):  # ORT checks the base class
        pass

    if not feeds:
        raise QuantizeError(f"{source}: no calibration data")
    if settings.method == "minmax":  # running min/max, merged every few crops: bounded memory
        # (ORT refuses a count that divides the number of crops: "No data is collected")
        batch = next(n for n in range(4, 64) if len(feeds) % n)
        extra: dict[str, Any] = {"CalibMaxIntermediateOutputs": batch}
    else:  # histograms: one crop per collection step (crops may differ in length)
        extra = {"CalibStridedMinMax": 1}
    if settings.method == "percentile":
        extra["CalibPercentile"] = settings.percentile
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.partial")
    quiet = _QuietRootLogger()
    with (
        tempfile.TemporaryDirectory(prefix="int8-calib-", dir=out.parent) as scratch,
        quiet,
    ):
        # ORT writes its augmented model next to the working directory: keep it in scratch.
        cwd = os.getcwd()
        os.chdir(scratch)
        try:
            quantize_static(
                str(source),
                str(tmp),
                Reader(feeds),
                quant_format=QuantFormat.QDQ,
                op_types_to_quantize=list(settings.op_types),
                per_channel=settings.per_channel,
                nodes_to_quantize=list(include) if include is not None else None,
                nodes_to_exclude=list(exclude),
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
                calibrate_method=_calibration_method(settings),
                extra_options=extra,
            )
        finally:
            os.chdir(cwd)
    os.replace(tmp, out)


def tail_nodes(decoder: Path, stages: int) -> list[str]:
    """Names of the nodes from the `stages`-th last upsampling layer (ConvTranspose) to the
    end of the decoder graph (graph order is execution order in exported graphs)."""
    if stages <= 0:
        return []
    import onnx

    model = onnx.load(str(decoder), load_external_data=False)
    nodes = list(model.graph.node)
    ups = [i for i, n in enumerate(nodes) if n.op_type == "ConvTranspose"]
    if len(ups) < stages:
        raise QuantizeError(
            f"{decoder}: {len(ups)} upsampling layers, cannot keep {stages} in fp32"
        )
    names = [n.name for n in nodes[ups[-stages] :]]
    if not all(names):
        raise QuantizeError(f"{decoder}: unnamed nodes, cannot keep the last stages in fp32")
    return names


class _QuietRootLogger:
    """ONNX Runtime's quantizer logs every skipped tensor on the root logger: mute it."""

    def __enter__(self) -> None:
        self._root = logging.getLogger()
        self._level = self._root.level
        self._root.setLevel(max(self._level, logging.ERROR))

    def __exit__(self, *exc: object) -> None:
        self._root.setLevel(self._level)


# ------------------------------------------------------------------------- fidelity ---


def measure_fidelity(
    voice: str,
    latents: Iterable[SentenceLatent],
    decode_fp32: Callable[[SentenceLatent], np.ndarray],
    decode_int8: Callable[[SentenceLatent], np.ndarray],
    sample_rate: int,
    thresholds: GateThresholds | None = None,
    settings: dict[str, Any] | None = None,
) -> FidelityReport:
    """Decode each held-out latent both ways and judge the differences."""
    rows = []
    for lat in latents:
        ref = np.asarray(decode_fp32(lat), np.float32).reshape(-1)
        tst = np.asarray(decode_int8(lat), np.float32).reshape(-1)
        snr, logmel, mcd = compare(np.clip(ref, -1, 1), np.clip(tst, -1, 1), sample_rate)
        rows.append(
            SentenceFidelity(
                lat.sentence,
                lat.style,
                len(ref) / sample_rate,
                round(snr, 3),
                round(logmel, 4),
                round(mcd, 4),
            )
        )
    return judge(voice, rows, thresholds, settings)


# --------------------------------------------------------------------------- stamps ---


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _engine_version() -> str:
    from .. import __version__

    return str(__version__)


def calibration_digest() -> str:
    """SHA-256 of the calibration and held-out sentence files."""
    h = hashlib.sha256()
    for p in (CALIBRATION_FILE, HELDOUT_FILE):
        h.update(p.read_bytes())
    return h.hexdigest()


@dataclass(frozen=True)
class Int8Stamp:
    """What int8 graphs are made from (stored as `int8.stamp.json` beside them).

    Graphs match a voice when the recipe (settings, calibration texts, engine version,
    format) is the same and the source graph is: the same size and mtime as recorded (no
    hashing at start), else the same SHA-256 (a copied file)."""

    source_sha256: str
    """SHA-256 of the voice's `synthesizer.onnx`."""
    source_size: int
    source_mtime_ns: int
    settings: dict[str, Any]
    calibration_sha256: str
    engine: str
    format: int = FORMAT

    def recipe(self) -> dict[str, Any]:
        return {
            "settings": self.settings,
            "calibration_sha256": self.calibration_sha256,
            "engine": self.engine,
            "format": self.format,
        }


def stamp_for(source: Path, settings: QuantSettings) -> Int8Stamp:
    """The stamp of graphs made now from `source` with `settings` (hashes `source`)."""
    st = Path(source).stat()
    return Int8Stamp(
        file_sha256(Path(source)),
        st.st_size,
        st.st_mtime_ns,
        settings.to_dict(),
        calibration_digest(),
        _engine_version(),
    )


def stamp_matches(found: dict[str, Any], source: Path, settings: QuantSettings) -> bool:
    """Whether a stored stamp describes graphs of `source` made with today's recipe."""
    want = {
        "settings": settings.to_dict(),
        "calibration_sha256": calibration_digest(),
        "engine": _engine_version(),
        "format": FORMAT,
    }
    if {k: found.get(k) for k in want} != want:
        return False
    st = Path(source).stat()
    if found.get("source_size") == st.st_size and found.get("source_mtime_ns") == st.st_mtime_ns:
        return True
    return bool(
        found.get("source_size") == st.st_size
        and found.get("source_sha256") == file_sha256(Path(source))
    )


@dataclass(frozen=True)
class Int8Graphs:
    """One voice's int8 graphs and their report, in `directory`."""

    directory: Path
    report: FidelityReport

    @property
    def decoder(self) -> Path:
        return self.directory / DECODER_FILE

    @property
    def front(self) -> Path | None:
        """The int8 front graph (None when the recipe leaves the front in fp32)."""
        path = self.directory / FRONT_FILE
        return path if path.is_file() else None


def read_int8_dir(directory: Path, source: Path, settings: QuantSettings) -> Int8Graphs | None:
    """The int8 graphs in `directory` if its stamp matches `source` and `settings` (else
    None; graphs made from another source or recipe are ignored, with a log line)."""
    directory = Path(directory)
    try:
        found = json.loads((directory / STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or not (directory / DECODER_FILE).is_file():
        return None
    if not stamp_matches(found, source, settings):
        _LOGGER.info("Ignoring int8 graphs in %s: made from another source or recipe", directory)
        return None
    try:
        report = FidelityReport.load(directory / REPORT_FILE)
    except ValueError as exc:
        _LOGGER.warning("Ignoring int8 graphs in %s: %s", directory, exc)
        return None
    return Int8Graphs(directory, report)


# ---------------------------------------------------------------------------- make ---


def make_int8(
    synth: LatentBackend,
    fp32_decoder: Path,
    bert: FeatureSource,
    voice: VoiceSpec,
    out_dir: Path,
    stamp: Int8Stamp,
    *,
    settings: QuantSettings | None = None,
    thresholds: GateThresholds | None = None,
    calibration: Sequence[str] | None = None,
    heldout: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
    threads: int | None = None,
) -> Int8Graphs:
    """Calibrate, quantize and gate one voice; write everything to `out_dir` (replaced).

    `synth` is the voice's fp32 `SplitOnnxSynthesizer` (front graph for the latents, fp32
    decoder for the reference audio); `fp32_decoder` its decoder graph file. The front
    graph is quantized too when `settings.front_ffn` is on and it has a flow on the prior's
    noise (`flow_ffn_nodes`)."""
    import onnxruntime as ort

    from .onnx_backend import session_options

    settings = settings or QuantSettings()
    calibration = list(calibration if calibration is not None else read_sentences(CALIBRATION_FILE))
    heldout = list(heldout if heldout is not None else read_sentences(HELDOUT_FILE))
    say = progress or (lambda msg: _LOGGER.info("%s", msg))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / STAMP_FILE).unlink(missing_ok=True)  # incomplete until the stamp is written
    timings: dict[str, float] = {}

    t0 = time.perf_counter()
    last = [0.0]

    def tick(what: str) -> Callable[[int, int], None]:
        def show(done: int, total: int) -> None:
            now = time.perf_counter()
            if done == total or now - last[0] > 5.0:
                last[0] = now
                say(f"{voice.name}: {what} {done}/{total}")

        return show

    prior = synth.prior_noise_input
    front_nodes = (
        flow_ffn_nodes(synth.fp32_front_path, prior) if settings.front_ffn and prior else []
    )
    n_styles = max(1, len(voice.styles))

    def one_style_each(style: int, sentence: int) -> bool:  # each sentence once, styles cycled
        return sentence % n_styles == style

    feeds = []
    front_feeds = []
    for lat in voice_latents(
        synth,
        bert,
        voice,
        calibration,
        settings.seed,
        tick("calibration latents"),
        keep_feeds=one_style_each if front_nodes else None,
    ):
        feed = {"z": crop(lat.z, settings.crop_frames, f"{lat.style}|{lat.sentence}")}
        if lat.g is not None:
            feed["g"] = lat.g
        feeds.append(feed)
        if lat.feeds is not None:
            front_feeds.append(lat.feeds)
    timings["latents_s"] = time.perf_counter() - t0

    t1 = time.perf_counter()
    say(f"{voice.name}: quantizing the decoder ({settings.method}, {len(feeds)} crops)")
    quantize_decoder(Path(fp32_decoder), out_dir / DECODER_FILE, feeds, settings)
    del feeds
    (out_dir / FRONT_FILE).unlink(missing_ok=True)
    if front_nodes:
        say(
            f"{voice.name}: quantizing the flow's {len(front_nodes)} feed-forward convolutions "
            f"({len(front_feeds)} sentences)"
        )
        quantize_front(
            synth.fp32_front_path, out_dir / FRONT_FILE, front_feeds, settings, front_nodes
        )
    del front_feeds
    timings["quantize_s"] = time.perf_counter() - t1

    t2 = time.perf_counter()

    def session(path: Path) -> Any:
        return ort.InferenceSession(
            str(path), sess_options=session_options(threads), providers=["CPUExecutionProvider"]
        )

    sess = session(out_dir / DECODER_FILE)
    has_g = "g" in {i.name for i in sess.get_inputs()}
    front = session(out_dir / FRONT_FILE) if front_nodes else None
    front_outputs = [o.name for o in front.get_outputs()] if front is not None else []

    def int8(lat: SentenceLatent) -> np.ndarray:
        z, g = lat.z, lat.g
        if front is not None and lat.feeds is not None:
            outs = dict(zip(front_outputs, front.run(None, lat.feeds), strict=True))
            z, g = outs["z"], outs.get("g")
            if z.shape != lat.z.shape:
                raise QuantizeError(
                    f"{voice.name}: the int8 front graph gave {z.shape[-1]} latent frames for "
                    f"{lat.sentence!r} where fp32 gave {lat.z.shape[-1]} (durations changed)"
                )
        feeds: dict[str, Any] = {"z": z}
        if has_g:
            feeds["g"] = g
        return np.asarray(sess.run(None, feeds)[0]).reshape(-1)

    def fp32(lat: SentenceLatent) -> np.ndarray:
        return np.asarray(synth.decode(lat, lat.z)).reshape(-1)

    held = voice_latents(  # one sentence at a time: front inputs are ~1 MB each
        synth,
        bert,
        voice,
        heldout,
        settings.seed + 1,
        tick("held-out sentences"),
        keep_feeds=(lambda style, sentence: True) if front is not None else None,
    )
    report = measure_fidelity(
        voice.name,
        held,
        fp32,
        int8,
        synth.sample_rate,
        thresholds,
        settings={
            **settings.to_dict(),
            "int8_front_convolutions": len(front_nodes),
            "calibration_sentences": len(calibration),
            "styles": len(voice.styles),
            "ort": ort.__version__,
        },
    )
    timings["gate_s"] = time.perf_counter() - t2
    report.settings["timings_s"] = {k: round(v, 2) for k, v in timings.items()}
    report.save(out_dir / REPORT_FILE)
    tmp = out_dir / f".{STAMP_FILE}.partial"
    tmp.write_text(json.dumps(asdict(stamp), indent=2), encoding="utf-8")
    os.replace(tmp, out_dir / STAMP_FILE)
    say(report.summary())
    return Int8Graphs(out_dir, report)
