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
between them. Silence at the very start and end of the request is trimmed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..bert.features import BertBackend
from ..int8.measure import Verdict
from ..options import DEFAULT_FIRST_WINDOW
from ..pacing import Listener
from ..synth.common import (
    Latent,
    NoiseSource,
    SplitSynth,
    SynthBackend,
    SynthInputs,
    SynthOutput,
    SynthParams,
)
from ..synth.windowed import (
    DecodeSpeed,
    StreamingPlans,
    WindowedSentence,
    WindowPlan,
)
from ..voice_backend import AudioPiece, ListenerView, RunInfo, SynthesisOptions
from ..voice_config import VoiceConfig, load_config
from .overlap import Prefetch
from .progress import RenderProgress

if TYPE_CHECKING:
    from ..int8.plan import PrecisionChoice

_LOGGER = logging.getLogger(__name__)

MIN_PAUSE_S = 0.08
SILENCE_WINDOW_S = 0.01
SILENCE_RATIO = 0.02
EDGE_MARGIN_S = 0.01
BOUNDARY_PHONES = frozenset({".", "!", "?", "…"})


class VoiceOptionError(ValueError):
    """A synthesis option this voice cannot honour."""


def load_style_vectors(path: Path) -> np.ndarray:
    """`style_vectors.npy` as float32 [num_styles, 256] (error names the file)."""
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read style vectors ({exc})") from exc
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ValueError(f"{path}: expected a [num_styles, dim] array, got shape {list(arr.shape)}")
    return arr.astype(np.float32)


def style_vector(vectors: np.ndarray, index: int, weight: float) -> np.ndarray:
    """hayakoe's style vector: mean + (row - mean) · weight, with row 0 as the mean."""
    mean = vectors[0]
    return (mean + (vectors[index] - mean) * np.float32(weight)).astype(np.float32)


def silent_edges(audio: np.ndarray, sample_rate: int) -> tuple[int, int]:
    """(leading, trailing) silent samples, in whole 10 ms windows below 2 % of the peak."""
    n = len(audio)
    if n == 0:
        return 0, 0
    peak = float(np.abs(audio).max())
    if peak == 0.0:
        return n, n
    win = max(1, round(SILENCE_WINDOW_S * sample_rate))
    n_win = (n + win - 1) // win
    padded = np.zeros(n_win * win, np.float32)
    padded[:n] = np.abs(audio)
    loud = padded.reshape(n_win, win).max(axis=1) >= SILENCE_RATIO * peak
    first = int(np.argmax(loud))
    last = n_win - 1 - int(np.argmax(loud[::-1]))
    return min(first * win, n), max(0, n - (last + 1) * win)


