"""`ServerContext`: what every door of one server shares — the voices, the `describe`
answer, the request service and its queue. Made once by `HayakoeServer`; the Wyoming
handler, the page and the engine APIs read it, none of them owns it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from engine.speaker import DEFAULT_STREAM_QUIET

from .admission import Admission
from .events import EventLimits
from .info import InfoAnswer, VoiceCatalog
from .speech import RequestBounds, SpeechService

__all__ = ["ServerContext", "SpeedMeasurer"]


class SpeedMeasurer(Protocol):
    """What takes a voice's speed measurement again (`engine.TTS.measure_again`: KeyError
    for an unknown voice, ValueError when there is nothing to measure)."""

    def measure_again(self, name: str) -> object: ...


@dataclass
class ServerContext:
    """What every connection shares: the voices, the `info` answer, the service, limits."""

    catalog: VoiceCatalog
    info: InfoAnswer
    """The `describe` answer (`info.event()`: says which precision each voice runs now)."""
    samples_per_chunk: int = 1024
    bounds: RequestBounds = field(default_factory=RequestBounds)
    """Every request's bounds (characters, seconds of audio, queries), on every door."""
    stream_quiet: float = DEFAULT_STREAM_QUIET
    """Seconds without a chunk after which a stream's finished sentences are spoken
    (`Speaker.astream`'s `quiet`; 0: they wait for the next chunk)."""
    limits: EventLimits = field(default_factory=EventLimits)
    admission: Admission = field(default_factory=lambda: Admission(max_queue=10))
    """Bounds the requests queued per voice; refuses new ones while draining."""
    measurer: SpeedMeasurer | None = None
    """Takes a voice's speed measurement again when asked (the page's status), the server's
    `TTS`; None where nothing can."""
    service: SpeechService = field(init=False)
    """The one way in for speech (`wyoming_hayakoe.speech`), on these voices and queue."""

    def __post_init__(self) -> None:
        self.service = SpeechService(
            self.catalog, self.admission, self.bounds, stream_quiet=self.stream_quiet
        )
