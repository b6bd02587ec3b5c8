"""The SSML subset: segments from whole documents and from deltas cut anywhere."""

from __future__ import annotations

import itertools
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.text.ssml import (
    MAX_BREAK_S,
    Segment,
    SsmlParser,
    is_ssml,
    parse_ssml,
    stream_is_ssml,
)

DOC = (
    '<speak>おはようございます。<break time="500ms"/>今日は'
    '<prosody rate="150%">晴れ</prosody>です。'
    '<sub alias="ひがしかんだ">東神田</sub><say-as interpret-as="characters">AB1</say-as></speak>'
)


def _joined(segments: list[Segment]) -> list[Segment]:
    """Adjacent text segments of one rate merged (how a stream's fragments add up)."""
    out: list[Segment] = []
    for s in segments:
        if out and not s.silence and not out[-1].silence and out[-1].rate == s.rate:
            out[-1] = Segment(out[-1].text + s.text, s.rate)
        else:
            out.append(s)
    return out


def test_document_to_segments() -> None:
    assert parse_ssml(DOC) == [
        Segment("おはようございます。"),
        Segment(silence=0.5),
        Segment("今日は"),
        Segment("晴れ", rate=1.5),
        Segment("です。ひがしかんだエービーイチ"),
    ]


@pytest.mark.parametrize(
    ("tag", "seconds"),
    [
        ('<break time="1.5s"/>', 1.5),
        ('<break time="250ms"/>', 0.25),
        ("<break/>", 0.75),
        ('<break strength="x-weak"/>', 0.25),
        ('<break strength="strong"/>', 1.0),
        ('<break strength="x-strong"/>', 1.25),
        ('<break time="60s"/>', MAX_BREAK_S),
        ('<break time="soon"/>', 0.75),  # not understood: the strength (medium)
    ],
)
def test_break_lengths(tag: str, seconds: float) -> None:
    assert parse_ssml(f"<speak>あ{tag}い</speak>") == [
        Segment("あ"),
        Segment(silence=seconds),
        Segment("い"),
    ]


def test_break_strength_none_is_no_break() -> None:
    assert parse_ssml('<speak>あ<break strength="none"/>い</speak>') == [Segment("あい")]


@pytest.mark.parametrize(
    ("rate", "factor"),
    [
        ("x-slow", 0.5),
        ("slow", 0.75),
        ("fast", 1.25),
        ("x-fast", 1.75),
        ("150%", 1.5),
        ("+20%", 1.2),
        ("-50%", 0.5),
        ("2", 2.0),
        ("1000%", 4.0),
        ("medium", 1.0),
    ],
)
def test_prosody_rates(rate: str, factor: float) -> None:
    segs = parse_ssml(f'<speak><prosody rate="{rate}">はい</prosody></speak>')
    assert segs == [Segment("はい", rate=factor)]


def test_nested_prosody_multiplies() -> None:
    segs = parse_ssml(
        '<speak><prosody rate="200%">あ<prosody rate="50%">い</prosody></prosody></speak>'
    )
    assert segs == [Segment("あ", rate=2.0), Segment("い", rate=1.0)]


@pytest.mark.parametrize(
    ("inner", "said"),
    [
        ('<say-as interpret-as="characters">Wi2</say-as>', "ダブリューアイニ"),
        ('<say-as interpret-as="digits">2026</say-as>', "ニゼロニロク"),
        (
            '<say-as interpret-as="telephone">03-1234-5678</say-as>',
            "ゼロサンのイチニーサンヨンのゴーロクナナハチ",
        ),
        ('<say-as interpret-as="date" format="ymd">2026/11/29</say-as>', "2026年11月29日"),
        ('<say-as interpret-as="date" format="dmy">29.11.2026</say-as>', "2026年11月29日"),
        ('<say-as interpret-as="date" format="md">11-29</say-as>', "11月29日"),
        ('<say-as interpret-as="time">7:45pm</say-as>', "午後7時45分"),
        ('<say-as interpret-as="time">07:05:30</say-as>', "7時5分30秒"),
        ('<sub alias="ダブリューエイチオー">WHO</sub>', "ダブリューエイチオー"),
        ("<emphasis>大事</emphasis>", "大事"),
    ],
)
def test_say_as_and_sub(inner: str, said: str) -> None:
    assert parse_ssml(f"<speak>{inner}</speak>") == [Segment(said)]


def test_paragraphs_and_sentences_end_sentences() -> None:
    segs = parse_ssml("<speak><p><s>一つ目</s><s>二つ目！</s></p><p>三つ目</p></speak>")
    assert segs == [Segment("一つ目。二つ目！三つ目。")]


@pytest.mark.parametrize(
    "doc",
    [
        '<speak>壊れた<break time="1s">',  # unclosed
        "<speak>A & B</speak>",  # bare ampersand
        "<speak>あ</speak>余り",  # junk after the root
        "<speak><b>あ</i></speak>",
    ],
)
def test_malformed_is_spoken_as_plain_text_with_a_warning(doc: str, caplog) -> None:
    with caplog.at_level(logging.WARNING):
        segs = parse_ssml(doc)
    assert len(segs) == 1 and not segs[0].silence
    assert "<" not in segs[0].text and "speak" not in segs[0].text
    assert "malformed" in caplog.text


def test_entities_cannot_be_declared_or_expanded(caplog) -> None:
    lol = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        '<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]><speak>&lol2;</speak>'
    )
    assert is_ssml(lol)
    with caplog.at_level(logging.WARNING):
        segs = parse_ssml(lol)
    assert "lollol" not in "".join(s.text for s in segs)
    assert "document type declaration" in caplog.text
    ext = '<!DOCTYPE speak [<!ENTITY x SYSTEM "file:///etc/passwd">]><speak>&x;</speak>'
    assert "root:" not in "".join(s.text for s in parse_ssml(ext))


def test_predefined_entities_are_read() -> None:
    assert parse_ssml("<speak>A &amp; B &lt; C&#12354;</speak>") == [Segment("A & B < Cあ")]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(DOC)), max_size=12))
def test_deltas_cut_anywhere_give_the_same_segments(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(DOC)]
    parser = SsmlParser()
    segs: list[Segment] = []
    for a, b in itertools.pairwise(bounds):
        segs += parser.feed(DOC[a:b])
    segs += parser.close()
    assert _joined(segs) == parse_ssml(DOC)


def test_a_stream_that_breaks_midway_keeps_what_was_parsed(caplog) -> None:
    parser = SsmlParser()
    segs = parser.feed("<speak>はい。<break time='1s'/>")
    with caplog.at_level(logging.WARNING):
        segs += parser.feed("いいえ & <oops")
        segs += parser.feed("。またね")
        segs += parser.close()
    assert segs[:2] == [Segment("はい。"), Segment(silence=1.0)]
    rest = "".join(s.text for s in segs[2:])
    assert "またね" in rest and "<" not in rest
    assert "malformed" in caplog.text


@pytest.mark.parametrize(
    ("head", "ssml"),
    [
        ("  <sp", None),  # could still be either
        ("  <speak>", True),
        ("<?xml version='1.0'?>", True),
        ("<b>", False),
        ("こんに", False),
        ("", None),
        ("<" + " " * 80, False),  # long enough to have said
    ],
)
def test_the_start_of_a_stream_decides_ssml(head: str, ssml: bool | None) -> None:
    assert stream_is_ssml(head) is ssml


def test_plain_text_is_no_ssml() -> None:
    assert not is_ssml("こんにちは <speak>")
    assert not is_ssml("<speaker>")