def boundary_frames(phones: Sequence[str], durations: np.ndarray) -> int:
    """Frames of the sentence-final punctuation run and its adjacent blanks.

    `phones` are the analysis phones (with the `_` pads at both ends, no blanks);
    `durations` are per blank-interspersed id (phone j sits at 2j+1)."""
    j = len(phones) - 1
    while j >= 0 and phones[j] == "_":
        j -= 1
    end = j
    while j >= 0 and phones[j] in BOUNDARY_PHONES:
        j -= 1
    if end == j:
        return 0
    lo, hi = 2 * (j + 1), 2 * end + 2  # blank before the run .. blank after it
    hi = min(hi, len(durations) - 1)
    return int(np.asarray(durations)[lo : hi + 1].sum())


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
    ) -> None:
        self.name = name
        self.config = config
        self.style_vectors = style_vectors
        self.synth = synth
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
        self.window_plans: StreamingPlans | None = StreamingPlans.for_first_window(first_window)
        """Sub-sentence streaming plans (None: one piece per sentence)."""
        self.overlap = overlap
        """Prepare the next sentence on a background thread while one is decoded
        (`EngineOptions.overlap`, see `render`)."""
        self.precision_choice: PrecisionChoice | None = None
        """The int8 plan's choice it runs (`engine.int8.plan.PrecisionChoice`; set by the
        builder and by a switch): the reason and the measurement behind `runs`."""

    def run_info(self) -> RunInfo:
        """What it runs now (`Voice.run_info`)."""
        return RunInfo(self.precision, self.runtime, self.runs, self.precision_reason)

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
        if measurement is not None:
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
        if options.pitch_scale != 1.0 or options.intonation_scale != 1.0:
            raise VoiceOptionError(
                "pitch_scale and intonation_scale other than 1.0 are not supported by this "
                "engine (hayakoe implements them with a pyworld resynthesis)"
            )
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
    def _window_plan(
        self, options: SynthesisOptions, started: bool, split: SplitSynth | None
    ) -> WindowPlan | None:
        """Decoder windows for the next sentence, or None for whole-sentence decoding
        (`split`, the render's synthesizer as a `SplitSynth`, is None; windows turned off;
        or a caller that wants the whole text at once: `options.whole_sentences`)."""
        plans = self.window_plans
        if plans is None or options.whole_sentences or split is None:
            return None
        return plans.later if started else plans.first

    def _analyses(self, sentences: Sequence[str]) -> list[Any]:
        from ..text import analyze

        return [analyze(s).with_blanks() for s in sentences]

    def _features(self, analyses: list[Any]) -> Iterator[np.ndarray | None]:
        """BERT features per sentence (None for sentences with nothing to say)."""
        speech = [i for i, a in enumerate(analyses) if _has_speech(a)]
        batches = [speech[:1], speech[1:]]
        feats: dict[int, np.ndarray] = {}
        for i in range(len(analyses)):
            if i in speech and i not in feats:
                batch = next(b for b in batches if i in b)
                out = self.bert.features(
                    [analyses[k].bert_text for k in batch], [analyses[k].word2ph for k in batch]
                )
                feats.update(zip(batch, out))
            yield feats.pop(i, None)

    def _overlaps(self, n_sentences: int) -> bool:
        """Whether this render runs the next sentence's BERT and front graph on a
        background thread (`EngineOptions.overlap`): only with more than one sentence and
        an ONNX Runtime backend cut at the decoder (`latent`/`decode`), whose output is the
        same either way."""
        return (
            self.overlap
            and n_sentences > 1
            and isinstance(self.synth, SplitSynth)
            and self.synth.kind == "onnx"
        )

    def render(
        self,
        sentences: Sequence[str],
        options: SynthesisOptions,
        listener: ListenerView | None = None,
    ) -> Iterator[AudioPiece]:
        """Pieces per sentence (windows, or one), pauses at the start of following sentences
        (see module doc). Decoder windows are sized from `listener` (the request's, from
        `Speaker`; None: a caller that plays each piece as it comes, modelled here by a
        `Listener` of this call). With overlap on (`_overlaps`), once the first piece is
        ready the sentences after the current one are prepared (BERT, front graph) one ahead
        on a background thread (`engine.neural.overlap.Prefetch`), stopped when this
        generator is closed."""
        style_vec, params = self._check(options)
        sentences = list(sentences)
        if not sentences:
            return
        analyses = self._analyses(sentences)
        noise = NoiseSource(options.seed)
        features = self._features(analyses)
        # the synthesizer of this call (a switch happens between requests, never inside one)
        split = self.synth if isinstance(self.synth, SplitSynth) else None

        def prepare(i: int, front: bool) -> _Prepared:
            """Sentence `i`'s synthesizer inputs (None: nothing to say) and, with `front`,
            its latent. Called in sentence order (BERT batches come from `features`)."""
            feat = next(features)
            if feat is None:
                return _Prepared(None, None)
            analysis = analyses[i]
            inputs = SynthInputs(
                np.asarray(analysis.phone_ids, np.int64),
                np.asarray(analysis.tone_ids, np.int64),
                np.asarray(analysis.lang_ids, np.int64),
                feat,
                style_vec,
                options.speaker_id,
            )
            latent = None
            if front and split is not None:
                latent = split.latent(inputs, params, noise.for_sentence(i))
            return _Prepared(inputs, latent)

        overlap = self._overlaps(len(analyses))
        ahead: Prefetch[_Prepared] | None = None

        def start_ahead(i: int) -> None:
            """Before sentence `i`'s first piece goes out: prepare the rest in the background."""
            nonlocal ahead
            if overlap and ahead is None and i + 1 < len(analyses):
                ahead = Prefetch(
                    (prepare(j, True) for j in range(i + 1, len(analyses))),
                    ahead=1,
                    name=f"{self.name}-ahead",
                )

        sr = self.sample_rate
        fixed = options.sentence_silence
        pending_pause = 0.0  # seconds owed before the next audible sentence
        started = False
        last_speech = max((i for i, a in enumerate(analyses) if _has_speech(a)), default=-1)
        own = Listener() if listener is None else None  # plays what this call yields
        hears = listener if listener is not None else own
        speed = DecodeSpeed()  # the decoder's speed, from one sentence's windows to the next
        progress = RenderProgress(
            [len(a.phone_ids) if _has_speech(a) else 0 for a in analyses],
            self.config.hop_length / sr,
            MIN_PAUSE_S if fixed is None else max(0.0, float(fixed)),
        )
        try:
            for i, analysis in enumerate(analyses):
                sentence = ahead.take() if ahead is not None else prepare(i, False)
                inputs = sentence.inputs
                if inputs is None:
                    rest, tail = progress.after(
                        i, 0, 0, None, self._window_plan(options, started, split)
                    )
                    start_ahead(i)
                    yield AudioPiece(np.zeros(0, np.float32), i, True, rest, tail)
                    continue
                plan = self._window_plan(options, started, split)
                if plan is not None and split is not None:  # sub-sentence streaming (windowed)
                    win = WindowedSentence(
                        split,
                        inputs,
                        params,
                        noise.for_sentence(i),
                        plan,
                        sample_rate=sr,
                        trim_lead=fixed is not None or not started,
                        trim_trail=fixed is not None or i == last_speech,
                        margin=int(EDGE_MARGIN_S * sr),
                        lead_in=round(pending_pause * sr) if started and pending_pause > 0 else 0,
                        listener=hears,
                        speed=speed,
                        latent=sentence.latent,
                    )
                    later = self._window_plan(options, True, split)
                    for samples, final in win.pieces():
                        if own is not None:
                            own.hand_out(len(samples) / sr)
                        progress.predicted(i, win.frames)
                        last = win.windows[-1][1] - win.windows[-1][0]
                        rest, tail = progress.after(i, win.done, win.frames, (plan, last), later)
                        start_ahead(i)
                        yield AudioPiece(samples, i, final, rest, tail)
                    out = SynthOutput(np.zeros(0, np.float32), win.durations)
                    trail, cut_trail = win.trail, win.trail_cut
                    started = True
                else:
                    if sentence.latent is not None and split is not None:  # front done ahead
                        lat = sentence.latent
                        decoded = split.decode(lat, lat.z)
                        out = SynthOutput(np.asarray(decoded, np.float32), lat.durations)
                    else:
                        out = self.synth.synthesize(inputs, params, noise.for_sentence(i))
                    audio = np.clip(out.audio, -1.0, 1.0).astype(np.float32)
                    lead, trail = silent_edges(audio, sr)
                    margin = int(EDGE_MARGIN_S * sr)
                    cut_lead = lead if (fixed is not None or not started) else 0
                    cut_trail = trail if (fixed is not None or i == last_speech) else 0
                    cut_lead = max(0, cut_lead - margin)
                    cut_trail = max(0, cut_trail - margin)
                    body = audio[cut_lead : len(audio) - cut_trail]
                    if started and pending_pause > 0:
                        silence = np.zeros(round(pending_pause * sr), np.float32)
                        body = np.concatenate([silence, body])
                    progress.predicted(i, len(audio) // self.config.hop_length)
                    rest, tail = progress.after(i, 0, 0, None, None)
                    start_ahead(i)
                    yield AudioPiece(body, i, True, rest, tail)
                    started = True
                if fixed is not None:
                    pending_pause = max(0.0, float(fixed))
                else:
                    pause = MIN_PAUSE_S
                    if out.durations is not None:
                        frames = boundary_frames(analysis.phones, out.durations)
                        pause = max(MIN_PAUSE_S, frames * self.config.hop_length / sr)
                    pending_pause = max(0.0, pause - (trail - cut_trail) / sr)
        finally:
            if ahead is not None:
                ahead.close()  # stops the background thread (closed early, or an error)
        self.synth.release_memory()  # idle from here: give decoder activation memory back


@dataclass(frozen=True)
class _Prepared:
    """One sentence ready for the decoder: its synthesizer inputs (None: nothing to say)
    and, when prepared ahead, its latent (the front graph's output)."""

    inputs: SynthInputs | None
    latent: Latent | None


def _has_speech(analysis: Any) -> bool:
    """True when the analysis has a phone besides pads and punctuation."""
    return any(
        p not in ("_", "SP", "UNK") and p not in BOUNDARY_PHONES and p not in (",", "'", "-")
        for p in analysis.phones
    )
