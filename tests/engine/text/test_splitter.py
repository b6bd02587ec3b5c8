"""Sentence splitter: expected splits, and streaming (deltas) == whole text."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.text import SentenceSplitter, split_sentences


def _feed_in_pieces(text: str, cuts: list[int], max_chars: int | None = 150) -> list[str]:
    s = SentenceSplitter(max_chars=max_chars)
    out: list[str] = []
    prev = 0
    for c in sorted(set(cuts)) + [len(text)]:
        out += s.feed(text[prev:c])
        prev = c
    return out + s.flush()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("こんにちは。今日はいい天気ですね！", ["こんにちは。", "今日はいい天気ですね！"]),
        ("本当？うそ!ほんと?はい", ["本当？", "うそ!", "ほんと?", "はい"]),
        ("「はい。」「いいえ。」", ["「はい。」", "「いいえ。」"]),
        ("彼は「はい。」と言った。次です。", ["彼は「はい。」と言った。", "次です。"]),
        ("気温は23.5度、1,200円です。次", ["気温は23.5度、1,200円です。", "次"]),
        ("バージョン2.0.1です。", ["バージョン2.0.1です。"]),
        ("詳しくはexample.comへ。はい", ["詳しくはexample.comへ。", "はい"]),
        ("見出し\n\n本文です\r\n最後", ["見出し", "本文です", "最後"]),
        ("えーと…そうですね……はい", ["えーと…", "そうですね……", "はい"]),
        ("まじ!?すごい‼", ["まじ!?", "すごい‼"]),
        ("はい。😊「そうです」", ["はい。😊", "「そうです」"]),
        ("了解です。★♪ 次の件。", ["了解です。★♪", "次の件。"]),
        ("。。こんにちは。", ["。。こんにちは。"]),
        ("Hello world. Bye! OK?", ["Hello world.", "Bye!", "OK?"]),
        ('He said "Hi." "Bye."', ['He said "Hi."', '"Bye."']),
        ("終わり。」", ["終わり。」"]),
        ("全角．テスト。２３．５度", ["全角．", "テスト。", "２３．５度"]),
        ("", []),
        ("   \n ", []),
        ("😊", ["😊"]),
    ],
)
def test_expected_splits(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_trailing_dot_waits_for_next_char() -> None:
    s = SentenceSplitter()
    assert s.feed("気温は23.") == []
    assert s.feed("5度です。") == []  # a closing quote could still follow
    assert s.feed("明日") == ["気温は23.5度です。"]
    assert s.pending == "明日"
    assert s.flush() == ["明日"]
    assert s.flush() == []


def test_sentence_is_emitted_before_flush() -> None:
    s = SentenceSplitter()
    assert s.feed("一つ目。二") == ["一つ目。"]
    assert s.feed("つ目！\n三") == ["二つ目！"]
    assert s.flush() == ["三"]


_SAMPLES = [
    "こんにちは。今日はいい天気ですね！「はい。」と言った。気温は23.5度、1,200円です。",
    "見出し\n\n本文…そうですね……はい。😊「そうです」 He said \"Hi.\" 'Bye.' v1.2.3!?",
    "全角．テスト。２３．５度。。★\n終わり。」",
]


@pytest.mark.parametrize("text", _SAMPLES)
def test_every_single_cut_matches_whole(text: str) -> None:
    whole = split_sentences(text)
    for cut in range(len(text) + 1):
        assert _feed_in_pieces(text, [cut]) == whole, cut


@pytest.mark.parametrize("text", _SAMPLES)
def test_char_by_char_matches_whole(text: str) -> None:
    assert _feed_in_pieces(text, list(range(len(text)))) == split_sentences(text)


_ALPHABET = st.sampled_from(
    list("あいう漢字カナabcXY0123456789")
    + list("。！？!?…‥.．,、」』）)「『（(\"'“”’")
    + ["\n", "\r", " ", "　", "😊", "★", "と", "っ", "ー"]
)


@settings(max_examples=400, deadline=None)
@given(
    text=st.lists(_ALPHABET, max_size=40).map("".join),
    cuts=st.lists(st.integers(min_value=0, max_value=40), max_size=12),
)
def test_deltas_equal_whole(text: str, cuts: list[int]) -> None:
    cuts = [c for c in cuts if c <= len(text)]
    assert _feed_in_pieces(text, cuts) == split_sentences(text)


@settings(max_examples=300, deadline=None)
@given(text=st.lists(_ALPHABET, max_size=40).map("".join))
def test_nothing_lost_and_no_speechless_sentence(text: str) -> None:
    sentences = split_sentences(text)
    assert re.sub(r"\s", "", "".join(sentences)) == re.sub(r"\s", "", text)
    assert all(s and s == s.strip() for s in sentences)
    if len(sentences) > 1:
        speech = re.compile(r"[^\W_]", re.UNICODE)  # letters and digits
        assert all(speech.search(s) for s in sentences)


def test_long_sentences_are_cut_at_a_comma_or_space() -> None:
    text = "あ" * 10 + "、" + "い" * 10 + "、" + "う" * 10 + "。"
    assert split_sentences(text, max_chars=25) == [
        "あ" * 10 + "、" + "い" * 10 + "、",
        "う" * 10 + "。",
    ]
    assert split_sentences("abc def ghi jkl mno pqr", max_chars=10) == [
        "abc def",
        "ghi jkl",
        "mno pqr",
    ]
    assert split_sentences("漢字" * 8 + "12345", max_chars=18) == ["漢字" * 8, "12345"]
    assert split_sentences("あ" * 400) == ["あ" * 150, "あ" * 150, "あ" * 100]
    assert split_sentences("あ" * 400, max_chars=None) == ["あ" * 400]


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(_ALPHABET, max_size=40).map("".join),
    cuts=st.lists(st.integers(min_value=0, max_value=40), max_size=12),
    max_chars=st.integers(min_value=2, max_value=12),
)
def test_deltas_equal_whole_with_length_limit(text: str, cuts: list[int], max_chars: int) -> None:
    cuts = [c for c in cuts if c <= len(text)]
    whole = split_sentences(text, max_chars=max_chars)
    assert _feed_in_pieces(text, cuts, max_chars) == whole
    assert re.sub(r"\s", "", "".join(whole)) == re.sub(r"\s", "", text)


# -- a stream that goes quiet (settle) ------------------------------------------------------


@pytest.mark.parametrize(
    ("deltas", "expected"),
    [
        # the end of a chunk is the end of the sentence: no need to see the next character
        (["こんにちは。"], ["こんにちは。", "|"]),
        (["こんにちは！？"], ["こんにちは！？", "|"]),
        (["Hello there."], ["Hello there.", "|"]),
        (["見出し\n"], ["見出し", "|"]),
        # an unfinished rest stays; an opener already seen starts the next sentence
        (["一つ目。二つ"], ["一つ目。", "|", "二つ"]),
        (["はい。「"], ["はい。", "|", "「"]),
        # 23. may still become 23.5: a dot after a digit waits
        (["気温は23.", "5度です。"], ["|", "気温は23.5度です。", "|"]),
        # late closers, terminators, emoji and symbols: dropped, the next sentence starts
        # at its first speech character (a late quotative と begins it)
        (["「はい。", "」と言った。"], ["「はい。", "|", "と言った。", "|"]),
        (["はい。", "😊次です。"], ["はい。", "|", "次です。", "|"]),
        (["はい。", "」", "！", "次"], ["はい。", "|", "|", "|", "|", "次"]),
        (["はい。", "」「そう」"], ["はい。", "|", "|", "「そう」"]),
        # nothing with speech ended: nothing to settle
        (["😊"], ["|", "😊"]),
        (["はい"], ["|", "はい"]),
    ],
)
def test_settle_ends_the_sentences_whose_end_is_seen(
    deltas: list[str], expected: list[str]
) -> None:
    """After each delta the stream goes quiet (`settle`, "|" in the expected list); what is
    left comes with `flush`."""
    s = SentenceSplitter()
    got: list[str] = []
    for delta in deltas:
        got += s.feed(delta)
        got += s.settle() + ["|"]
    got += s.flush()
    assert got == expected
