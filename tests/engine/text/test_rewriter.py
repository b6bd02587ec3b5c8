"""The rewrite pass: each rule with the reading it must produce (text, then phones)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.text import analyze, rewrite


def reading(text: str) -> str:
    """Katakana reading OpenJTalk gives for the rewritten, normalised text."""
    import pyopenjtalk

    norm = analyze(rewrite(text)).norm_text
    return "".join(n["pron"] for n in pyopenjtalk.run_frontend(norm)).replace("’", "")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # times
        ("7:45に出発します。", "7時45分に出発します。"),
        ("7:00", "7時"),
        ("7:05:30", "7時5分30秒"),
        ("7:45 PM", "午後7時45分"),
        ("9:30am", "午前9時30分"),
        ("7:00〜9:00", "7時から9時"),
        ("25:99", "25対99"),  # not a time: a ratio
        # dates
        ("2026/11/29（日）の予定", "2026年11月29日日曜日の予定"),
        ("2026-01-05", "2026年1月5日"),
        ("11/29の天気", "11月29日の天気"),
        ("13/45", "45分の13"),  # no such date: a fraction
        # temperatures
        ("26℃に設定", "26度に設定"),
        ("気温は-3度", "気温はマイナス3度"),
        ("外は-3℃", "外はマイナス3度"),
        ("80°F", "華氏80度"),
        # percent
        ("湿度は45%です。", "湿度は45パーセントです。"),
        ("10~20%", "10から20パーセント"),
        ("12.5％", "12.5パーセント"),
        # currency
        ("$5.99です", "5ドル99セントです"),
        ("$3.00", "3ドル"),
        ("100 USD", "100ドル"),
        ("EUR 20", "20ユーロ"),
        # units
        ("5kmを走った", "5キロメートルを走った"),
        ("60km/hで走行", "時速60キロで走行"),
        ("時速60km/h", "時速60キロ"),
        ("消費電力は1.5kWh", "消費電力は1.5キロワットアワー"),
        ("100Vと15A", "100ボルトと15アンペア"),
        ("1013hPa", "1013ヘクトパスカル"),
        ("10m²", "10平方メートル"),
        ("35μg/m3", "35マイクログラム毎立方メートル"),
        ("3.5GB", "3.5ギガバイト"),
        ("30min", "30分"),
        ("会議室B", "会議室B"),  # a lone capital is no acronym
        # signs and operators
        ("1+1=2", "1プラス1イコール2"),
        ("+5", "プラス5"),
        ("±5度", "プラスマイナス5度"),
        ("3×4", "3かける4"),
        # phone numbers, versions
        ("03-1234-5678", "ゼロサンのイチニーサンヨンのゴーロクナナハチ"),
        ("バージョン2.0.1", "バージョン2点ゼロ点1"),
        # Latin words and acronyms
        ("Wi-Fiがつながらない", "ワイファイがつながらない"),
        ("wifi", "ワイファイ"),
        ("LEDライト", "エルイーディーライト"),
        ("Home Assistantが起動しました", "ホームアシスタントが起動しました"),
        ("home-assistant", "ホームアシスタント"),
        ("OK、了解", "オーケー、了解"),
        ("CPU温度", "シーピーユー温度"),
        ("USB-Cケーブル", "ユーエスビーシーケーブル"),
        ("Bluetoothをオン", "ブルートゥースをオン"),
        ("PM2.5", "ピーエムニーテンゴ"),
        ("ABC株式会社", "エービーシー株式会社"),
        ("Alexa, turn on", "アレクサ, ターンオン"),
        # full-width input is folded first
        ("Ｗｉ－Ｆｉ", "ワイファイ"),
        # untouched
        ("こんにちは。", "こんにちは。"),
    ],
)
def test_rewrite(text: str, expected: str) -> None:
    assert rewrite(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7:45", "シチジヨンジューゴフン"),
        ("-3℃", "マイナスサンド"),
        ("50%", "ゴジュッパーセント"),
        ("Home Assistant", "ホームアシスタント"),
        ("2026/11/29", "ニセンニジューロクネンジューイチガツニジュークニチ"),
        ("$5", "ゴドル"),
        ("60km/h", "ジソクロクジュッキロ"),
    ],
)
def test_reading_after_rewrite(text: str, expected: str) -> None:
    assert reading(text) == expected


def test_phones_differ_from_reference_where_it_reads_badly() -> None:
    # The reference reads -3 with a dash phone; after rewriting it is マイナス.
    assert "-" in analyze("-3度").phones
    phones = analyze(rewrite("-3度")).phones
    assert "-" not in phones
    assert phones[1:9] == ["m", "a", "i", "n", "a", "s", "u", "s"]


def test_protected_words_are_left_alone() -> None:
    assert rewrite("Home Assistantが起動", protect=["Home Assistant"]) == "Home Assistantが起動"
    assert rewrite("7:45のWi-Fi", protect=["Wi-Fi"]) == "7時45分のWi-Fi"


@settings(max_examples=200, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(
            list("0123456789:/-+.,%℃°F$¥ kmgWhAVLBCOKPMUSDabc時日(曜)〜~±×=あ漢")
        ),
        max_size=20,
    )
)
def test_rewrite_never_raises_and_output_analyzes(text: str) -> None:
    out = rewrite(text)
    assert isinstance(out, str)
    r = analyze(out)
    assert sum(r.word2ph) == len(r.phones)
