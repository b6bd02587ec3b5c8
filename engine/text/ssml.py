"""SSML, the subset that matters for Home Assistant: pauses, speed, reading fixes.

A text that starts with ``<speak`` (after optional whitespace and an ``<?xml …?>``
declaration) is SSML. It is parsed with the standard library's expat parser, incrementally,
so a stream of text deltas can cut a tag anywhere. A document type declaration is refused
(so no entity can be declared or expanded: no "billion laughs", no external entities);
only XML's five predefined entities and character references are read.

The result is a sequence of :class:`Segment`: text to speak at a rate, or silence.

==============================================  ==================================================
element                                         effect
==============================================  ==================================================
``<break time="500ms"/>`` / ``time="1.5s"``     silence of exactly that length (at most
                                                :data:`MAX_BREAK_S`)
``<break strength="…"/>``                       none 0, x-weak 0.25 s, weak 0.5 s, medium 0.75 s
                                                (also a bare ``<break/>``), strong 1 s, x-strong
                                                1.25 s
``<prosody rate="…">``                          speed factor: x-slow 0.5, slow 0.75, medium 1,
                                                fast 1.25, x-fast 1.75, ``150%``, ``+20%``, ``1.2``
                                                (nested ones multiply; clamped to 0.25–4)
``<sub alias="…">…</sub>``                      the alias is spoken instead of the content
``<say-as interpret-as="characters">``          letters and digits one by one (``spell-out`` too)
``<say-as interpret-as="digits">``              digits one by one
``<say-as interpret-as="telephone">``           digit by digit, groups joined by の
``<say-as interpret-as="date" format="ymd">``   年月日 (formats ymd, md, dmy, mdy, ym, y, m, d)
``<say-as interpret-as="time">``                時分秒 (``7:45``, ``7:45:30``, ``7:45pm``)
``<p>``, ``<s>``                                end a sentence (the voice's sentence pause)
anything else (``<emphasis>``, ``<voice>`` …)   its text is spoken, the tag ignored
==============================================  ==================================================

Malformed SSML is never an error: the text is spoken as plain text (tags removed, entities
read) with a warning. In a stream, what was parsed before the fault has been spoken already;
the rest of the stream is spoken as plain text.
"""

from __future__ import annotations

import html
import logging
import re
from dataclasses import dataclass
from xml.parsers import expat

from ..errors import EngineError
from .numbers import DIALLED_DIGITS, FRACTION_DIGITS
from .readings import LETTER_READINGS

__all__ = [
    "MAX_BREAK_S",
    "Segment",
    "SsmlParser",
    "is_ssml",
    "parse_ssml",
    "plain_text",
    "stream_is_ssml",
]

_LOGGER = logging.getLogger(__name__)

MAX_BREAK_S = 10.0
"""The longest break (seconds); a longer ``time`` is clamped to it."""

_STRENGTHS = {
    "none": 0.0,
    "x-weak": 0.25,
    "weak": 0.5,
    "medium": 0.75,
    "strong": 1.0,
    "x-strong": 1.25,
}
_RATES = {"x-slow": 0.5, "slow": 0.75, "medium": 1.0, "default": 1.0, "fast": 1.25, "x-fast": 1.75}
_MIN_RATE, _MAX_RATE = 0.25, 4.0
_START_RE = re.compile(r"\s*(?:<\?xml[\s?]|<!DOCTYPE[\s>]|<speak[\s>/])", re.IGNORECASE)
_TAG_RE = re.compile(r"<[^<>]*>")
_SNIFF_CHARS = 64  # enough to see "<?xml version='1.0' encoding='utf-8'?><speak "


@dataclass(frozen=True)
class Segment:
    """A piece of an SSML document: text to speak at ``rate``, or ``silence`` seconds."""

    text: str = ""
    """Text to speak (a fragment: sentences may continue in the next segment)."""
    rate: float = 1.0
    """Speed factor for the text (``<prosody rate>``), multiplies the request's speed."""
    silence: float = 0.0
    """Seconds of silence (a ``<break>``); such a segment has no text."""


def is_ssml(text: str) -> bool:
    """Whether ``text`` is meant as SSML: it starts with ``<speak``, ``<?xml`` or ``<!DOCTYPE``."""
    return _START_RE.match(text) is not None


def plain_text(text: str) -> str:
    """Malformed SSML as plain text: tags and stray angle brackets removed, entities read."""
    return html.unescape(_TAG_RE.sub(" ", text)).replace("<", " ").replace(">", " ")


class _Malformed(EngineError):
    pass


def _seconds(value: str) -> float | None:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*(ms|s)?\s*", value)
    if not m:
        return None
    n = float(m.group(1))
    return n / 1000.0 if m.group(2) == "ms" else n


