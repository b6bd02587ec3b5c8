"""User dictionary: words change phones and accents through OpenJTalk; files load or fail
clearly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine.text import analyze, rewrite
from engine.text.userdict import (
    UserDictionary,
    UserDictionaryError,
    UserWord,
    active_dictionary,
    active_surfaces,
    add_word,
    clear_user_dictionary,
    count_morae,
    load_user_dictionary,
)
from tests.helpers.paths import DATA

GOLDEN = DATA / "frontend_golden.jsonl"


@pytest.fixture(autouse=True)
def _clean_dictionary():
    clear_user_dictionary()
    yield
    clear_user_dictionary()


def test_word_sets_phones_and_accent() -> None:
    before = analyze("鬼滅の刃")
    assert before.phones[1:7] == ["o", "n", "i", "m", "e", "ts"]
    add_word("鬼滅", "きめつ", 0)
    after = analyze("鬼滅の刃")
    assert after.phones == ["_", "k", "i", "m", "e", "ts", "u", "n", "o", "h", "a", "_"]
    # accent 0 (heiban): low first mora, then high
    assert after.tones[1:7] == [0, 0, 1, 1, 1, 1]
    assert after.bert_text == "鬼滅の刃"  # BERT still reads the written word
    add_word("鬼滅", "キメツ", 1)  # replace: accent on the first mora
    assert analyze("鬼滅の刃").tones[1:7] == [1, 1, 0, 0, 0, 0]


def test_accent_position_sets_the_fall() -> None:
    add_word("Home Assistant", "ホームアシスタント", 5)
    r = analyze("Home Assistantが起動しました。")
    assert r.phones[1:16] == [
        "h",
        "o",
        "o",
        "m",
        "u",
        "a",
        "sh",
        "i",
        "s",
        "u",
        "t",
        "a",
        "N",
        "t",
        "o",
    ]
    # ho | o mu a shi (high) | su ta n to (low): falls after the 5th mora
    assert r.tones[1:16] == [0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    assert len(r.word2ph) == len(r.bert_text) + 2 and sum(r.word2ph) == len(r.phones)


def test_user_word_wins_over_builtin_latin_reading() -> None:
    assert rewrite("LEDが点灯") == "エルイーディーが点灯"
    add_word("LED", "レッド", 1)
    assert "LED" in active_surfaces()
    text = rewrite("LEDが点灯")
    assert text == "LEDが点灯"
    assert analyze(text).phones[1:5] == ["r", "e", "q", "d"]


def test_accent_none_uses_openjtalk_guess_and_clear_restores_reference() -> None:
    add_word("ほげ山", "ホゲヤマ")
    assert analyze("ほげ山").phones[1:9] == ["h", "o", "g", "e", "y", "a", "m", "a"]
    clear_user_dictionary()
    assert active_surfaces() == frozenset()
    # With the dictionary cleared, golden lines are exact again.
    for line in GOLDEN.read_text(encoding="utf-8").splitlines()[:12]:
        ref = json.loads(line)
        r = analyze(ref["text"])
        assert (r.phones, r.tones, r.word2ph) == (ref["phones"], ref["tones"], ref["word2ph"])


def test_load_csv_and_json(tmp_path: Path) -> None:
    csv_path = tmp_path / "words.csv"
    csv_path.write_text(
        "surface,reading,accent,priority\n# a comment\n鬼滅,キメツ,0\n推しの子,おしのこ,,7\n",
        encoding="utf-8",
    )
    assert load_user_dictionary(csv_path) == 2
    assert analyze("鬼滅").phones[1:4] == ["k", "i", "m"]
    assert active_dictionary().words[1] == UserWord("推しの子", "オシノコ", None, 7, "proper_noun")
    json_path = tmp_path / "words.json"
    json_path.write_text(
        json.dumps({"words": [{"surface": "呪術", "reading": "ジュジュツ", "accent": 1}]}),
        encoding="utf-8",
    )
    assert load_user_dictionary(json_path) == 1
    assert len(active_dictionary()) == 3
    assert analyze("呪術").tones[1:4] == [1, 1, 0]
    # save and reload round trip
    saved = tmp_path / "saved.json"
    active_dictionary().save(saved)
    other = UserDictionary()
    assert other.load(saved) == 3
    assert other.words == active_dictionary().words
    saved_csv = tmp_path / "saved.csv"
    active_dictionary().save(saved_csv)
    assert UserDictionary().load(saved_csv) == 3


@pytest.mark.parametrize(
    ("content", "suffix", "message"),
    [
        ("鬼滅\n", ".csv", "words.csv:1: need at least surface,reading"),
        ("鬼滅,kimetsu\n", ".csv", "must be katakana or hiragana"),
        ("鬼滅,キメツ,9\n", ".csv", "accent must be an integer from 0 to 3"),
        ("鬼滅,キメツ,x\n", ".csv", "words.csv:1: accent must be an integer"),
        ("鬼滅,キメツ,0,11\n", ".csv", "priority must be an integer from 0 to 10"),
        ('[{"surface": "a"}]', ".json", "words[0]: surface and reading are required"),
        (
            '[{"surface": "a", "reading": "ア", "colour": 1}]',
            ".json",
            "unknown field(s) ['colour']",
        ),
        ("{", ".json", "invalid JSON"),
        ("x", ".yaml", "unknown user dictionary format"),
    ],
)
def test_bad_files_name_the_fault(tmp_path: Path, content: str, suffix: str, message: str) -> None:
    path = tmp_path / f"words{suffix}"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UserDictionaryError) as err:
        load_user_dictionary(path)
    assert message in str(err.value)
    assert str(path.name) in str(err.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UserDictionaryError, match="cannot read"):
        load_user_dictionary(tmp_path / "nope.csv")


def test_count_morae() -> None:
    assert count_morae("ホームアシスタント") == 9
    assert count_morae("キャッシュ") == 3
    assert count_morae("ヴァイオリン") == 5


def test_remove_word() -> None:
    add_word("鬼滅", "キメツ", 0)
    assert active_dictionary().remove_word("鬼滅")
    assert analyze("鬼滅").phones[1] == "o"
    assert not active_dictionary().remove_word("鬼滅")


def test_lenient_load_skips_bad_entries_naming_file_and_line(tmp_path: Path, caplog) -> None:
    path = tmp_path / "words.csv"
    path.write_text("surface,reading\n鬼滅,キメツ\n鬼,kimetsu\n早声\n", encoding="utf-8")
    try:
        with caplog.at_level("WARNING"):
            assert load_user_dictionary(path, strict=False) == 1
        assert f"{path}:3" in caplog.text and f"{path}:4" in caplog.text
    finally:
        clear_user_dictionary()


def test_watched_files_reload_on_change_and_keep_words_added_in_code(
    tmp_path: Path, caplog
) -> None:
    from engine.text import add_word, refresh_user_dictionary, reload_user_dictionary
    from engine.text.userdict import active_surfaces
    from engine.text.userdict_watch import (
        unwatch_user_dictionaries,
        watch_user_dictionaries,
    )

    path = tmp_path / "words.json"
    path.write_text('[{"surface": "鬼滅", "reading": "キメツ"}]', encoding="utf-8")
    try:
        add_word("推し", "オシ")
        watcher = watch_user_dictionaries([path])
        assert {"鬼滅", "推し"} <= active_surfaces()
        assert refresh_user_dictionary() is False  # nothing changed: no reload
        path.write_text(
            '[{"surface": "早声", "reading": "ハヤコエ"}, {"surface": 1}]', encoding="utf-8"
        )
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
        with caplog.at_level("WARNING"):
            assert refresh_user_dictionary() is True
        assert "words[1]" in caplog.text and str(path) in caplog.text
        assert "早声" in active_surfaces() and "鬼滅" not in active_surfaces()
        assert "推し" in active_surfaces(), "a word added in code survives a reload"
        path.write_text("{", encoding="utf-8")  # a broken file: its previous words stay
        assert reload_user_dictionary() is True
        assert "早声" in active_surfaces()
        assert watcher.reloads == 3
        unwatch_user_dictionaries()
        assert "早声" not in active_surfaces() and "推し" in active_surfaces()
    finally:
        unwatch_user_dictionaries()
        clear_user_dictionary()
