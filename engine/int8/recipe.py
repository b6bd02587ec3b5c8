"""The int8 recipe: how a voice's int8 graphs are made, and the stamp that says so.

`QuantSettings` (calibration method, operators, per-channel and 7-bit weights, the decoder
stages left in fp32, crops, the flow's feed-forward convolutions), the shipped calibration and
held-out sentences (`data/`), the file names of one voice's int8 folder, and `Int8Stamp`:
a hash of the source graph, the settings, the sentences, the engine version and `FORMAT`,
so that a changed voice, recipe or engine makes new graphs and an old folder is never
used by mistake.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from ..json_types import JsonObject
from .kernels import int8_kernels_saturate

DATA = Path(__file__).resolve().parent / "data"
CALIBRATION_FILE = DATA / "calibration_ja.txt"
HELDOUT_FILE = DATA / "heldout_ja.txt"

FORMAT = 3
"""Bump when the recipe changes in a way the settings do not show: old graphs are remade."""

DECODER_FILE = "synthesizer.decoder.int8.onnx"
FRONT_FILE = "synthesizer.front.int8.onnx"
REPORT_FILE = "fidelity.json"
STAMP_FILE = "int8.stamp.json"

METHODS = ("minmax", "entropy", "percentile")


@dataclass(frozen=True)
class QuantSettings:
    """How the int8 graphs are made (part of the stamp)."""

    method: str = "minmax"
    """Activation range calibration: "minmax", "entropy" or "percentile" (measured in
    docs/synthesizer.md; min-max was best and cheapest on the decoder)."""
    op_types: tuple[str, ...] = ("Conv", "ConvTranspose", "Reshape", "Transpose")
    """Operators given int8 kernels: the convolutions, and the interleave of the polyphase
    upsampling layers (`upsample_as_conv`; data movement, so in uint8 it moves a quarter of
    the bytes and needs no Dequantize/Quantize around it)."""
    upsample_as_conv: bool = True
    """The decoder's upsampling layers (ConvTranspose, which has no int8 kernel in ONNX
    Runtime) rewritten as ordinary convolutions and an interleave before quantizing
    (`engine.synth.polyphase`: exact in fp32), so they run in int8 like the rest."""
    per_channel: bool = True
    """One weight scale per output channel (decoder weights differ a lot between channels)."""
    reduce_range: bool = field(default_factory=int8_kernels_saturate)
    """Weights in 7 bits instead of 8 (ONNX Runtime's `reduce_range`). By default where
    this CPU's int8 kernels saturate on full-range weights (x86 without VNNI,
    `engine.int8.kernels`); part of the stamp, so graphs made on another kind of CPU are
    made again rather than run saturated."""
    fp32_tail_stages: int = 1
    """Upsampling stages at the end of the decoder left in fp32 (their convolutions are
    narrow, so int8 gains little there, and their rounding reaches the audio directly):
    measured on the full-size voice, keeping the last stage in fp32 took the audible-band
    SNR from 13 to 26 dB and the log-mel distance from 1.2 to 0.3 dB for ~20 % of the
    speed-up (docs/synthesizer.md)."""
    tail_blocks: bool = True
    """In those fp32 stages, the residual blocks' convolutions in int8 all the same (their
    upsampling layer, the additions of the residual stream and conv_post stay fp32, where
    int8 rounding would reach the audio directly). Gated: see `fallback`."""
    int8_activations: bool = True
    """In the int8 stages, the LeakyRelus and the residual additions in int8 too (ONNX
    Runtime fuses them into QLinearLeakyRelu / QLinearAdd), so the activations stay uint8
    from one convolution to the next instead of a Dequantize, an fp32 operation and a
    Quantize between them. Gated: see `fallback`."""
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

    def decoder_op_types(self) -> tuple[str, ...]:
        """The operators quantized in the decoder (`op_types`, and with `int8_activations`
        the LeakyRelus and additions)."""
        extra = ("LeakyRelu", "Add") if self.int8_activations else ()
        return self.op_types + tuple(op for op in extra if op not in self.op_types)

    def fallback(self) -> QuantSettings | None:
        """The decoder recipe to make instead when this one fails the voice's gate: the last
        stage wholly fp32 and only the convolutions in int8 (what measured 25 dB SNR on
        the full-size voice where this one measured 17 dB); None when this is it."""
        if not (self.tail_blocks or self.int8_activations):
            return None
        return replace(self, tail_blocks=False, int8_activations=False)

    def describe(self) -> str:
        """The decoder recipe in words (the fidelity report's attempts)."""
        what = "convolutions, LeakyRelu and additions" if self.int8_activations else "convolutions"
        if self.fp32_tail_stages <= 0:
            return f"{what} in int8, every stage"
        tail = "its residual blocks' convolutions in int8" if self.tail_blocks else "wholly"
        return f"{what} in int8; the last {self.fp32_tail_stages} stage(s) fp32, {tail}"

    def to_dict(self) -> JsonObject:
        d = asdict(self)
        d["op_types"] = list(self.op_types)
        return d


def read_sentences(path: Path) -> list[str]:
    """Non-empty, non-comment lines of a sentence file."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [s.strip() for s in lines if s.strip() and not s.lstrip().startswith("#")]


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
    settings: JsonObject
    calibration_sha256: str
    engine: str
    format: int = FORMAT

    def recipe(self) -> JsonObject:
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


def stamp_matches(found: JsonObject, source: Path, settings: QuantSettings) -> bool:
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
