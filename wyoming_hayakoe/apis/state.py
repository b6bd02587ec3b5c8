"""What the engine API routes share: the Wyoming server's voices and queue, the page's
dictionary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from engine import Speaker

from ..admission import Admission, AdmissionRefused
from ..info import Resolved, VoiceCatalog
from ..web.dictionary import PageDictionary
from .errors import Invalid, Refused
from .options import EngineApiSettings
from .style_ids import StyleEntry, StyleTable, style_table

__all__ = ["API_STATE", "ApiState", "MAX_API_TEXT"]

MAX_API_TEXT = 4096
"""Longest text either API speaks (OpenAI's limit for ``input``)."""


@dataclass
class ApiState:
    settings: EngineApiSettings
    catalog: VoiceCatalog
    admission: Admission
    dictionary: PageDictionary
    rewrite: bool = True
    max_text: int = MAX_API_TEXT

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

    def resolve(self, voice: str, style: str | None) -> Resolved:
        return self.catalog.resolve_exact(voice, style)

    def admit(self, voice: str) -> Any:
        try:
            return self.admission.enter(voice)
        except AdmissionRefused as exc:
            raise Refused(503, str(exc)) from None

    def text(self, raw: object, loc: tuple[str, ...]) -> str:
        if not isinstance(raw, str):
            raise Invalid(loc, "Field required", "missing")
        if len(raw) > self.max_text:
            raise Invalid(loc, f"at most {self.max_text} characters", "string_too_long")
        return raw


def _unknown_id(style_id: int) -> Refused:
    return Refused(404, f"no style has the ID {style_id} (GET /speakers lists them)")


API_STATE = web.AppKey("engine_api_state", ApiState)
