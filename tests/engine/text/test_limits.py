"""`engine.text.limits`: the text path's bounds hold where the cost arises (issue 54, 3 and 4).

Hostile text (long runs of one letter, digit, mark, emoji, combining mark) costs about what
ordinary text of its length costs; a long Latin word is spelled, never given to kanalizer; no
sentence OpenJTalk cannot take; a long phrase list is spoken as sentences within the bounds
without the synthesizer's memory blowing up.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from engine.text import analyze
from engine.text.accents import AccentPhrase, accent_phrases
from engine.text.english import kanalizer_reading, read_latin, spell
from engine.text.from_phrases import PhrasedText, analysis_of_phrases
from engine.text.limits import (
    MAX_LATIN_WORD,
    MAX_SENTENCE_CHARS,
    MAX_SENTENCE_MORAE,
    MAX_SENTENCE_PHONES,
)
from engine.text.pipeline import sentences_of
from tests.helpers.paths import REPO_ROOT as REPO

ORDINARY_JA = (
    "明日の朝は七時に起きて、駅まで歩いてから電車に乗ります。"
    "会議の資料は昨日のうちに用意しておいたので、心配はいりません。"
    "夕方には雨が降るそうなので、傘を持って出かけましょう。"
)
ORDINARY_EN = (
    "the kitchen light turned on while the morning news played quietly in the living room "
    "and somebody opened the garage door before breakfast was ready "
)


def _repeat(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def _text_path(text: str) -> None:
    """What a neural voice's request runs on text: rewrite, split, analyse each sentence."""
    kanalizer_reading.cache_clear()
    for sentence in sentences_of(text):
        analyze(sentence)


def _best_of(fn: Callable[[], None], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("digits", "1" * 4000),
        ("grouped digits", _repeat("111,", 4000)),
        ("emoji", "😀" * 4000),
        ("combining marks", "a" + "\u0301" * 3999),
        ("spaces", "あ" + " " * 3999),
        ("percent signs", "%" * 4000),
        ("one letter", "a" * 1500),
        ("capitals", "A" * 1500),
        ("two letters", "ef" * 750),
    ],
)
def test_hostile_text_costs_like_ordinary_text(name: str, text: str) -> None:
    ordinary = _repeat(ORDINARY_JA, len(text))
    _text_path(ordinary)  # imports and dictionaries loaded
    hostile_s = _best_of(lambda: _text_path(text))
    ordinary_s = _best_of(lambda: _text_path(ordinary))
    assert hostile_s < 4 * ordinary_s + 0.05, (name, hostile_s, ordinary_s)


def test_random_letters_cost_like_ordinary_text() -> None:
    """Letters with no word in them (one 1,200-letter word) cost about what ordinary text of
    their length costs: spelled, never handed to kanalizer whole."""
    import random

    rnd = random.Random(7)
    letters = "".join(rnd.choice("etaoinshrdlucmfwyp") for _ in range(1200))
    ordinary = _repeat(ORDINARY_JA, len(letters))
    _text_path(ordinary)
    hostile_s = _best_of(lambda: _text_path(letters), rounds=2)
    ordinary_s = _best_of(lambda: _text_path(ordinary), rounds=2)
    assert hostile_s < 4 * ordinary_s + 0.05, (hostile_s, ordinary_s)


def test_a_long_latin_word_is_spelled(monkeypatch: pytest.MonkeyPatch) -> None:
    import kanalizer

    real = kanalizer.convert
    asked: list[str] = []

    def recording(word: str, **kwargs: object) -> str:
        asked.append(word)
        return str(real(word, **kwargs))

    monkeypatch.setattr(kanalizer, "convert", recording)
    kanalizer_reading.cache_clear()
    for word in ("a" * 3000, "ef" * 700, "x" + "a" * MAX_LATIN_WORD):
        assert read_latin(word) == spell(word), word
    assert read_latin("EF" * 20) == spell("EF" * 20)
    assert not asked or max(len(w) for w in asked) <= MAX_LATIN_WORD
    assert read_latin("international") == "インターナショナル"  # kanalizer's, as before
    assert asked == ["international"]


def test_long_numbers_are_read_digit_by_digit() -> None:
    for text in ("1" * 5000, "1" * 60, _repeat("111,", 300), "3." + "1" * 100):
        for sentence in sentences_of(text):
            assert len(sentence) <= MAX_SENTENCE_CHARS
            assert analyze(sentence).phones[1:-1], sentence  # no OverflowError, a reading
    assert analyze("1" * 60).norm_text == "一" * 60  # without the rewrite pass too
    assert analyze("23.5").norm_text == "二十三点五"  # the reference's reading kept


