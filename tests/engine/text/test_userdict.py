"""User dictionary: words change phones and accents through OpenJTalk; files load or fail
clearly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
    read_user_dictionary,
)
from tests.helpers.paths import DATA
from tests.helpers.program import program_env

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


# -- the one check every word passes: bounds OpenJTalk survives (issue 54) --------------------

LONG = {n: "a" * n for n in (2048, 5000)}


@pytest.mark.parametrize(
    ("surface", "reading", "accent", "priority", "pos", "field", "message"),
    [
        ("漢" * 65, "カン", None, 5, "noun", "surface", "at most 64 characters, got 65"),
        (LONG[2048], "エー", None, 5, "noun", "surface", "at most 64 characters, got 2048"),
        (LONG[5000], "エー", None, 5, "noun", "surface", "at most 64 characters, got 5000"),
        ("㍿" * 17, "カブ", None, 5, "noun", "surface", "got 68 once normalised (NFKC)"),
        ("1234 " * 12, "イチ", None, 5, "noun", "surface", "once numbers and symbols are"),
        ("A\x00B", "エー", None, 5, "noun", "surface", "control character (U+0000)"),
        ("A\x1b[31mB", "エー", None, 5, "noun", "surface", "control character (U+001B)"),
        ("A\nB", "エー", None, 5, "noun", "surface", "control character (U+000A)"),
        ("A\u202eB", "エー", None, 5, "noun", "surface", "invisible formatting character"),
        ("A\ud800", "エー", None, 5, "noun", "surface", "lone surrogate"),
        ("A\ue000", "エー", None, 5, "noun", "surface", "private-use character"),
        ("\U000f0000", "ア", None, 5, "noun", "surface", "private-use character"),
        ("A\u2028B", "エー", None, 5, "noun", "surface", "line separator"),
        ("\ufdfa", "ア", None, 5, "noun", "surface", "no readable characters"),
        ("鬼滅", "カ" * 65, None, 5, "noun", "reading", "at most 64 characters, got 65"),
        ("鬼滅", "カ" * 5000, None, 5, "noun", "reading", "at most 64 characters, got 5000"),
        ("鬼滅", "キメツ", 4, 5, "noun", "accent", "from 0 to 3"),
        ("鬼滅", "キメツ", None, 11, "noun", "priority", "from 0 to 10"),
        ("鬼滅", "キメツ", None, -1, "noun", "priority", "from 0 to 10"),
        ("鬼滅", "キメツ", None, 5, ["noun"], "pos", "pos must be one of"),
    ],
)
def test_a_word_past_the_bounds_is_refused_naming_the_field(
    surface: str,
    reading: str,
    accent: int | None,
    priority: int,
    pos: str,
    field: str,
    message: str,
) -> None:
    with pytest.raises(UserDictionaryError) as err:
        UserWord.make(surface, reading, accent, priority, pos, where="w.csv:2")
    assert err.value.field == field
    assert message in str(err.value) and str(err.value).startswith("w.csv:2")
    assert len(str(err.value)) < 200  # a long value is quoted cut short


def test_words_at_the_bounds_compile_and_are_read() -> None:
    from engine.text.userdict import MAX_READING, MAX_SURFACE

    assert (MAX_SURFACE, MAX_READING) == (64, 64)
    add_word("漢" * MAX_SURFACE, "カ" * MAX_READING, MAX_READING, priority=10)
    add_word("Ａ" * MAX_SURFACE, "ア" * MAX_READING, 0, priority=0)  # full width: 3 bytes each
    assert analyze("漢" * MAX_SURFACE + "です").phones[1:-5] == ["k", "a"] * MAX_READING
    assert analyze("A" * MAX_SURFACE).phones[1:-1] == ["a"] * MAX_READING


def _child(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter (OpenJTalk's crash would be a signal, not an error)."""
    script = tmp_path / "child.py"
    script.write_text(
        "import logging, sys\n"
        "logging.basicConfig(level=logging.WARNING, stream=sys.stderr)\n" + code,
        encoding="utf-8",
    )
    return subprocess.run(
        [sys.executable, str(script)],
        env=program_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("length", [2048, 5000])
def test_files_holding_a_long_word_load_without_it(tmp_path: Path, length: int) -> None:
    """As an old version saved it: the process lives, the word is skipped naming the file and
    line, the other words are read (load, and the watcher the server uses)."""
    csv_path = tmp_path / "words.csv"
    csv_path.write_text(f"surface,reading\n{'a' * length},エー\n鬼滅,キメツ,0\n", encoding="utf-8")
    json_path = tmp_path / "words.json"
    json_path.write_text(
        json.dumps(
            [
                {"surface": "b" * length, "reading": "ビー"},
                {"surface": "呪術", "reading": "ジュジュツ"},
            ]
        ),
        encoding="utf-8",
    )
    done = _child(
        "from engine.text import analyze\n"
        "from engine.text.userdict import load_user_dictionary, clear_user_dictionary\n"
        "from engine.text.userdict_watch import watch_user_dictionaries\n"
        f"print(load_user_dictionary({str(csv_path)!r}, strict=False))\n"
        "clear_user_dictionary()\n"
        f"print(len(watch_user_dictionaries([{str(csv_path)!r}, {str(json_path)!r}]).surfaces))\n"
        "print(' '.join(analyze('鬼滅の呪術').phones))\n",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["1", "2", "_ k i m e ts u n o j u j u ts u _"]
    assert f"{csv_path}:2: surface must be at most 64 characters, got {length}" in done.stderr
    assert f"{json_path}: words[0]: surface must be at most 64 characters" in done.stderr


def test_a_word_built_without_make_is_skipped_when_compiled(tmp_path: Path) -> None:
    done = _child(
        "from engine.text import analyze\n"
        "from engine.text.userdict import UserWord, active_dictionary\n"
        "d = active_dictionary()\n"
        "d.update([UserWord('a' * 2048, 'エー'), UserWord('鬼滅', 'キメツ', 0)])\n"
        "d.apply()\n"
        "print(' '.join(analyze('鬼滅').phones))\n",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "_ k i m e ts u _"
    assert "user dictionary word skipped" in done.stderr and "got 2048" in done.stderr


def test_csv_records_the_csv_module_refuses_are_problems_naming_their_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "words.csv"
    big = "x" * 200_000  # past the csv module's field limit
    path.write_text(
        f'"鬼\n滅",キメツ\n{big},エックス\n早声,ハヤコエ\n林,hayashi\n', encoding="utf-8"
    )
    words, problems = read_user_dictionary(path)
    assert [w.surface for w in words] == ["早声"]
    assert [p[len(str(path)) :].split(":")[1] for p in problems] == ["1", "3", "5 ('林')"]
    assert "control character (U+000A)" in problems[0]  # a record over two lines: its first
    assert "field larger than field limit" in problems[1]
    assert "katakana" in problems[2]


def test_a_json_number_past_pythons_digit_limit_is_a_file_error(tmp_path: Path) -> None:
    path = tmp_path / "words.json"
    path.write_text('[{"surface": "a", "reading": "ア", "accent": ' + "9" * 5000 + "}]")
    with pytest.raises(UserDictionaryError, match="invalid JSON"):
        read_user_dictionary(path)