def _rate(value: str) -> float | None:
    value = value.strip().lower()
    if value in _RATES:
        return _RATES[value]
    m = re.fullmatch(r"([+-]?)(\d+(?:\.\d+)?)(%?)", value)
    if not m:
        return None
    n = float(m.group(2))
    if m.group(3):
        if m.group(1):  # relative: +20% → 1.2
            n = 100 + n if m.group(1) == "+" else 100 - n
        return n / 100.0
    return -n if m.group(1) == "-" else n


def _characters(text: str) -> str:
    out = []
    for c in text:
        if c.upper() in LETTER_READINGS and c.isascii():
            out.append(LETTER_READINGS[c.upper()])
        elif c in FRACTION_DIGITS:
            out.append(FRACTION_DIGITS[c])
        elif not c.isspace():
            out.append(c)
    return "".join(out)


def _digits(text: str) -> str:
    return "".join(FRACTION_DIGITS.get(c, c) for c in text if not c.isspace())


def _telephone(text: str) -> str:
    groups = re.findall(r"\d+", text)
    out = "の".join("".join(DIALLED_DIGITS[d] for d in g) for g in groups)
    return ("プラス" if text.strip().startswith("+") else "") + out


def _date(text: str, fmt: str) -> str:
    parts = re.findall(r"\d+", text)
    order = fmt.lower() if fmt else ("ymd" if len(parts) == 3 else "md" if len(parts) == 2 else "y")
    if len(parts) != len(order) or set(order) - set("ymd"):
        return text
    suffix = {"y": "年", "m": "月", "d": "日"}
    values = dict(zip(order, parts, strict=True))
    return "".join(f"{int(values[k])}{suffix[k]}" for k in "ymd" if k in values)


def _time(text: str) -> str:
    m = re.fullmatch(r"\s*(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*([AaPp])?\.?[Mm]?\.?\s*", text)
    if not m:
        return text
    h, mi, s, ampm = int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0), m.group(4)
    out = f"{h}時" + (f"{mi}分" if mi else "") + (f"{s}秒" if s else "")
    if ampm:
        out = ("午前" if ampm in "Aa" else "午後") + out
    return out


def _say_as(text: str, interpret: str, fmt: str) -> str:
    kind = interpret.strip().lower()
    if kind in ("characters", "spell-out", "verbatim"):
        return _characters(text)
    if kind in ("digits", "number:digits"):
        return _digits(text)
    if kind == "telephone":
        return _telephone(text)
    if kind == "date":
        return _date(text, fmt)
    if kind == "time":
        return _time(text)
    return text