_OPENJTALK_PROBE = """
import json, sys
from engine.text import analyze
from engine.text.accents import accent_phrases
from engine.text.pipeline import sentences_of
lengths = []
for text in ("あ" + "!" * 3000, "!" * 3000, "あ。" + "-" * 3000, "あ" + "？" * 3000):
    for s in sentences_of(text):
        lengths.append(len(s))
        analyze(s)
        accent_phrases(s)
print(json.dumps(lengths))
"""


def test_no_sentence_is_too_long_for_openjtalk() -> None:
    """A terminator run or a run of marks after a sentence's end made one sentence of 3,000
    characters, and OpenJTalk crashed the process on it (segfault)."""
    done = subprocess.run(
        [sys.executable, "-c", _OPENJTALK_PROBE],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lengths = json.loads(done.stdout.strip().splitlines()[-1])
    assert lengths and max(lengths) <= MAX_SENTENCE_CHARS


def _phrases(morae: int) -> list[AccentPhrase]:
    return [AccentPhrase(tuple("アイウエオカキクケコ"), 3) for _ in range(morae // 10)]


def test_a_phrase_list_is_cut_into_sentences_within_the_bounds() -> None:
    long = PhrasedText(
        _phrases(2000) + [AccentPhrase(tuple("キョ" * 400), 2, pause_after=True)], ends=[49]
    )
    sentences = long.sentences()
    for s in sentences:
        counted = analysis_of_phrases(s.phrases).phones[1:-1]
        assert sum(len(p.morae) for p in s.phrases) <= MAX_SENTENCE_MORAE
        assert len(counted) <= MAX_SENTENCE_PHONES
    # nothing lost, in order: the morae joined are the given ones
    given = [m for p in long.phrases for m in p.morae]
    assert [m for s in sentences for p in s.phrases for m in p.morae] == given
    # the client's sentence end is kept: the first sentences end after phrase 49
    assert sum(len(s.phrases) for s in sentences[:1]) <= 50
    assert any(sum(len(x.phrases) for x in sentences[: k + 1]) == 50 for k in range(3))


def test_a_short_query_is_spoken_as_before() -> None:
    """Within the bounds the sentences are exactly those of the client's ends (the voice
    gets the same phrases, so the same audio)."""
    phrases = accent_phrases("今日は晴れ") + accent_phrases("明日は雨でしょう")
    spoken = PhrasedText(phrases, ends=[1])
    first, second = spoken.sentences()
    assert first.phrases == tuple(phrases[:2]) and second.phrases == tuple(phrases[2:])
    assert PhrasedText(phrases).sentences() == [PhrasedText(phrases)]
    whole = PhrasedText(_phrases(MAX_SENTENCE_MORAE))  # at the bound: one sentence
    assert [s.phrases for s in whole.sentences()] == [whole.phrases]


_SPEAK_LONG = """
import json, resource
from engine.neural.loader import load_neural_voice
from engine.speaker import Speaker
from engine.text.accents import AccentPhrase
from engine.text.from_phrases import PhrasedText
from tests.helpers.voices import ONE_THREAD, FakeBert, shared_small_root

bert = FakeBert()
voice = load_neural_voice("small", shared_small_root(), bert=bert, options=ONE_THREAD)
speaker = Speaker(voice, rewrite=False)
speaker.generate(PhrasedText([AccentPhrase(("コ", "ン", "ニ", "チ", "ワ"), 5)]))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
bert.calls.clear()
phrases = [AccentPhrase(tuple("アイウエオカキクケコ"), 3) for _ in range(100)]
audio = speaker.generate(PhrasedText(phrases))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({
    "bert_texts": [t for call in bert.calls for t in call],
    "growth_mb": (after - before) / 1024,
    "seconds": audio.duration,
}))
"""


def test_a_thousand_morae_spoken_in_bounded_sentences_and_memory() -> None:
    """Through `Speaker.generate` on the small neural voice: the voice renders sentences of
    at most `MAX_SENTENCE_MORAE` morae (BERT reads one character per mora and mark), and the
    process's peak memory grows by far less than one 1,000-mora sentence took."""
    done = subprocess.run(
        [sys.executable, "-c", _SPEAK_LONG],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    texts = found["bert_texts"]
    assert len(texts) >= 1000 // MAX_SENTENCE_MORAE
    assert all(len(t) <= MAX_SENTENCE_MORAE + 1 for t in texts), [len(t) for t in texts]
    assert sum(len(t) for t in texts) >= 1000
    assert found["growth_mb"] < 1024, found["growth_mb"]
    assert found["seconds"] > 60
