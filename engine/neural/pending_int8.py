"""`PendingInt8`: a voice served in fp32 whose int8 graphs are still to be made.

When `EngineOptions.quantize_in_background` is on and a voice's int8 graphs must be made
first, the loader does not wait for them (`engine.synth.precision.choose_precision` with
`defer`): it loads the voice on its fp32 graphs and hands one of these to the caller, who
makes the graphs later (`engine.background_int8`) in four steps, each its own call so the
caller decides on which thread, at which priority and with which lock held:

1. `make`: calibrate, quantize and gate (`engine.synth.quantize.make_int8`, into the cache
   folder the loader looks in, so the next start finds them), on a separate fp32
   synthesizer with few threads;
2. `choose`: int8 or fp32 by the fidelity gate (`engine.synth.precision.verdict`);
3. `build`: the int8 synthesizer the voice will serve with;
4. `install`: the voice switches to it (call it between requests).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..synth.common import SynthBackend
from ..synth.fidelity import GateThresholds
from ..synth.precision import PrecisionChoice, verdict
from ..synth.quantize import (
    FeatureSource,
    Int8Graphs,
    LatentBackend,
    QuantSettings,
    VoiceSpec,
    make_int8,
    stamp_for,
)

__all__ = ["PendingInt8"]

_LOGGER = logging.getLogger(__name__)


class SwitchableVoice(Protocol):
    """A loaded voice whose synthesizer can be replaced (`NeuralVoice`)."""

    synth: SynthBackend


@dataclass
class PendingInt8:
    """What making one voice's int8 graphs later needs (built by `engine.neural.loader`)."""

    name: str
    precision: str
    """What was asked for: "auto" (int8 only if the gate passes) or "int8"."""
    synthesizer: Path
    """The voice's fp32 `synthesizer.onnx` (what the stamp is taken from)."""
    out_dir: Path
    """Where the graphs go (the cache folder `choose_precision` looks in)."""
    bert: FeatureSource
    spec: VoiceSpec
    fp32_synth: Callable[[int | None], LatentBackend]
    """threads → a fresh fp32 synthesizer cut at the decoder, for calibration."""
    int8_synth: Callable[[Int8Graphs], SynthBackend]
    """graphs → the synthesizer the voice serves with in int8."""
    thresholds: GateThresholds | None = None
    settings: QuantSettings = field(default_factory=QuantSettings)
    voice: SwitchableVoice | None = None
    """The voice to switch (set by the loader once it exists)."""

    def make(
        self,
        *,
        threads: int | None = None,
        calibration: Sequence[str] | None = None,
        heldout: Sequence[str] | None = None,
        progress: Callable[[str], None] | None = None,
        bert: FeatureSource | None = None,
    ) -> Int8Graphs:
        """Make, gate and store the graphs (minutes on a full-size voice). `bert` replaces
        the voice's BERT for this (e.g. one that waits for idle moments); `calibration` /
        `heldout` replace the shipped sentence sets (tests)."""
        synth = self.fp32_synth(threads)
        try:
            return make_int8(
                synth,
                synth.fp32_decoder_path,
                bert or self.bert,
                self.spec,
                self.out_dir,
                stamp_for(self.synthesizer, self.settings),
                settings=self.settings,
                thresholds=self.thresholds,
                calibration=calibration,
                heldout=heldout,
                progress=progress,
                threads=threads,
            )
        finally:
            del synth

    def choose(self, graphs: Int8Graphs) -> PrecisionChoice:
        """int8 or fp32 for these graphs (the gate; "int8" asked for wins over it)."""
        return verdict(self.precision, self.name, graphs, self.thresholds)

    def build(self, graphs: Int8Graphs) -> SynthBackend:
        """The int8 synthesizer to serve with (sessions built now, on the calling thread)."""
        return self.int8_synth(graphs)

    def install(self, synth: SynthBackend) -> None:
        """Switch the voice to `synth` (call between requests: under the speaker's lock,
        with no request part-way through)."""
        if self.voice is None:
            raise RuntimeError(f"voice {self.name}: no voice to switch (not loaded)")
        old = self.voice.synth
        self.voice.synth = synth
        old.release_memory()
