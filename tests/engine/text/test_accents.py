"""`engine.text.accents`: readings by accent phrase from OpenJTalk's labels."""

from __future__ import annotations

import pytest

from engine.text import add_word, clear_user_dictionary
from engine.text.accents import AccentPhrase, accent_phrases, pitch_pattern


@pytest.fixture(autouse=True)
def _clean_dictionary():
    clear_user_dictionary()
    yield
    clear_user_dictionary()


def _shape(phrases: list[AccentPhrase]) -> list[tuple[str, int, bool]]:
    return [(p.reading, p.accent, p.pause_after) for p in phrases]


def test_phrases_morae_accents_and_pauses():
    phrases = accent_phrases("東京都に行きました、雨です。")
    assert _shape(phrases) == [
        ("トオキョオトニ", 4, False),
        ("イキマシタ", 3, True),  # the comma is a pause
        ("アメデス", 1, False),
    ]
    assert phrases[0].morae == ("ト", "オ", "キョ", "オ", "ト", "ニ")  # キョ is one mora


def test_pitch_line_as_voicevox_draws_it():
    assert pitch_pattern(4, 1) == (True, False, False, False)  # atamadaka
    assert pitch_pattern(4, 4) == (False, True, True, True)  # flat (heiban) / odaka
    assert pitch_pattern(5, 3) == (False, True, True, False, False)
    assert pitch_pattern(3, 0) == (False, True, True)
    assert pitch_pattern(0, 0) == ()
    assert accent_phrases("雨です")[0].pitches == (True, False, False, False)


def test_special_morae_and_question():
    (phrase,) = accent_phrases("きって")
    assert phrase.morae == ("キ", "ッ", "テ")
    (phrase,) = accent_phrases("ほん")
    assert phrase.morae == ("ホ", "ン")
    assert accent_phrases("桜が咲く？")[-1].question
    assert not accent_phrases("桜が咲く。")[-1].question


def test_nothing_to_read():
    assert accent_phrases("") == []
    assert accent_phrases("   ") == []


def test_user_dictionary_word_changes_reading_and_accent():
    before = accent_phrases("葦簀野さん")
    add_word("葦簀野", "ヨシズノ", 2)
    after = accent_phrases("葦簀野さん")
    assert after != before
    assert after[0].morae[:4] == ("ヨ", "シ", "ズ", "ノ")
    assert after[0].accent == 2
    assert after[0].pitches[:3] == (False, True, False)
