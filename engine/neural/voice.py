"""`NeuralVoice`: a Style-Bert-VITS2 JP-Extra voice behind the `engine.voice_backend.Voice` seam.

Per request: every sentence goes through the frontend (`engine.text.analyze(...)
.with_blanks()`), BERT (`bert.features`, batched: the first sentence alone so its audio
comes early, then the rest in one call), and the synthesizer backend (ONNX Runtime or
PyTorch). One `AudioPiece` per sentence, or, with a backend that can decode in windows
(`latent`/`decode`), several per sentence: the first ready after one small decoder window
(`engine.synth.windowed`).

Pauses between sentences follow hayakoe's rule, taken from the durations the synthesizer
predicted for the sentence itself (no extra BERT pass over the whole text): the frames of
the sentence-final punctuation phones (`.`, `!`, `?`, `…`) and the blanks around them, times
hop/sample_rate, at least 0.08 s; silence the sentence already ends with is counted. With
`options.sentence_silence` set, every sentence is trimmed and exactly that much silence goes
between them. Silence at the very start and end of the request is trimmed. One render call,
its decoding strategies (nothing to say, whole, windows) and their one trim/pad policy:
`engine.neural.render`. A pitch or intonation change (`pitch_scale`, `intonation_scale`
not 1) is made on each sentence after synthesis with WORLD, as hayakoe makes it
(`engine.neural.world`); phoneme timings (`with_timing`) come from the durations the
synthesizer used (`engine.neural.timings`).

`silent_edges` (`engine.synth.edges`), `MIN_PAUSE_S` and `boundary_frames`
(`engine.neural.render`) are named here too, where the pauses are described.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..bert.features import BertBackend
from ..errors import EngineError
from ..int8.measure import Verdict
from ..options import DEFAULT_FIRST_WINDOW
from ..synth.common import SynthBackend, SynthParams
from ..synth.edges import silent_edges as silent_edges
from ..synth.pinned import pin
from ..synth.windowed import StreamingPlans
from ..voice_backend import AudioPiece, ListenerView, RunInfo, SynthesisOptions, VoiceIdentity
from ..voice_config import VoiceConfig, load_config
from .render import MIN_PAUSE_S as MIN_PAUSE_S
from .render import RenderCall, RenderSetup, SentenceRequest
from .render import boundary_frames as boundary_frames
from .world import check_scales

if TYPE_CHECKING:
    from ..int8.plan import PrecisionChoice
    from ..text.analysis import Analysis

_LOGGER = logging.getLogger(__name__)


class VoiceOptionError(EngineError, ValueError):
    """A synthesis option this voice cannot honour."""


def load_style_vectors(path: Path) -> np.ndarray:
    """`style_vectors.npy` as float32 [num_styles, 256] (error names the file)."""
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read style vectors ({exc})") from exc
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ValueError(f"{path}: expected a [num_styles, dim] array, got shape {list(arr.shape)}")
    vectors: np.ndarray = arr.astype(np.float32)
    return vectors


def style_vector(vectors: np.ndarray, index: int, weight: float) -> np.ndarray:
    """hayakoe's style vector: mean + (row - mean) · weight, with row 0 as the mean."""
    mean = vectors[0]
    vec: np.ndarray = (mean + (vectors[index] - mean) * np.float32(weight)).astype(np.float32)
    return vec


