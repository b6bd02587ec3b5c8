"""VOICEVOX's ``AudioQuery`` JSON ↔ the engine: accent phrases and options, each field
checked (`Invalid` names the field, FastAPI's ``loc``).

Out: the frontend's accent phrases (`engine.text.accents`: the readings Wyoming speaks)
as ``moras`` with ``text``, ``consonant``/``vowel`` (VOICEVOX's phoneme names: ``cl`` for
ッ, ``N`` for ン), estimated lengths and a pitch line (high/low by the accent; the voice
predicts its own durations and pitch, as in AivisSpeech), ``pause_mora`` after a pause,
``is_interrogative``.

In: each mora's phonemes (``consonant`` + ``vowel``; its ``text`` when they are absent),
each phrase's ``accent``, a ``pause_mora`` (a pause) and ``is_interrogative``, spoken as
given (`engine.text.from_phrases.PhrasedText`); lengths and pitches of morae are not used.
The scales map onto the engine's options (`Scales.overrides`, `Scales.output`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.text.accents import AccentPhrase
from engine.text.from_phrases import MORA_TO_PHONES, PhrasedText, mora_phones

from ..speech import SpeechOptions
from .errors import Invalid
from .kana import phrases_kana

__all__ = [
    "DEFAULT_SEED",
    "Scales",
    "mora_json",
    "phrase_json",
    "phrases_from_json",
    "phrases_json",
    "query_json",
    "scales_from_json",
]

DEFAULT_SEED = 0
"""The seed of every synthesis: the same query gives the same audio."""

_CONSONANT_S = 0.06
_VOWEL_S = 0.1
_PAUSE_S = 0.3
_HIGH, _LOW = 5.8, 5.4

_SENTENCE_ENDS = ("。", ".", "．", "！", "!")

_KANA: dict[tuple[str, ...], str] = {}
for _kana, _phones in MORA_TO_PHONES.items():
    _KANA.setdefault(tuple(_phones), _kana)
_KANA[("q",)] = "ッ"
_KANA[("N",)] = "ン"


def _vv_phones(mora: str) -> tuple[str | None, str]:
    phones = mora_phones(mora)
    vowel = "cl" if phones[-1] == "q" else phones[-1]
    return (phones[0] if len(phones) > 1 else None), vowel


def mora_json(mora: str, high: bool) -> dict[str, Any]:
    consonant, vowel = _vv_phones(mora)
    return {
        "text": mora,
        "consonant": consonant,
        "consonant_length": _CONSONANT_S if consonant else None,
        "vowel": vowel,
        "vowel_length": _VOWEL_S,
        "pitch": 0.0 if vowel in ("cl", "N") and not high else (_HIGH if high else _LOW),
    }


def phrase_json(phrase: AccentPhrase, sentence_end: bool = False) -> dict[str, Any]:
    """One phrase; a pause after it is a ``pause_mora`` (``、``; ``。`` where a sentence
    ends: the voice renders the sentences as it renders a text's)."""
    pause = None
    if (phrase.pause_after or sentence_end) and not phrase.question:
        pause = {
            "text": "。" if sentence_end else "、",
            "consonant": None,
            "consonant_length": None,
            "vowel": "pau",
            "vowel_length": _PAUSE_S,
            "pitch": 0.0,
        }
    return {
        "moras": [mora_json(m, h) for m, h in zip(phrase.morae, phrase.pitches)],
        "accent": phrase.accent,
        "pause_mora": pause,
        "is_interrogative": phrase.question,
    }


@dataclass(frozen=True)
class Scales:
    """An AudioQuery's scalars, checked."""

    speed: float = 1.0
    pitch: float = 0.0
    intonation: float = 1.0
    tempo_dynamics: float = 1.0
    volume: float = 1.0
    pre: float = 0.1
    """``prePhonemeLength``: seconds of silence before the speech at speed 1 (divided by
    ``speedScale``, as VOICEVOX and AivisSpeech Engine divide it)."""
    post: float = 0.1
    """``postPhonemeLength``, divided by ``speedScale`` as ``pre``."""
    rate: int | None = None
    stereo: bool = False
    pause: float | None = None
    """``pauseLength`` × ``pauseLengthScale``: seconds between sentences at speed 1 (None: the
    voice's, which its predicted durations already scale)."""

    def options(self) -> SpeechOptions:
        """The request's options for the request service, each over the voice's own: speed,
        style strength (``intonationScale``), rhythm (``tempoDynamicsScale`` × sdp_ratio),
        pitch (1 + ``pitchScale``, AivisSpeech Engine's meaning), volume, rate, the silences
        (divided by the speed), a fixed seed."""
        return SpeechOptions(
            speed=self.speed,
            pitch=max(0.0, 1.0 + self.pitch),  # AivisSpeech Engine's conversion
            style_strength=self.intonation,
            tempo_dynamics=self.tempo_dynamics,
            volume=self.volume,
            sample_rate=self.rate,
            lead_silence=self.pre,
            tail_silence=self.post,
            sentence_pause=self.pause,
            seed=DEFAULT_SEED,
        )


# field → (low, high, default)
_RANGES: dict[str, tuple[float, float, float]] = {
    "speedScale": (0.25, 4.0, 1.0),
    "pitchScale": (-1.0, 1.0, 0.0),  # AivisSpeech Engine's range (VOICEVOX: -0.15-0.15)
    "intonationScale": (0.0, 2.0, 1.0),
    "tempoDynamicsScale": (0.0, 2.0, 1.0),
    "volumeScale": (0.01, 20.0, 1.0),  # Home Assistant's VOICEVOX integration offers 0.5-20
    "prePhonemeLength": (0.0, 1.5, 0.1),
    "postPhonemeLength": (0.0, 3.0, 0.1),
    "pauseLengthScale": (0.0, 2.0, 1.0),
}
_RATES = (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000)


def _number(data: Mapping[str, Any], name: str) -> float:
    low, high, default = _RANGES[name]
    value = data.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Invalid(("body", name), "Input should be a valid number", "float_type")
    if not (math.isfinite(value) and low <= value <= high):
        raise Invalid(("body", name), f"must be from {low} to {high}, got {value}", "value_error")
    return float(value)


def scales_from_json(data: Mapping[str, Any]) -> Scales:
    numbers = {name: _number(data, name) for name in _RANGES}
    rate = data.get("outputSamplingRate")
    if rate is not None and (isinstance(rate, bool) or rate not in _RATES):
        raise Invalid(
            ("body", "outputSamplingRate"),
            f"one of {', '.join(map(str, _RATES))}, got {rate!r}",
        )
    pause = data.get("pauseLength")
    if pause is not None and (
        isinstance(pause, bool)
        or not isinstance(pause, (int, float))
        or not (math.isfinite(pause) and 0.0 <= pause <= 10.0)
    ):
        raise Invalid(("body", "pauseLength"), f"null or from 0.0 to 10.0, got {pause!r}")
    stereo = data.get("outputStereo", False)
    if not isinstance(stereo, bool):
        raise Invalid(("body", "outputStereo"), "Input should be a valid boolean", "bool_type")
    return Scales(
        speed=numbers["speedScale"],
        pitch=numbers["pitchScale"],
        intonation=numbers["intonationScale"],
        tempo_dynamics=numbers["tempoDynamicsScale"],
        volume=numbers["volumeScale"],
        pre=numbers["prePhonemeLength"],
        post=numbers["postPhonemeLength"],
        rate=int(rate) if rate is not None else None,
        stereo=stereo,
        pause=None if pause is None else float(pause) * numbers["pauseLengthScale"],
    )


def _mora(raw: object, loc: tuple[str | int, ...]) -> str:
    if not isinstance(raw, Mapping):
        raise Invalid(loc, "Input should be a valid dictionary", "dict_type")
    vowel = raw.get("vowel")
    consonant = raw.get("consonant")
    if isinstance(vowel, str) and vowel:
        v = vowel if vowel in ("cl", "N") else vowel.lower()
        v = "q" if v == "cl" else v
        key = (consonant, v) if isinstance(consonant, str) and consonant else (v,)
        found = _KANA.get(key)
        if found is None:
            raise Invalid((*loc, "vowel"), f"no mora is {'+'.join(key)}")
        return found
    text = raw.get("text")
    if not isinstance(text, str):
        raise Invalid((*loc, "text"), "Input should be a valid string", "string_type")
    try:
        mora_phones(text)
    except ValueError as exc:
        raise Invalid((*loc, "text"), str(exc)) from None
    return text


def phrases_from_json(
    raw: object, loc: tuple[str | int, ...] = ("body", "accent_phrases")
) -> PhrasedText:
    """The phrases to speak; a ``pause_mora`` whose text is ``。`` ends a sentence."""
    if not isinstance(raw, list):
        raise Invalid(loc, "Input should be a valid list", "list_type")
    phrases: list[AccentPhrase] = []
    ends: list[int] = []
    for i, item in enumerate(raw):
        at = (*loc, i)
        if not isinstance(item, Mapping):
            raise Invalid(at, "Input should be a valid dictionary", "dict_type")
        moras = item.get("moras")
        if not isinstance(moras, list) or not moras:
            raise Invalid((*at, "moras"), "a list of at least one mora", "list_type")
        morae = tuple(_mora(m, (*at, "moras", j)) for j, m in enumerate(moras))
        accent = item.get("accent")
        if isinstance(accent, bool) or not isinstance(accent, int):
            raise Invalid((*at, "accent"), "Input should be a valid integer", "int_type")
        if not 1 <= accent <= len(morae):
            raise Invalid((*at, "accent"), f"must be from 1 to {len(morae)}, got {accent}")
        question = item.get("is_interrogative", False)
        if not isinstance(question, bool):
            raise Invalid((*at, "is_interrogative"), "Input should be a valid boolean", "bool_type")
        pause_mora = item.get("pause_mora")
        pause = pause_mora is not None
        if isinstance(pause_mora, Mapping) and pause_mora.get("text") in _SENTENCE_ENDS:
            ends.append(i)
        phrases.append(AccentPhrase(morae, accent, pause_after=pause, question=question))
    return PhrasedText(phrases, ends)


def phrases_json(spoken: PhrasedText) -> list[dict[str, Any]]:
    return [phrase_json(p, i in spoken.ends) for i, p in enumerate(spoken.phrases)]


def query_json(spoken: PhrasedText, rate: int) -> dict[str, Any]:
    """An AudioQuery with the defaults (AivisSpeech's fields; the voice's own rate); its
    ``kana`` is the phrases in AquesTalk-style kana (`kana.phrases_kana`), as VOICEVOX's."""
    return {
        "accent_phrases": phrases_json(spoken),
        "speedScale": 1.0,
        "intonationScale": 1.0,
        "tempoDynamicsScale": 1.0,
        "pitchScale": 0.0,
        "volumeScale": 1.0,
        "prePhonemeLength": 0.1,
        "postPhonemeLength": 0.1,
        "pauseLength": None,
        "pauseLengthScale": 1.0,
        "outputSamplingRate": rate,
        "outputStereo": False,
        "kana": phrases_kana(spoken.phrases, spoken.ends),
    }
