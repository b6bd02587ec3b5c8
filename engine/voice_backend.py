"""The seam between the public API (`TTS`, `Speaker`) and each kind of voice.

A *voice backend* turns already-split sentences into float audio. Everything that is the
same for every kind of voice — text rewriting, sentence splitting, locking, int16 conversion,
async wrappers — lives in `speaker.py`, so a new kind of voice only implements `Voice`.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypedDict, runtime_checkable

import numpy as np

from .audio import PhonemeTiming
from .option_info import option


@dataclass(frozen=True)
class SynthesisOptions:
    """Per-request generation options, with hayakoe's names and defaults. The fields declared
    with `option` are the ones a server user sets (a flag and a preset key each, derived by
    `wyoming_hayakoe.knobs`): one declaration each."""

    style: str = "Neutral"
    style_weight: float = option(1.0, "how strongly the style is applied (0: neutral)", low=0.0)
    speed: float = option(1.0, "speaking rate factor (2.0 = twice as fast)", low=0.0, low_open=True)
    """Speaking-rate factor: 2.0 is twice as fast. (Neural voices use length_scale = 1/speed.)"""
    sdp_ratio: float = option(
        0.2,
        "mix of the stochastic and the deterministic duration predictor, 0 to 1 "
        "(higher: livelier rhythm)",
        low=0.0,
        high=1.0,
    )
    noise: float = option(0.6, "variation of the voice itself", low=0.0)
    noise_w: float = option(0.8, "variation of phoneme lengths", low=0.0)
    pitch_scale: float = option(
        1.0, "pitch factor (above 1 higher, below 1 lower)", low=0.0, low_open=True
    )
    """Factor on the mean F0 (1.1: 10 % higher). A neural voice changes it after synthesis
    with WORLD, per sentence, as hayakoe does (`engine.neural.world`; costs time and a little
    quality, so only when not 1); the embedded voice shifts its HTS engine."""
    intonation_scale: float = option(
        1.0, "intonation factor (above 1 wider, below 1 flatter)", low=0.0
    )
    """Factor on each frame's F0 distance from the sentence's mean (0.5: half the melody,
    0: a monotone); WORLD on a neural voice, as `pitch_scale`."""
    speaker_id: int = 0
    seed: int | None = None
    """Same seed → same samples, run after run, on the same backend."""
    sentence_silence: float | None = option(
        None, "seconds of silence between sentences", low=0.0, metavar="SECONDS"
    )
    """Seconds of silence between sentences; None lets the voice decide (predicted pauses)."""
    whole_sentences: bool = False
    """Decode each sentence whole, never in windows: for a caller that takes the audio only
    once all of it is made (`Speaker.generate`), where nobody hears a first piece early and
    whole-sentence decoding costs less."""
    with_timing: bool = False
    """Give each phoneme's start and end (`engine.audio.PhonemeTiming`, hayakoe 1.3's
    `with_timing`): `AudioResult.timings`. A neural voice then decodes sentences whole."""

    def merged(self, **overrides: object) -> SynthesisOptions:
        """A copy with the given fields replaced (None values are ignored)."""
        changes: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
        return replace(self, **changes)


class SynthesisOverrides(TypedDict, total=False):
    """The keywords `Speaker.generate` / `stream` / `astream` take, checked by mypy: the
    fields of `SynthesisOptions`, each optional (hayakoe's spelling: ``style=``, ``speed=``,
    ...); what is not given comes from the speaker's defaults. Kept equal to the dataclass's
    fields by a test (tests/engine/test_typed_options.py)."""

    style: str
    style_weight: float
    speed: float
    sdp_ratio: float
    noise: float
    noise_w: float
    pitch_scale: float
    intonation_scale: float
    speaker_id: int
    seed: int | None
    sentence_silence: float | None
    whole_sentences: bool
    with_timing: bool


@dataclass
class AudioPiece:
    """A piece of float32 mono audio in [-1, 1] produced by a voice.

    `sentence` is the index of the sentence it belongs to; `final` is True on the last piece
    of that sentence (pieces may be whole sentences or windows inside one).
    """

    samples: np.ndarray
    sentence: int
    final: bool = True
    remaining: float | None = None
    """Seconds of audio this render call will still yield after this piece, as far as the
    voice knows now (predicted durations; estimates for sentences not reached yet); None:
    the voice cannot tell. Read by the request's pacing (`engine.pacing`)."""
    tail: float = 0.0
    """Seconds in the largest single piece still to come (audio arrives piece by piece)."""
    timings: list[PhonemeTiming] | None = None
    """The phonemes of this piece, seconds from the start of its `samples` (the pause in
    front belongs to none); only when the options ask (`with_timing`), None otherwise or
    where the voice cannot tell."""