class NeuralVoice:
    """Frontend + BERT + synthesizer for one JP-Extra voice (see the module doc)."""

    def __init__(
        self,
        name: str,
        config: VoiceConfig,
        style_vectors: np.ndarray,
        synth: SynthBackend,
        bert: BertBackend,
        *,
        source: str = "",
        first_window: int = DEFAULT_FIRST_WINDOW,
        overlap: bool = True,
        speaker_id: int | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.style_vectors = style_vectors
        self.speaker_id = speaker_id
        """The speaker of a multi-speaker model this voice always speaks as (None: the
        request's): `synth` is pinned to it (`engine.synth.pinned`), now and at `use`."""
        self.synth = pin(synth, speaker_id)
        self.bert = bert
        self.sample_rate = config.sample_rate
        self.version: str | None = config.version
        self.sentence_pause: float | None = None  # Speaker's default between delta batches
        style2id = config.data.style2id
        bad = {k: v for k, v in style2id.items() if not 0 <= v < len(style_vectors)}
        if bad:
            raise ValueError(
                f"voice {name}: style2id {bad} points past style_vectors.npy "
                f"({len(style_vectors)} rows)"
            )
        self._style2id = dict(style2id)
        self.styles = [n for n, _ in sorted(style2id.items(), key=lambda kv: kv[1])]
        self.n_speakers = max(1, config.data.n_speakers)
        self.description = f"Style-Bert-VITS2 JP-Extra voice {name} ({synth.kind})"
        self.attribution_name = "Style-Bert-VITS2"
        self.attribution_url = "https://github.com/litagin02/Style-Bert-VITS2"
        self.default_style: str | None = None
        """The style a request that names none gets (None: Neutral, else the first)."""
        self.license: str | None = None
        """The voice file's license text (AivisHub files say what the creators allow)."""
        self.creators: tuple[str, ...] = ()
        self.source = source
        self.speaker_uuid: str | None = None
        """The AivisHub speaker it is (None: not from an AivisHub file)."""
        self.local_style_ids: dict[str, int] = {}
        """Style name → the AivisHub file's local style ID (empty: not from such a file)."""
        self.window_plans: StreamingPlans | None = StreamingPlans.for_first_window(first_window)
        """Sub-sentence streaming plans (None: one piece per sentence)."""
        self.overlap = overlap
        """Prepare the next sentence on a background thread while one is decoded
        (`EngineOptions.overlap`, see `render`)."""
        self.precision_choice: PrecisionChoice | None = None
        """The int8 plan's choice it runs (`engine.int8.plan.PrecisionChoice`; set by the
        builder and by a switch): the reason and the measurement behind `runs`."""

    def use(self, synth: SynthBackend, choice: PrecisionChoice) -> None:
        """Speak through `synth` (its model's, shared with the model's other speakers),
        which runs `choice`, from the next request on: call between requests
        (`engine.int8.background` switches at a request boundary)."""
        self.synth = pin(synth, self.speaker_id)
        self.precision_choice = choice

    def run_info(self) -> RunInfo:
        """What it runs now (`Voice.run_info`)."""
        return RunInfo(self.precision, self.runtime, self.runs, self.precision_reason)

    def identity(self) -> VoiceIdentity:
        """Where it comes from and who it is (`Voice.identity`), as its builder set it."""
        return VoiceIdentity(
            source=self.source,
            aivm=self.speaker_uuid is not None,
            speaker_uuid=self.speaker_uuid,
            style_ids=dict(self.local_style_ids),
            license=self.license,
            creators=self.creators,
        )

    @property
    def precision(self) -> str:
        """ "int8", "fp32" (or, chosen by measurement on OpenVINO, "bf16" / "fp16"): the
        synthesizer's arithmetic now (it may be switched once, between requests, by
        `engine.int8.background`)."""
        return self.synth.precision

    @property
    def runtime(self) -> str:
        """What runs the synthesizer: "onnxruntime", "openvino" or "pytorch"."""
        return self.synth.runtime

    @property
    def precision_reason(self) -> str:
        """Why it runs what it runs: the plan's reason (gate figures; with `auto`, the
        measured time of every candidate)."""
        choice = self.precision_choice
        return choice.reason if choice is not None else ""

    @property
    def runs(self) -> str:
        """What it runs, in a few words: "int8", "int8 on OpenVINO", with the measured
        ratio where a measurement chose it ("int8 on OpenVINO, 0.43× fp32's time here")."""
        text = self.precision
        if self.runtime == "openvino":
            text += " on OpenVINO"
        choice = self.precision_choice
        measurement = choice.measurement if choice is not None else None
        if measurement is not None and measurement.chosen is not None:
            trial = measurement.trial(measurement.chosen)
            if trial is not None and trial.gate != Verdict.REFERENCE and trial.ratio is not None:
                text += f", {trial.ratio:.2f}× fp32's time here (measured)"
            else:
                text += ", fastest measured here"
        return text

    @classmethod
    def from_files(
        cls,
        name: str,
        config_path: Path,
        style_path: Path,
        synth: SynthBackend,
        bert: BertBackend,
        *,
        source: str = "",
        first_window: int = DEFAULT_FIRST_WINDOW,
        overlap: bool = True,
    ) -> NeuralVoice:
        return cls(
            name,
            load_config(config_path),
            load_style_vectors(style_path),
            synth,
            bert,
            source=source,
            first_window=first_window,
            overlap=overlap,
        )

    # -- options ---------------------------------------------------------------------
    def _check(self, options: SynthesisOptions) -> tuple[np.ndarray, SynthParams]:
        if options.style not in self._style2id:
            raise VoiceOptionError(
                f"voice {self.name!r} has no style {options.style!r}; available: "
                f"{', '.join(self.styles)}"
            )
        if options.speed <= 0:
            raise VoiceOptionError(f"speed must be positive, got {options.speed}")
        scales = check_scales(options.pitch_scale, options.intonation_scale)
        if scales is not None:  # applied after synthesis with WORLD (`engine.neural.world`)
            raise VoiceOptionError(scales)
        if not 0 <= options.speaker_id < self.n_speakers:
            raise VoiceOptionError(
                f"speaker_id {options.speaker_id} out of range: voice {self.name!r} has "
                f"{self.n_speakers} speaker(s)"
            )
        if not 0.0 <= options.sdp_ratio <= 1.0:
            raise VoiceOptionError(f"sdp_ratio must be within [0, 1], got {options.sdp_ratio}")
        vec = style_vector(self.style_vectors, self._style2id[options.style], options.style_weight)
        params = SynthParams(
            noise_scale=float(options.noise),
            length_scale=1.0 / float(options.speed),
            noise_scale_w=float(options.noise_w),
            sdp_ratio=float(options.sdp_ratio),
        )
        return vec, params

    # -- rendering -------------------------------------------------------------------
    def _analyses(self, sentences: Sequence[str]) -> list[Analysis]:
        from ..text import analyze
        from ..text.from_phrases import PhrasedText, analysis_of_phrases

        return [
            (
                analysis_of_phrases(s.phrases) if isinstance(s, PhrasedText) else analyze(s)
            ).with_blanks()
            for s in sentences
        ]

    def render(
        self,
        sentences: Sequence[str],
        options: SynthesisOptions,
        listener: ListenerView | None = None,
    ) -> Generator[AudioPiece, None, None]:
        """Pieces per sentence (windows, or one), pauses at the start of following sentences
        (see module doc). Decoder windows are sized from `listener` (the request's, from
        `Speaker`; None: a caller that plays each piece as it comes, modelled here by a
        `Listener` of this call). With overlap on, once the first piece is ready the
        sentences after the current one are prepared (BERT, front graph) one ahead on a
        background thread (`engine.neural.overlap.Prefetch`), stopped when this generator
        is closed. The strategies and their one trim/pad policy: `engine.neural.render`."""
        style_vec, params = self._check(options)
        sentences = list(sentences)
        if not sentences:
            return
        setup = RenderSetup(
            name=self.name,
            synth=self.synth,  # this call's (a switch happens between requests)
            bert=self.bert,
            sample_rate=self.sample_rate,
            hop_length=self.config.hop_length,
            plans=self.window_plans,
            overlap=self.overlap,
        )
        request = SentenceRequest(options, style_vec, params)
        yield from RenderCall(setup, self._analyses(sentences), request, listener).pieces()
        self.synth.release_memory()  # idle from here: give decoder activation memory back
