"""What the engine API routes share: the Wyoming server's voices and its one way in for
speech (`SpeechService`: the same queue, options and bounds), the page's dictionary."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from engine import Speaker

from ..info import VoiceCatalog
from ..speech import SpeechService, TooLarge
from ..web.dictionary import PageDictionary
from .errors import Invalid, Refused
from .openai_voices import openai_voice
from .options import EngineApiSettings
from .style_ids import StyleEntry, StyleTable, style_table

__all__ = ["API_STATE", "ApiState"]


@dataclass
class ApiState:
    settings: EngineApiSettings
    catalog: VoiceCatalog
    service: SpeechService
    dictionary: PageDictionary
    rewrite: bool = True

    @property
    def max_text(self) -> int:
        """Longest text a request may carry (``--max-text-length``)."""
        return self.service.bounds.max_text_length

    def styles(self) -> StyleTable:
        return style_table(self.catalog.speakers)

    def style(self, raw: object, loc: tuple[str, ...] = ("query", "speaker")) -> StyleEntry:
        """The style a ``speaker`` (style ID) names; 422 naming it otherwise."""
        if raw is None:
            raise Invalid(loc, "Field required", "missing")
        try:
            sid = int(str(raw))
        except ValueError:
            raise Invalid(loc, "Input should be a valid integer", "int_parsing") from None
        found = self.styles().find(sid)
        if found is None:
            raise _unknown_id(sid)
        return found

    def speaker(self, entry: StyleEntry) -> Speaker:
        """The voice `entry` names, as served now: 404, as for an unknown ID, when it was
        removed since the ID was looked up."""
        found = self.catalog.speakers.get(entry.voice)
        if found is None:
            raise _unknown_id(entry.id)
        return found

    def openai_voice(self, name: str) -> str | None:
        """The served voice OpenAI's voice `name` speaks with (``--openai-voice``, else the
        default voice); None when `name` is no OpenAI name or is a served name itself."""
        return openai_voice(self.catalog, dict(self.settings.openai_voices), name)

    def text(self, raw: object, loc: tuple[str, ...]) -> str:
        """A text to read (a reading, not speech: checked against the same bound)."""
        if not isinstance(raw, str):
            raise Invalid(loc, "Field required", "missing")
        try:
            self.service.check_length(len(raw), str(loc[-1]))
        except TooLarge as exc:
            raise Refused(413, str(exc), str(loc[-1])) from None
        return raw


def _unknown_id(style_id: int) -> Refused:
    return Refused(404, f"no style has the ID {style_id} (GET /speakers lists them)")


API_STATE = web.AppKey("engine_api_state", ApiState)