class SsmlParser:
    """Incremental SSML → :class:`Segment` (feed deltas, then :meth:`close`).

    Text segments are fragments as they arrive (join them with a sentence splitter);
    a silence segment comes exactly where the ``<break>`` is.
    """

    def __init__(self, where: str = "SSML") -> None:
        self._where = where
        self._out: list[Segment] = []
        self._rates: list[float] = [1.0]
        self._stack: list[str] = []
        self._capture: list[tuple[str, dict[str, str], list[str]]] = []  # say-as / sub
        self._failed = False
        self._closed = False
        self._raw: list[bytes] = []
        self._plain_tail: list[str] = []
        p = expat.ParserCreate()
        p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        p.StartDoctypeDeclHandler = self._refuse_doctype
        p.EntityDeclHandler = self._refuse_entity
        p.StartElementHandler = self._start
        p.EndElementHandler = self._end
        p.CharacterDataHandler = self._chars
        self._parser = p

    # -- expat callbacks -----------------------------------------------------------------
    def _refuse_doctype(self, *args: object) -> None:
        raise _Malformed("a document type declaration is not allowed")

    def _refuse_entity(self, *args: object) -> None:
        raise _Malformed("entity declarations are not allowed")

    def _emit_text(self, text: str) -> None:
        if not text:
            return
        if self._capture:
            self._capture[-1][2].append(text)
            return
        rate = self._rates[-1]
        if self._out and not self._out[-1].silence and self._out[-1].rate == rate:
            self._out[-1] = Segment(self._out[-1].text + text, rate)
        else:
            self._out.append(Segment(text, rate))

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        tag = name.rsplit(":", 1)[-1].lower()
        if not self._stack and tag != "speak":
            raise _Malformed(f"the root element must be <speak>, not <{name}>")
        self._stack.append(tag)
        if tag == "break":
            self._break(attrs)
        elif tag == "prosody":
            rate = _rate(attrs["rate"]) if "rate" in attrs else 1.0
            if rate is None:
                _LOGGER.warning(
                    "%s: prosody rate %r not understood; speed unchanged",
                    self._where,
                    attrs["rate"],
                )
                rate = 1.0
            self._rates.append(min(_MAX_RATE, max(_MIN_RATE, self._rates[-1] * rate)))
        elif tag in ("say-as", "sub"):
            self._capture.append((tag, dict(attrs), []))
        elif tag in ("p", "s", "paragraph", "sentence"):
            self._sentence_end()

    def _end(self, name: str) -> None:
        tag = self._stack.pop() if self._stack else name.lower()
        if tag == "prosody":
            self._rates.pop()
        elif tag in ("say-as", "sub") and self._capture:
            kind, attrs, parts = self._capture.pop()
            content = "".join(parts)
            if kind == "sub":
                said = attrs.get("alias", content)
            else:
                said = _say_as(content, attrs.get("interpret-as", ""), attrs.get("format", ""))
            self._emit_text(said)
        elif tag in ("p", "s", "paragraph", "sentence"):
            self._sentence_end()

    def _chars(self, data: str) -> None:
        self._emit_text(data)

    def _sentence_end(self) -> None:
        last = next((s for s in reversed(self._out) if not s.silence), None)
        if last is not None and last.text.strip() and last.text.rstrip()[-1] not in "。．.!！?？":
            self._emit_text("。")

    def _break(self, attrs: dict[str, str]) -> None:
        seconds: float | None = None
        if "time" in attrs:
            seconds = _seconds(attrs["time"])
            if seconds is None:
                _LOGGER.warning(
                    "%s: break time %r not understood (use 500ms or 1.5s)",
                    self._where,
                    attrs["time"],
                )
        if seconds is None:
            seconds = _STRENGTHS.get(
                attrs.get("strength", "medium").strip().lower(), _STRENGTHS["medium"]
            )
        seconds = min(MAX_BREAK_S, seconds)
        if seconds <= 0:
            return
        if self._capture:
            return  # a break inside say-as/sub: meaningless there
        if self._out and self._out[-1].silence:
            self._out[-1] = Segment(silence=min(MAX_BREAK_S, self._out[-1].silence + seconds))
        else:
            self._out.append(Segment(silence=seconds))

    # -- feeding -------------------------------------------------------------------------
    def _take(self) -> list[Segment]:
        out, self._out = self._out, []
        return out

    def _fail(self, exc: BaseException) -> None:
        self._failed = True
        self._capture.clear()
        offset = getattr(self._parser, "ErrorByteIndex", -1)
        raw = b"".join(self._raw)
        rest = raw[offset:] if 0 <= offset <= len(raw) else b""
        _LOGGER.warning("%s is malformed (%s); speaking the rest as plain text", self._where, exc)
        self._plain_tail.append(rest.decode("utf-8", "ignore"))

    def feed(self, delta: str) -> list[Segment]:
        """Parse a delta; the segments completed so far."""
        if self._closed:
            raise ValueError("feed() after close()")
        if self._failed:
            self._plain_tail.append(delta)
            return []
        data = delta.encode("utf-8")
        self._raw.append(data)
        try:
            self._parser.Parse(data, False)
        except (expat.ExpatError, _Malformed) as exc:
            self._fail(exc)
        return self._take()

    def close(self) -> list[Segment]:
        """The end of the document: the remaining segments (plain text after a fault)."""
        if self._closed:
            return []
        self._closed = True
        if not self._failed:
            try:
                self._parser.Parse(b"", True)
            except (expat.ExpatError, _Malformed) as exc:
                self._fail(exc)
        out = self._take()
        if self._failed:
            tail = plain_text("".join(self._plain_tail))
            if tail.strip():
                out.append(Segment(tail))
        return out


def parse_ssml(text: str, where: str = "SSML") -> list[Segment]:
    """A whole SSML document as segments; malformed → the whole text as plain text."""
    parser = SsmlParser(where)
    segments = parser.feed(text) + parser.close()
    if parser._failed:
        return [Segment(plain_text(text))] if plain_text(text).strip() else []
    return segments


def stream_is_ssml(head: str) -> bool | None:
    """Whether a stream that starts with `head` is SSML: True / False once its start decides
    it (a ``<speak`` tag, or any other text), None while it could still be either."""
    stripped = head.lstrip()
    if not stripped:
        return None
    if is_ssml(stripped):
        return True
    if not stripped.startswith("<") or len(stripped) >= _SNIFF_CHARS:
        return False
    if not any(t.startswith(stripped[: len(t)].lower()) for t in ("<speak", "<?xml", "<!doctype")):
        return False
    return None