@dataclass(frozen=True)
class RunInfo:
    """What a voice with graphs runs now, as it declares it (`Voice.run_info`); read by
    `Speaker` and shown by the server's page and status."""

    precision: str
    """The arithmetic: "int8", "fp32" (or, chosen by measurement on OpenVINO, "bf16" /
    "fp16"). May change once, between requests, when int8 graphs made in the background
    pass their gate (`engine.int8.background`)."""
    runtime: str
    """What runs the graphs: "onnxruntime", "openvino" or "pytorch"."""
    runs: str
    """The same in a few words, with the measured ratio where a measurement chose it
    ("int8 on OpenVINO, 0.43× fp32's time here (measured)")."""
    reason: str
    """Why: the gate's figures and, when measured, every candidate's time ("" if none)."""


@dataclass(frozen=True)
class VoiceIdentity:
    """Where a voice with a file comes from and who it is, as it declares it
    (`Voice.identity`): what the server needs of a voice beyond speaking (VOICEVOX style
    IDs, ``/speaker_info``), so it never inspects a voice's class or reads its file again."""

    source: str
    """The local file or folder it was loaded from."""
    aivm: bool
    """`source` is an AivisHub file (`.aivmx`/`.aivm`): its speakers' icons and voice
    samples can be read from it (`engine.aivm.read_raw_metadata`)."""
    speaker_uuid: str | None = None
    """The AivisHub speaker this voice is (its UUID as the file writes it); None for a
    voice that is not from an AivisHub file."""
    style_ids: Mapping[str, int] = field(default_factory=dict)
    """Style name → the file's local style ID (0 to 31) of that speaker; empty for a voice
    that is not from an AivisHub file."""
    license: str | None = None
    """The license text the file carries (what its creators allow); None: none given."""
    creators: tuple[str, ...] = ()
    """Who made it, as the file names them."""


class ListenerView(Protocol):
    """The listener of the request a voice renders for, as the voice may see it: the clock
    the request is paced on, and the seconds of audio the listener can still play before it
    needs audio not made yet (what a decoder may spend on its next piece without a gap).
    `engine.pacing.RequestPacing` (through `Speaker`) and `engine.pacing.Listener` (a
    direct caller that plays pieces as they come) provide it."""

    def now(self) -> float: ...

    def in_hand(self) -> float: ...


@runtime_checkable
class Voice(Protocol):
    """What every voice backend provides. Implementations must be thread-safe only under
    the per-speaker lock that `Speaker` holds (one call at a time per voice)."""

    # Read-only members (properties here, so plain attributes of narrower types satisfy them).
    @property
    def name(self) -> str: ...
    @property
    def sample_rate(self) -> int: ...
    @property
    def styles(self) -> Sequence[str]: ...
    @property
    def description(self) -> str: ...
    @property
    def attribution_name(self) -> str: ...
    @property
    def attribution_url(self) -> str: ...
    @property
    def version(self) -> str | None:
        """The voice's own version (from its config), or None when it has none."""

    @property
    def sentence_pause(self) -> float | None:
        """Seconds of silence between batches of sentences rendered separately (text arriving
        in deltas); None leaves the choice to `Speaker` (`DEFAULT_STREAM_PAUSE`)."""

    @property
    def default_style(self) -> str | None:
        """The style a request that names none gets, where the voice knows its own (an
        AivisHub file names it); None: `Speaker` picks (Neutral, else the first)."""

    def run_info(self) -> RunInfo | None:
        """What it runs now (precision, runtime, why); None for a voice with no such choice
        (the embedded HTS voice)."""

    def identity(self) -> VoiceIdentity | None:
        """Where it comes from and who it is (source file, AivisHub speaker and style IDs,
        license); None for a voice with no file of its own (the embedded HTS voice)."""

    def render(
        self,
        sentences: Sequence[str],
        options: SynthesisOptions,
        listener: ListenerView | None = None,
    ) -> Generator[AudioPiece, None, None]:
        """Yield audio for `sentences` in order, including any pause the voice wants
        between sentences (at the start of the following sentence's first piece). The
        generator may be closed early; it must then release what it holds. `listener` is
        the request's (`Speaker` passes it; None: the caller plays the pieces as they come);
        a voice that makes pieces of a size it chooses may size them from it."""
        ...
