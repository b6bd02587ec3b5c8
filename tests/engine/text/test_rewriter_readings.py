"""English words, numbers and signs as a Japanese household expects them read.

The phrase set tests/data/readings_ha.tsv (Home-Assistant-style phrases with the expected
reading) is scored by `tests.helpers.readings`: phonemes of ``analyze(rewrite(text))``
against those of ``analyze(expected)``. The share read as expected is the README's figure.
"""

from __future__ import annotations

import pytest

from engine.text import analyze, rewrite
from engine.text.english import kanalizer_reading, read_latin
from tests.helpers import readings as score


def test_phrase_set_is_large_enough_and_well_formed() -> None:
    phrases = score.load_phrases()
    assert len(phrases) >= 150
    assert len({p.text for p in phrases}) == len(phrases), "a phrase is listed twice"


def test_phrase_set_reads_as_expected() -> None:
    phrases = score.load_phrases()
    wrong = score.misses(phrases)
    share = 1 - len(wrong) / len(phrases)
    report = "\n".join(
        f"line {p.line}: {p.text!r} -> {got!r}, expected {p.expected!r}" for p, got in wrong
    )
    # the README's figure: every phrase (235 of 235 when it was written)
    assert len(phrases) >= 235 and wrong == [], f"{share:.1%} read as expected\n{report}"


def test_the_comparison_can_fail() -> None:
    # The reference spells an unknown Latin word; the check must see that as wrong.
    assert score.phonemes("Backupが完了") != score.phonemes("バックアップが完了")
    assert score.phonemes(rewrite("Backupが完了")) == score.phonemes("バックアップが完了")


@pytest.mark.parametrize(
    ("word", "kanalizer_says"),
    [
        ("garage", "ガラージュ"),
        ("solar", "ソラー"),
        ("hello", "ヘロ"),
        ("chromecast", "クロメキャスト"),
    ],
)
def test_table_fixes_kanalizer_errors(word: str, kanalizer_says: str) -> None:
    assert kanalizer_reading(word) == kanalizer_says  # the error the table exists for
    assert rewrite(word) != kanalizer_says
    assert rewrite(word.capitalize()) == rewrite(word)


def test_words_outside_the_table_come_from_kanalizer() -> None:
    assert rewrite("Fireplace") == kanalizer_reading("fireplace")
    assert rewrite("Fireplace").isascii() is False
    # not spelled letter by letter
    assert "エフアイ" not in rewrite("Fireplace")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Living Room", "リビングルーム"),  # a phrase, no pause inside
        ("living-room", "リビングルーム"),
        ("living_room", "リビングルーム"),
        ("SwitchBot", "スイッチボット"),  # CamelCase
        ("KitchenLight", "キッチンライト"),
        ("USB", "ユーエスビー"),  # acronyms spelled the Japanese way
        ("XYZ", "エックスワイゼット"),
        ("NASA", "ナサ"),  # unless the table says otherwise
        ("PS5", "ピーエスファイブ"),  # a digit glued to an acronym: English
        ("iPhone 15", "アイフォーン 15"),  # a separate number: Japanese
        ("Kid's Room", "キッズルーム"),
        ("Mike's", read_latin("Mike") + "ス"),  # possessive
        ("Sensors", "センサー"),  # plural of a table word
        ("km", "ケーエム"),  # no vowel: spelled
        ("会議室B", "会議室B"),  # a lone capital: OpenJTalk reads letter names itself
        ("Good morning!", "グッドモーニング!"),
    ],
)
def test_shapes(text: str, expected: str) -> None:
    assert rewrite(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3.14", "3点イチヨン"),
        ("0.05", "0点ゼロゴ"),
        ("23.5", "23.5"),  # one digit after the point: the normaliser reads 二十三点五
        ("〒100-0001", "イチゼロゼロのゼロゼロゼロイチ"),
        ("100-0001", "イチゼロゼロのゼロゼロゼロイチ"),
        ("100-2000円", "100から2000円"),
        ("10-20℃", "10から20度"),
        ("3-2で勝利", "3-2で勝利"),  # no unit after it: no range
        ("+81 90-1234-5678", "プラスハチイチのキューゼロのイチニーサンヨンのゴーロクナナハチ"),
        ("09012345678", "ゼロキューゼロのイチニーサンヨンのゴーロクナナハチ"),
        ("1st", "ファースト"),
        ("23rd", "23番目"),
        ("16:9", "16対9"),
        ("½", "2分の1"),
        ("1/100", "100分の1"),
        ("1/0", "1/0"),
        ("+/-5", "プラスマイナス5"),
        ("No.5", "ナンバー5"),
        ("v1.2.3", "バージョン1点2点3"),
        ("ver.2.0", "バージョン2点ゼロ"),
        ("open for 10 minutes", "オープンフォーテンミニッツ"),  # a number in an English sentence
        ("I have 121 cats", "アイハブワンハンドレッドトゥエンティーワンキャッツ"),
        ("iPhone 15 Pro", "アイフォーン 15 プロ"),  # a name: the number stays Japanese
        ("It is 2026 now", "イットイズ 2026 ナウ"),  # years too
    ],
)
def test_numbers_and_signs(text: str, expected: str) -> None:
    assert rewrite(text) == expected


def test_every_rewritten_phrase_analyzes() -> None:
    for p in score.load_phrases():
        r = analyze(rewrite(p.text))
        assert sum(r.word2ph) == len(r.phones)


@pytest.mark.parametrize(
    ("n", "words"),
    [
        (0, "zero"),
        (7, "seven"),
        (19, "nineteen"),
        (20, "twenty"),
        (42, "forty two"),
        (100, "one hundred"),
        (121, "one hundred twenty one"),
        (3000, "three thousand"),
        (9999, "nine thousand nine hundred ninety nine"),
        (10000, None),
    ],
)
def test_english_numbers(n: int, words: str | None) -> None:
    from engine.text.english import english_number

    assert english_number(n) == words
