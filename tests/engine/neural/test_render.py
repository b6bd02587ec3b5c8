"""`engine.neural.render`: one render call's strategies (nothing to say, whole, windows)
and their one trim/pad policy (`SentenceEnds`), exact to the sample, on a stand-in split
synthesizer whose audio is one constant per latent frame (100 samples at 10 kHz: one
silence window)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.neural.render import (
    MIN_PAUSE_S,
    RenderCall,
    RenderSetup,
    SentenceDone,
    SentenceEnds,
    SentenceRequest,
)
from engine.synth.common import Latent, NoiseSource, SynthInputs, SynthOutput, SynthParams
from engine.synth.windowed import StreamingPlans, WindowPlan
from engine.voice_backend import SynthesisOptions
from tests.helpers.voices import FakeBert

SR = 10_000
HOP = 100
MARGIN = 100  # EDGE_MARGIN_S at 10 kHz
PLAN = WindowPlan(first=4, growth=2.0, largest=64, min_tail=1, adaptive=False)


def test_sentence_ends_trim_the_request_ends_and_owe_the_pause() -> None:
    ends = SentenceEnds(SR, HOP, fixed=None, last_speech=2)
    first = ends.edges(0)
    assert (first.trim_lead, first.trim_trail, first.margin, first.lead_in) == (
        True, False, MARGIN, 0,
    )  # fmt: skip
    # "_ k a . _": the run "." sits at id 7, with blanks 6 and 8: 2 + 5 + 3 frames = 0.1 s
    durations = np.zeros(11, np.int64)
    durations[6:9] = [2, 5, 3]
    durations[5] = 40  # the phone before the run does not count
    ends.ended(["_", "k", "a", ".", "_"], SentenceDone(durations, trail=300, trail_cut=0))
    middle = ends.edges(1)
    # 0.1 s of pause less the 300 samples of silence the sentence already ends with
    assert (middle.trim_lead, middle.trim_trail, middle.lead_in) == (False, False, 700)
    # without durations: the least pause, less the silence kept (measured 300, cut 250)
    ends.ended(["_", "a", "_"], SentenceDone(None, trail=300, trail_cut=250))
    last = ends.edges(2)
    assert (last.trim_lead, last.trim_trail) == (False, True)
    assert last.lead_in == round(MIN_PAUSE_S * SR) - 50
    # a sentence ending in more silence than its pause: no lead-in at all
    ends.ended(["_", "a", "_"], SentenceDone(None, trail=5000, trail_cut=0))
    assert ends.edges(3).lead_in == 0


def test_sentence_ends_with_a_fixed_silence_trim_every_sentence() -> None:
    ends = SentenceEnds(SR, HOP, fixed=0.25, last_speech=1)
    assert ends.edges(0).trim_lead and ends.edges(0).trim_trail and ends.edges(0).lead_in == 0
    ends.ended(["_", "a", ".", "_"], SentenceDone(np.full(9, 50), trail=900, trail_cut=800))
    second = ends.edges(1)
    assert (second.trim_lead, second.trim_trail, second.lead_in) == (True, True, 2500)


# ---------------------------------------------------------------- through a render call ---


@dataclass
class Said:
    """The analysis fields a render call reads (a stand-in for `engine.text.Analysis`)."""

    pattern: int
    speech: bool = True
    phones: list[str] = field(default_factory=list)
    phone_ids: list[int] = field(default_factory=list)
    tone_ids: list[int] = field(default_factory=lambda: [0, 0, 0])
    lang_ids: list[int] = field(default_factory=lambda: [0, 0, 0])
    word2ph: list[int] = field(default_factory=lambda: [1, 1, 1])
    bert_text: str = "x"

    def __post_init__(self) -> None:
        self.phones = ["_", "a" if self.speech else "…", "_"]
        self.phone_ids = [0, self.pattern, 0]


class PatternSynth:
    """A split synthesizer: sentence k (its phone id) sounds `patterns[k]`, one value per
    frame of 100 samples; counts its calls."""

    kind = "onnx"
    hop_length = HOP
    sample_rate = SR
    precision = "fp32"
    runtime = "onnxruntime"
    context = (0, 0)

    def __init__(self, patterns: dict[int, list[float]]) -> None:
        self.patterns = patterns
        self.calls: list[str] = []

    def latent(self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource) -> Latent:
        self.calls.append("latent")
        frames = np.asarray(self.patterns[int(inputs.phone_ids[1])], np.float32)
        return Latent(frames.reshape(1, 1, -1), None, None)

    def decode(self, latent: Latent, z: np.ndarray) -> np.ndarray:
        return np.repeat(z[0, 0], HOP).astype(np.float32)

    def synthesize(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> SynthOutput:
        self.calls.append("synthesize")
        lat = self.latent(inputs, params, noise)
        return SynthOutput(self.decode(lat, lat.z), None)

    def predict_durations(self, *args: object) -> None:
        return None

    def release_memory(self) -> None:
        pass


PATTERNS = {
    1: [0, 0, 0] + [1] * 10 + [0, 0],  # lead 300, loud 1000, trail 200
    2: [0, 1, 1, 1, 1, 1, 0, 0, 0, 0],  # lead 100, loud 500, trail 400
}
SAID = [Said(1), Said(0, speech=False), Said(2)]


def _render(whole: bool, overlap: bool = False, **options: object) -> tuple[list, PatternSynth]:
    synth = PatternSynth(PATTERNS)
    setup = RenderSetup(
        name="stand-in",
        synth=synth,
        bert=FakeBert(hidden=4),
        sample_rate=SR,
        hop_length=HOP,
        plans=StreamingPlans(first=PLAN, later=PLAN),
        overlap=overlap,
    )
    opts = SynthesisOptions(seed=1, whole_sentences=whole, **options)  # type: ignore[arg-type]
    request = SentenceRequest(opts, np.zeros(256, np.float32), SynthParams())
    call = RenderCall(setup, SAID, request, None)  # type: ignore[arg-type]
    return list(call.pieces()), synth


def _expected() -> list[np.ndarray]:
    """The policy worked out by hand: the first audible sentence loses 300 - 100 leading
    samples; the empty one is empty; the last loses 400 - 100 trailing samples and starts
    with the pause: 0.08 s less the 200 silent samples the first one ends with."""
    first = np.r_[np.zeros(100), np.ones(1000), np.zeros(200)]
    last = np.r_[np.zeros(600), np.zeros(100), np.ones(500), np.zeros(100)]
    return [first.astype(np.float32), np.zeros(0, np.float32), last.astype(np.float32)]


def test_whole_sentences_follow_the_policy_to_the_sample() -> None:
    pieces, synth = _render(whole=True)
    assert [(p.sentence, p.final) for p in pieces] == [(0, True), (1, True), (2, True)]
    for got, want in zip(pieces, _expected(), strict=True):
        np.testing.assert_array_equal(got.samples, want)
    assert synth.calls == ["synthesize", "latent"] * 2  # one go each, no windows


def test_windows_follow_the_same_policy_at_their_edges() -> None:
    pieces, _ = _render(whole=False)
    # sentence 0: windows [0, 4), [4, 12), [12, 15); sentence 2: [0, 4), [4, 10)
    assert [(p.sentence, p.final, len(p.samples)) for p in pieces] == [
        (0, False, 200), (0, False, 800), (0, True, 300),
        (1, True, 0),
        (2, False, 600 + 400), (2, True, 300),
    ]  # fmt: skip
    by_sentence = [np.concatenate([p.samples for p in pieces if p.sentence == i]) for i in range(3)]
    for got, want in zip(by_sentence, _expected(), strict=True):
        np.testing.assert_array_equal(got, want)
    assert pieces[-1].remaining == 0.0


def test_the_latent_prepared_ahead_gives_the_same_samples() -> None:
    serial, _ = _render(whole=True)
    ahead, synth = _render(whole=True, overlap=True)
    assert synth.calls.count("synthesize") == 1  # sentence 2 decoded from its latent
    for a, b in zip(serial, ahead, strict=True):
        np.testing.assert_array_equal(a.samples, b.samples)


def test_a_fixed_silence_trims_every_sentence_and_pads_exactly() -> None:
    for whole in (True, False):
        pieces, _ = _render(whole=whole, sentence_silence=0.05)
        audio = [np.concatenate([p.samples for p in pieces if p.sentence == i]) for i in (0, 2)]
        assert [len(a) for a in audio] == [100 + 1000 + 100, 500 + 100 + 500 + 100]
        np.testing.assert_array_equal(audio[1][:600], np.zeros(600, np.float32))
