"""`engine.text.from_phrases`: speech from given accent phrases (the VOICEVOX API's edits)."""

from __future__ import annotations

import dataclasses

import pytest

from engine.text import analyze
from engine.text.accents import AccentPhrase, accent_phrases
from engine.text.from_phrases import PhrasedText, analysis_of_phrases, mora_phones

TEXT = "こんにちは、元気ですか？"


def test_phones_and_tones_as_the_text_reads():
    """Unedited phrases give the phones and tones that reading the text gives."""
    phrases = accent_phrases(TEXT)
    from_phrases = analysis_of_phrases(phrases)
    from_text = analyze(TEXT)
    assert from_phrases.phones == from_text.phones
    assert from_phrases.tones == from_text.tones
    assert sum(from_phrases.word2ph) == len(from_phrases.phone_ids)
    assert len(from_phrases.word2ph) == len(from_phrases.bert_text) + 2


def test_moved_accent_changes_tones_exactly_there():
    phrases = accent_phrases(TEXT)
    before = analysis_of_phrases(phrases)
    moved = [phrases[0], dataclasses.replace(phrases[1], accent=3)]  # ゲ|ンキ → ゲン|キ
    after = analysis_of_phrases(moved)
    assert after.phones == before.phones
    changed = [i for i, (a, b) in enumerate(zip(before.tone_ids, after.tone_ids)) if a != b]
    start = before.phones.index("g")  # ゲ ン キ: g e N k i
    # accent 1: ゲ high, ン キ low; accent 3: ゲ low, ン キ high
    assert changed == list(range(start, start + 5))
    assert after.with_blanks().tone_ids != before.with_blanks().tone_ids


def test_changed_mora_and_inserted_pause():
    phrases = accent_phrases("こんにちは")
    edited = [AccentPhrase(("コ", "ン", "バ", "ン", "ワ"), 5, pause_after=True), phrases[0]]
    a = analysis_of_phrases(edited)
    assert a.phones[1:7] == ["k", "o", "N", "b", "a", "N"]
    assert "," in a.phones
    assert str(PhrasedText(edited)) == "コンバンワ、コンニチワ"


def test_bad_mora_and_accent_refused():
    with pytest.raises(ValueError, match="not a mora"):
        PhrasedText([AccentPhrase(("x",), 1)])
    with pytest.raises(ValueError, match="accent"):
        PhrasedText([AccentPhrase(("コ", "ン"), 3)])
    assert mora_phones("キョ") == ("ky", "o")


def test_sentences_split_after_their_ends():
    phrases = accent_phrases("今日は晴れ") + accent_phrases("明日は雨")
    spoken = PhrasedText(phrases, ends=[1])
    assert str(spoken) == "キョオワハレ。アシタワアメ"
    first, second = spoken.sentences()
    assert first.phrases == tuple(phrases[:2]) and second.phrases == tuple(phrases[2:])
    assert PhrasedText(phrases).sentences() == [PhrasedText(phrases)]
