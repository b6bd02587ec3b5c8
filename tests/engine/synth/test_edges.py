"""`engine.synth.edges`: the silence rule and `SentenceEdges`, the one trim/pad policy of a
sentence's ends, exact to the sample: alone, and through `WindowedSentence` at window
edges (a stand-in decoder whose audio is one constant per latent frame)."""

from __future__ import annotations

import numpy as np

from engine.synth.common import Latent, NoiseSource, SynthInputs, SynthOutput, SynthParams
from engine.synth.edges import SentenceEdges, silent_edges, silent_run
from engine.synth.windowed import WindowedSentence, WindowPlan

SR = 10_000  # 10 ms = 100 samples = one latent frame of the stand-in decoder
HOP = 100


def test_silent_edges_and_silent_run_count_whole_windows() -> None:
    audio = np.zeros(250, np.float32)
    audio[:50] = 1.0
    # windows from the start: [0, 100) loud, then [100, 200) and [200, 250) silent
    assert silent_edges(audio, SR) == (0, 150)
    # from the end the windows are [150, 250) and [50, 150) silent, [-50, 50) loud
    assert silent_run(audio, SR, 1.0, from_end=True) == 200
    assert silent_run(audio[::-1], SR, 1.0, from_end=False) == 200
    assert silent_run(audio, SR, 0.0, from_end=False) == 250  # no peak: all silent
    quiet = np.full(300, 0.019, np.float32)  # below 2 % of the peak given
    assert silent_run(quiet, SR, 1.0, from_end=True) == 300
    assert silent_run(np.zeros(0, np.float32), SR, 1.0, from_end=True) == 0


def test_sentence_edges_cut_keep_the_margin_and_pad_the_first_piece() -> None:
    edges = SentenceEdges(trim_lead=True, trim_trail=True, margin=100, lead_in=30)
    assert (edges.lead_cut(300), edges.trail_cut(99), edges.trail_cut(100)) == (200, 0, 0)
    assert edges.trail_cut(101) == 1
    untrimmed = SentenceEdges(margin=100, lead_in=30)
    assert (untrimmed.lead_cut(1000), untrimmed.trail_cut(1000)) == (0, 0)
    audio = np.arange(1, 11, dtype=np.float32)
    first = edges.piece(audio, 2, 3, first=True)
    assert first.dtype == np.float32
    np.testing.assert_array_equal(first, np.r_[np.zeros(30, np.float32), audio[2:7]])
    np.testing.assert_array_equal(edges.piece(audio, 0, 0, first=False), audio)
    np.testing.assert_array_equal(SentenceEdges().piece(audio, 0, 0, first=True), audio)


class FrameDecoder:
    """A split synthesizer whose audio is `frames[k]` for the 100 samples of frame k."""

    kind = "stand-in"
    hop_length = HOP
    sample_rate = SR
    precision = "fp32"
    runtime = "onnxruntime"
    context = (0, 0)

    def __init__(self, frames: list[float]) -> None:
        self.frames = np.asarray(frames, np.float32)

    def latent(self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource) -> Latent:
        return Latent(self.frames.reshape(1, 1, -1).copy(), None, None)

    def decode(self, latent: Latent, z: np.ndarray) -> np.ndarray:
        return np.repeat(z[0, 0], HOP).astype(np.float32)

    def synthesize(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> SynthOutput:
        lat = self.latent(inputs, params, noise)
        return SynthOutput(self.decode(lat, lat.z), None)

    def predict_durations(self, *args: object) -> None:
        return None

    def release_memory(self) -> None:
        pass


PLAN = WindowPlan(first=4, growth=2.0, largest=64, min_tail=1, adaptive=False)


def _windowed(
    frames: list[float], edges: SentenceEdges
) -> tuple[list[np.ndarray], WindowedSentence]:
    win = WindowedSentence(
        FrameDecoder(frames), None, None, None, PLAN, sample_rate=SR,  # type: ignore[arg-type]
        trim_lead=edges.trim_lead, trim_trail=edges.trim_trail, margin=edges.margin,
        lead_in=edges.lead_in,
    )  # fmt: skip
    return [p for p, _ in win.pieces()], win


def test_windows_cut_lead_in_the_first_window_and_trail_in_the_last() -> None:
    frames = [0, 0, 0] + [1] * 10 + [0, 0]  # windows [0, 4), [4, 12), [12, 15)
    edges = SentenceEdges(trim_lead=True, trim_trail=True, margin=100, lead_in=600)
    pieces, win = _windowed(frames, edges)
    assert win.windows == [(0, 4), (4, 12), (12, 15)]
    # 600 of pause, then 300 silent samples less the 100 kept; 1 loud frame
    assert [len(p) for p in pieces] == [600 + 100 + 100, 800, 100 + 100]
    np.testing.assert_array_equal(pieces[0][:700], np.zeros(700, np.float32))
    assert (pieces[0][700:] == 1).all() and (pieces[2][:100] == 1).all()
    assert (win.trail, win.trail_cut) == (200, 100)
    # the same policy on the whole sentence at once gives the same samples here
    audio = np.repeat(np.asarray(frames, np.float32), HOP)
    lead, trail = silent_edges(audio, SR)
    whole = edges.piece(audio, edges.lead_cut(lead), edges.trail_cut(trail), first=True)
    np.testing.assert_array_equal(np.concatenate(pieces), whole)


def test_a_silent_first_window_is_cut_to_the_margin_and_the_next_is_kept() -> None:
    """Leading silence is measured in the first window only: silence running past its
    edge stays in the second window (the whole sentence would lose it)."""
    frames = [0] * 6 + [1] * 4 + [0, 0]  # windows [0, 4), [4, 12)
    edges = SentenceEdges(trim_lead=True, trim_trail=True, margin=100)
    pieces, win = _windowed(frames, edges)
    assert win.windows == [(0, 4), (4, 12)]
    assert [len(p) for p in pieces] == [100, 200 + 400 + 100]
    audio = np.repeat(np.asarray(frames, np.float32), HOP)
    lead, trail = silent_edges(audio, SR)
    assert (lead, trail) == (600, 200)
    assert len(edges.piece(audio, edges.lead_cut(lead), edges.trail_cut(trail), True)) == 600


def test_untrimmed_windows_keep_every_sample_and_still_measure_the_trail() -> None:
    frames = [0, 1, 1, 1, 1, 1, 0, 0, 0, 0]  # windows [0, 4), [4, 10)
    pieces, win = _windowed(frames, SentenceEdges(margin=100, lead_in=250))
    assert [len(p) for p in pieces] == [250 + 400, 600]
    assert (win.trail, win.trail_cut) == (400, 0)
