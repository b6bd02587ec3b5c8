"""One `NeuralVoice.render` call: its sentences prepared in order, each decoded by one of
three strategies, all of them following one trim/pad policy.

Preparing: the frontend's analyses come in, BERT runs batched (`features`: the first
sentence alone so its audio comes early, then the rest in one call), and each sentence
becomes synthesizer inputs (`Prepared`); with overlap on, the sentences after the current
one are prepared (BERT and the front graph, `latent`) one ahead on a background thread
(`engine.neural.overlap.Prefetch`) once its first piece is ready.

Strategies, picked per sentence by `RenderCall.pieces`:

- nothing to say: one empty piece (`RenderCall._nothing`);
- whole: one piece, from the synthesizer in one go, or from the split decoder on the latent
  prepared ahead (`RenderCall._whole`);
- windows: several pieces from the split decoder, window by window
  (`engine.synth.windowed.WindowedSentence`, `RenderCall._windowed`).

The policy (`SentenceEnds`): the request's first audible sentence loses its leading
silence, its last audible one its trailing silence (with `sentence_silence` set, every
sentence loses both), each keeping `EDGE_MARGIN_S`; the pause owed to the sentence before
goes in front of a sentence's first piece: hayakoe's rule, from the durations the
synthesizer predicted for that sentence (the frames of its final punctuation and the
blanks around it, at least `MIN_PAUSE_S`, less the silence it already ends with), or
exactly `sentence_silence`. Each strategy applies it through
`engine.synth.edges.SentenceEdges`.

Asked for (never otherwise, so the default path stays as it was): a pitch or intonation
change is applied to each whole sentence as the synthesizer made it, before its ends are
trimmed (`engine.neural.world`), and phoneme timings are read from the durations the
synthesizer used (`engine.neural.timings`); either makes every sentence decode whole (a
window of a sentence is not what WORLD or a phoneme's end can be measured on alone).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..bert.features import BertBackend
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
from ..synth.edges import SentenceEdges, silent_edges
from ..synth.windowed import DecodeSpeed, StreamingPlans, WindowedSentence, WindowPlan
from ..voice_backend import AudioPiece, ListenerView, SynthesisOptions
from .overlap import Prefetch
from .progress import RenderProgress
from .timings import phoneme_timings
from .world import reshape_pitch, reshapes

if TYPE_CHECKING:
    from ..text.analysis import Analysis

MIN_PAUSE_S = 0.08
"""The shortest pause between sentences (without `sentence_silence`)."""
EDGE_MARGIN_S = 0.01
"""Silence kept at a trimmed end."""
BOUNDARY_PHONES = frozenset({".", "!", "?", "…"})
"""The sentence-final punctuation phones whose frames make the pause after a sentence."""


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


def has_speech(analysis: Analysis) -> bool:
    """True when the analysis has a phone besides pads and punctuation."""
    return any(
        p not in ("_", "SP", "UNK") and p not in BOUNDARY_PHONES and p not in (",", "'", "-")
        for p in analysis.phones
    )


def features(bert: BertBackend, analyses: Sequence[Analysis]) -> Iterator[np.ndarray | None]:
    """BERT features per sentence (None for sentences with nothing to say): the first
    sentence with speech alone, the others in one batch when the first of them is asked."""
    speech = [i for i, a in enumerate(analyses) if has_speech(a)]
    batches = [speech[:1], speech[1:]]
    feats: dict[int, np.ndarray] = {}
    for i in range(len(analyses)):
        if i in speech and i not in feats:
            batch = next(b for b in batches if i in b)
            out = bert.features(
                [analyses[k].bert_text for k in batch], [analyses[k].word2ph for k in batch]
            )
            feats.update(zip(batch, out))
        yield feats.pop(i, None)


@dataclass(frozen=True)
class SentenceDone:
    """What the pause after a sentence is measured from: its durations (frames per phone
    id, None where the synthesizer does not say), the trailing silent samples measured and
    those cut."""

    durations: np.ndarray | None
    trail: int
    trail_cut: int


class SentenceEnds:
    """The one trim/pad policy of a render call (see the module doc): `edges(i)` before
    sentence `i` is decoded, `ended(...)` after an audible one. `fixed`: the request's
    `sentence_silence`; `last_speech`: the index of its last sentence with speech."""

    def __init__(
        self, sample_rate: int, hop_length: int, fixed: float | None, last_speech: int
    ) -> None:
        self.sample_rate = sample_rate
        self.hop_length = hop_length
        self.fixed = fixed
        self.last_speech = last_speech
        self.margin = int(EDGE_MARGIN_S * sample_rate)
        self.started = False
        """An audible sentence has been decoded."""
        self.pending_pause = 0.0
        """Seconds owed before the next audible sentence."""

    def edges(self, i: int) -> SentenceEdges:
        """Sentence `i`'s ends: trimmed at the request's ends (every sentence's with a fixed
        silence), after the pause owed."""
        every = self.fixed is not None
        pause = self.pending_pause
        return SentenceEdges(
            trim_lead=every or not self.started,
            trim_trail=every or i == self.last_speech,
            margin=self.margin,
            lead_in=round(pause * self.sample_rate) if self.started and pause > 0 else 0,
        )

    def ended(self, phones: Sequence[str], done: SentenceDone) -> None:
        """An audible sentence (analysis `phones`) was decoded: the pause owed after it."""
        self.started = True
        if self.fixed is not None:
            self.pending_pause = max(0.0, float(self.fixed))
            return
        sr = self.sample_rate
        pause = MIN_PAUSE_S
        if done.durations is not None:
            frames = boundary_frames(phones, done.durations)
            pause = max(MIN_PAUSE_S, frames * self.hop_length / sr)
        self.pending_pause = max(0.0, pause - (done.trail - done.trail_cut) / sr)


@dataclass(frozen=True)
class Prepared:
    """One sentence ready for the decoder: its synthesizer inputs (None: nothing to say)
    and, when prepared ahead, its latent (the front graph's output)."""

    inputs: SynthInputs | None
    latent: Latent | None


@dataclass(frozen=True)
class RenderSetup:
    """What a render call takes from its voice, fixed for the call (a switch of the
    synthesizer happens between requests, never inside one)."""

    name: str
    synth: SynthBackend
    bert: BertBackend
    sample_rate: int
    hop_length: int
    plans: StreamingPlans | None
    """Decoder windows (None: whole sentences only)."""
    overlap: bool
    """Prepare the next sentences on a background thread (`EngineOptions.overlap`)."""


@dataclass(frozen=True)
class SentenceRequest:
    """The request's part of a render call: its options and what they give the
    synthesizer (the style vector, the synthesis parameters)."""

    options: SynthesisOptions
    style: np.ndarray
    params: SynthParams


PieceGen = Generator[AudioPiece, None, SentenceDone]
"""A decoding strategy: pieces of one sentence, then what its pause is measured from."""


class RenderCall:
    """One render call's sentences (see the module doc); `pieces()` yields them.

    `listener`: the request's (None: a caller that plays each piece as it comes, modelled
    here by a `Listener` of this call)."""

    def __init__(
        self,
        setup: RenderSetup,
        analyses: Sequence[Analysis],
        request: SentenceRequest,
        listener: ListenerView | None,
    ) -> None:
        self.setup = setup
        self.analyses = list(analyses)
        self.request = request
        synth = setup.synth
        self.split = synth if isinstance(synth, SplitSynth) else None
        options = request.options
        self.reshape = reshapes(options)
        """A pitch or intonation change is asked (WORLD on each whole sentence)."""
        self.timed = options.with_timing
        """Phoneme timings are asked."""
        whole = options.whole_sentences or self.reshape or self.timed
        windows = not whole and self.split is not None
        self.plans = setup.plans if windows else None
        self.overlap = (
            setup.overlap
            and len(self.analyses) > 1
            and self.split is not None
            and synth.kind == "onnx"
        )
        """Whether the next sentences' BERT and front graph run on a background thread:
        only with more than one sentence and an ONNX Runtime backend cut at the decoder,
        whose output is the same either way."""
        self.noise = NoiseSource(request.options.seed)
        self.features = features(setup.bert, self.analyses)
        self.ahead: Prefetch[Prepared] | None = None
        speech = [has_speech(a) for a in self.analyses]
        last_speech = max((i for i, s in enumerate(speech) if s), default=-1)
        fixed = request.options.sentence_silence
        sr = setup.sample_rate
        self.ends = SentenceEnds(sr, setup.hop_length, fixed, last_speech)
        self.own = Listener() if listener is None else None  # plays what this call yields
        self.hears: ListenerView | None = listener if listener is not None else self.own
        self.speed = DecodeSpeed()  # the decoder's speed, from one sentence's windows to the next
        self.progress = RenderProgress(
            [len(a.phone_ids) if s else 0 for a, s in zip(self.analyses, speech, strict=True)],
            setup.hop_length / sr,
            MIN_PAUSE_S if fixed is None else max(0.0, float(fixed)),
        )

    def pieces(self) -> Iterator[AudioPiece]:
        """Every sentence's pieces, in order; closing stops the background thread."""
        try:
            for i, analysis in enumerate(self.analyses):
                sentence = self.ahead.take() if self.ahead is not None else self._prepare(i, False)
                inputs, latent = sentence.inputs, sentence.latent
                if inputs is None:
                    yield from self._nothing(i)
                    continue
                plan = self._plan(self.ends.started)
                edges = self.ends.edges(i)
                if plan is not None and self.split is not None:
                    done = yield from self._windowed(i, inputs, latent, edges, plan, self.split)
                else:
                    done = yield from self._whole(i, inputs, latent, edges)
                self.ends.ended(analysis.phones, done)
        finally:
            if self.ahead is not None:
                self.ahead.close()  # stops the background thread (closed early, or an error)

    # -- strategies --------------------------------------------------------------------
    def _nothing(self, i: int) -> Iterator[AudioPiece]:
        """A sentence with nothing to say: one empty piece."""
        rest, tail = self.progress.after(i, 0, 0, None, self._plan(self.ends.started))
        self._start_ahead(i)
        yield AudioPiece(np.zeros(0, np.float32), i, True, rest, tail, [] if self.timed else None)

    def _whole(
        self, i: int, inputs: SynthInputs, latent: Latent | None, edges: SentenceEdges
    ) -> PieceGen:
        """The sentence in one piece, its ends measured on the whole of it."""
        out = self._decode_whole(i, inputs, latent)
        raw = out.audio
        if self.reshape:
            opts = self.request.options
            raw = reshape_pitch(
                raw, self.setup.sample_rate, opts.pitch_scale, opts.intonation_scale
            )
        audio = np.clip(raw, -1.0, 1.0).astype(np.float32)
        lead, trail = silent_edges(audio, self.setup.sample_rate)
        trail_cut, lead_cut = edges.trail_cut(trail), edges.lead_cut(lead)
        body = edges.piece(audio, lead_cut, trail_cut, first=True)
        self.progress.predicted(i, len(audio) // self.setup.hop_length)
        rest, tail = self.progress.after(i, 0, 0, None, None)
        self._start_ahead(i)
        timings = None
        if self.timed:
            kept = (lead_cut, len(audio) - trail_cut)
            timings = phoneme_timings(
                inputs.phone_ids,
                out.durations,
                self.setup.hop_length,
                self.setup.sample_rate,
                kept,
                edges.lead_in,
            )
        yield AudioPiece(body, i, True, rest, tail, timings)
        return SentenceDone(out.durations, trail, trail_cut)

    def _decode_whole(self, i: int, inputs: SynthInputs, latent: Latent | None) -> SynthOutput:
        """The split decoder on the latent prepared ahead, else the synthesizer in one go."""
        split = self.split
        if latent is not None and split is not None:
            audio = split.decode(latent, latent.z)
            return SynthOutput(np.asarray(audio, np.float32), latent.durations)
        params = self.request.params
        return self.setup.synth.synthesize(inputs, params, self.noise.for_sentence(i))

    def _windowed(
        self,
        i: int,
        inputs: SynthInputs,
        latent: Latent | None,
        edges: SentenceEdges,
        plan: WindowPlan,
        split: SplitSynth,
    ) -> PieceGen:
        """The sentence window by window (`WindowedSentence`), sized from the listener."""
        sr = self.setup.sample_rate
        win = WindowedSentence(
            split,
            inputs,
            self.request.params,
            self.noise.for_sentence(i),
            plan,
            sample_rate=sr,
            trim_lead=edges.trim_lead,
            trim_trail=edges.trim_trail,
            margin=edges.margin,
            lead_in=edges.lead_in,
            listener=self.hears,
            speed=self.speed,
            latent=latent,
        )
        later = self._plan(True)
        for samples, final in win.pieces():
            if self.own is not None:
                self.own.hand_out(len(samples) / sr)
            self.progress.predicted(i, win.frames)
            last = win.windows[-1][1] - win.windows[-1][0]
            rest, tail = self.progress.after(i, win.done, win.frames, (plan, last), later)
            self._start_ahead(i)
            yield AudioPiece(samples, i, final, rest, tail)
        return SentenceDone(win.durations, win.trail, win.trail_cut)

    # -- preparing ---------------------------------------------------------------------
    def _plan(self, started: bool) -> WindowPlan | None:
        """Decoder windows for the next sentence (None: whole-sentence decoding)."""
        if self.plans is None:
            return None
        return self.plans.later if started else self.plans.first

    def _prepare(self, i: int, front: bool) -> Prepared:
        """Sentence `i`'s synthesizer inputs (None: nothing to say) and, with `front`, its
        latent. Called in sentence order (BERT batches come from `features`)."""
        feat = next(self.features)
        if feat is None:
            return Prepared(None, None)
        analysis, request = self.analyses[i], self.request
        inputs = SynthInputs(
            np.asarray(analysis.phone_ids, np.int64),
            np.asarray(analysis.tone_ids, np.int64),
            np.asarray(analysis.lang_ids, np.int64),
            feat,
            request.style,
            request.options.speaker_id,
        )
        latent = None
        if front and self.split is not None:
            latent = self.split.latent(inputs, request.params, self.noise.for_sentence(i))
        return Prepared(inputs, latent)

    def _start_ahead(self, i: int) -> None:
        """Before sentence `i`'s first piece goes out: prepare the rest in the background."""
        n = len(self.analyses)
        if self.overlap and self.ahead is None and i + 1 < n:
            self.ahead = Prefetch(
                (self._prepare(j, True) for j in range(i + 1, n)),
                ahead=1,
                name=f"{self.setup.name}-ahead",
            )
