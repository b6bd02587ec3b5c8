"""`engine.text.TextPipeline`: one request's text, whole or in deltas, to the parts a voice
renders; and the audio through it is bit for bit what it was before the pipeline existed."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import numpy as np
import pytest

from engine import Speaker
from engine.text import Part, TextPipeline, sentences_of
from tests.helpers.sim_clock import SimulatedClock

# sha256 (first 16 hex digits) of the int16 audio the embedded voice made for these texts
# with the code before the pipeline (speaker.py splitting/rewriting/SSML itself, commit
# 09e64c8): whole text through `stream`, the same text in 3-character deltas, `generate`.
# "ssml" changed on purpose with issue 34 (no clipping): its audio had 199 samples at full
# scale (6d11fd62af9a64c4 with the peaks clipped); the embedded voice now limits a phrase whose
# peaks pass full scale (loudness kept), so it has none. The others never reached full scale.
GOLDEN = {
    "plain": (
        "今日は10:30に会議があります。Home Assistantで照明を50%にします！さようなら",
        ("a871ffdf0dddf964", "a871ffdf0dddf964", "a871ffdf0dddf964"),
    ),
    "ssml": (
        '<speak>はじめに。<break time="400ms"/><prosody rate="fast">速く話します。次も速く'
        '</prosody>ゆっくり。<break strength="strong"/>終わり。</speak>',
        ("d956e71f24c30263", "d956e71f24c30263", "d956e71f24c30263"),
    ),
    "malformed": (
        "<speak>壊れた<b>SSMLです。</speak>",
        ("3f317ab53405811f", "1dc96392a3737b62", "3f317ab53405811f"),
    ),
    "blank": ("  、。 ", ("e3b0c44298fc1c14",) * 3),
}


def _deltas(text: str, n: int = 3) -> list[str]:
    return [text[i : i + n] for i in range(0, len(text), n)] + ["", " "]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


@pytest.mark.parametrize("case", sorted(GOLDEN))
def test_audio_is_bit_identical_to_before_the_pipeline(embedded: Speaker, case: str) -> None:
    text, (whole, deltas, generated) = GOLDEN[case]
    embedded = Speaker(embedded.voice, first_clause=0)  # the behaviour before: sentences only
    got_whole = b"".join(c.pcm_bytes() for c in embedded.stream(text, guard=False))
    got_deltas = b"".join(c.pcm_bytes() for c in embedded.stream(iter(_deltas(text))))
    assert _digest(got_whole) == whole
    assert _digest(got_deltas) == deltas
    assert _digest(embedded.generate(text).pcm_bytes()) == generated


def test_whole_plain_text_is_one_part_rewritten() -> None:
    parts = TextPipeline().whole("会議は10:30です。Home Assistantを開きます！")
    assert len(parts) == 1
    assert parts[0].sentences == tuple(sentences_of("会議は10:30です。Home Assistantを開きます！"))
    assert "10時30分" in parts[0].sentences[0] and "ホームアシスタント" in parts[0].sentences[1]
    assert TextPipeline(rewrite=False).whole("10:30です。")[0].sentences == ("10:30です。",)


def test_deltas_give_parts_as_sentences_complete() -> None:
    pipe = TextPipeline()
    assert pipe.feed("こんに") == []
    (part,) = pipe.feed("ちは。今日")
    assert part == Part(("こんにちは。",)) and part.chars == 6  # as it arrived
    assert pipe.feed("は") == []
    assert pipe.close() == [Part(("今日は",))]


def test_ssml_in_deltas_gives_rates_and_breaks() -> None:
    pipe = TextPipeline()
    parts: list[Part] = []
    for delta in _deltas(
        '<speak>一。<break time="0.5s"/><prosody rate="slow">二。</prosody></speak>'
    ):
        parts += pipe.feed(delta)
    parts += pipe.close()
    assert parts == [Part(("一。",)), Part(silence=0.5), Part(("二。",), rate=0.75)]


def test_a_stream_waits_until_its_start_says_whether_it_is_ssml() -> None:
    pipe = TextPipeline(rewrite=False)
    assert pipe.feed("  <sp") == []  # could still be SSML
    # it is not: plain text, nothing lost (a sentence ends once the next character shows)
    assert pipe.feed("an>x。次") == [Part(("<span>x。",))]
    pipe = TextPipeline(rewrite=False)
    assert pipe.feed("<") == []
    assert pipe.close() == [Part(("<",))]


def test_deltas_must_be_text() -> None:
    with pytest.raises(TypeError, match="must be str"):
        TextPipeline().feed(b"bytes")  # type: ignore[arg-type]


def test_first_part_may_end_at_a_clause_once_long_enough() -> None:
    pipe = TextPipeline(rewrite=False, first_clause=8)
    assert pipe.feed("はい、") == []  # a clause, but too short
    assert pipe.feed("明日の天気は晴れ、") == [Part(("はい、明日の天気は晴れ、",), clause=True)]
    # only the first part: later clauses wait for their sentence to end
    assert pipe.feed("最高気温は二十度、最低気温は") == []
    assert pipe.feed("十度です。次") == [Part(("最高気温は二十度、最低気温は十度です。",))]
    off = TextPipeline(rewrite=False)
    assert off.feed("はい、明日の天気は晴れ、") == []


def test_a_short_opening_clause_ends_the_first_part_at_the_default() -> None:
    from engine.options import DEFAULT_FIRST_CLAUSE

    pipe = TextPipeline(rewrite=False, first_clause=DEFAULT_FIRST_CLAUSE)
    assert pipe.feed("はい") == []
    assert pipe.feed("、リ") == [Part(("はい、",), clause=True)]
    assert TextPipeline(rewrite=False, first_clause=DEFAULT_FIRST_CLAUSE).feed("あ、と") == []


@pytest.mark.parametrize("comma", [",", "，"])
def test_a_comma_between_digits_is_no_pause(comma: str) -> None:
    pipe = TextPipeline(rewrite=False, first_clause=3)
    assert pipe.feed(f"電力は1{comma}") == []  # a digit may follow: not yet
    assert pipe.feed("200ワットで") == []  # it did: one number
    assert pipe.feed("、昨日") == [Part((f"電力は1{comma}200ワットで、",), clause=True)]
    late = TextPipeline(rewrite=False, first_clause=3)
    assert late.feed(f"電力は12{comma}") == []
    assert late.feed(" 昨日") == [Part((f"電力は12{comma}",), clause=True)]  # no digit came
    words = TextPipeline(rewrite=False, first_clause=3)
    assert words.feed(f"Philips Hue{comma}") == [Part((f"Philips Hue{comma}",), clause=True)]


@pytest.mark.parametrize(
    ("text", "i", "pause"),
    [
        ("はい、", 2, True),
        ("1、2", 1, True),  # 、 never groups digits
        ("1,200", 1, False),
        ("1,", 1, False),  # what follows is not seen yet
        ("1, 2", 1, True),
        ("Hue,", 3, True),
        ("晴れ", 1, False),
    ],
)
def test_is_pause_mark(text: str, i: int, pause: bool) -> None:
    from engine.text.pipeline import is_pause_mark

    assert is_pause_mark(text, i) is pause


@pytest.mark.parametrize(("first_clause", "early"), [(12, True), (0, False)])
async def test_a_stream_speaks_its_first_clause_before_the_sentence_ends(
    embedded: Speaker, first_clause: int, early: bool
) -> None:
    import asyncio

    heard = asyncio.Event()
    came_early: list[bool] = []

    async def deltas():  # type: ignore[no-untyped-def]
        yield "はい、明日の天気は晴れ、"
        try:  # the rest of the sentence only once audio came (or it is clear none will)
            await asyncio.wait_for(heard.wait(), 60 if early else 0.5)
            came_early.append(True)
        except asyncio.TimeoutError:
            came_early.append(False)
        yield "最高気温は二十度です。"

    speaker = Speaker(embedded.voice, first_clause=first_clause)
    chunks = []
    async for chunk in speaker.astream(deltas(), guard=False):
        chunks.append(chunk)
        heard.set()
    assert came_early == [early]
    assert sum(c.duration for c in chunks) > 2.0  # the whole sentence was spoken


def _silences(audio: np.ndarray, rate: int) -> list[float]:
    """Lengths of the runs of 10 ms windows below 2 % of the peak, inside the audio."""
    win = rate // 100
    loud = np.abs(audio[: len(audio) // win * win].reshape(-1, win)).max(axis=1)
    quiet = loud < 0.02 * loud.max()
    runs, n = [], 0
    for q in quiet:
        if q:
            n += 1
        elif n:
            runs.append(n / 100)
            n = 0
    return runs[1:] if quiet[0] else runs  # a leading run is the start, not a pause


def test_the_pause_at_a_clause_cut_is_put_back(embedded: Speaker) -> None:
    """The first part's pause at its 、 goes with its trimmed edges: at least CLAUSE_PAUSE is
    heard there when the rest is ready at once (deltas back to back)."""
    from engine.speaker import CLAUSE_PAUSE

    text = "はい、リビングの照明を消しました。"
    waited: list[float] = []

    def deltas(clock: SimulatedClock) -> Iterator[str]:
        for i in range(0, len(text), 2):
            yield text[i : i + 2]
            if i == 2 and waited:  # the clause was spoken; the rest comes late
                clock.advance(waited[0])

    def spoken(wait: float) -> tuple[list[float], float]:
        waited[:] = [wait] if wait else []
        clock = SimulatedClock()  # frozen but where the test moves it
        speaker = Speaker(embedded.voice, first_clause=3, clock=clock)
        chunks = list(speaker.stream(deltas(clock), guard=False, seed=1))
        assert len(chunks) >= 2  # cut
        audio = np.concatenate([c.data for c in chunks]).astype(np.float32)
        return _silences(audio, speaker.sample_rate), chunks[0].num_samples / speaker.sample_rate

    silences, first = spoken(0.0)
    assert CLAUSE_PAUSE >= 0.2
    assert max(silences) >= 0.25  # trimmed, the cut left 0.1 s: the pause is back
    assert first < 1.0  # the first part is the clause only
    late, _ = spoken(first + 0.5)  # the listener waited 0.5 s for the rest: no pause added
    assert max(late) < 0.2


def test_readings_are_what_the_voice_gets_with_accents() -> None:
    found = TextPipeline().readings('<speak>会議は10:30です。<break time="1s"/>雨です。</speak>')
    assert found.sentences == ("会議は10時30分です。", "雨です。")  # SSML gone, rewritten
    assert found.text == "会議は10時30分です。雨です。"
    kana = "".join(p.reading for p in found.phrases)
    assert "ジュウジサンジュップン" in kana and kana.endswith("アメデス")
    assert TextPipeline(rewrite=False).readings("10:30").text == "10:30"


def test_settle_hands_out_a_finished_sentence_once_the_stream_is_quiet() -> None:
    pipe = TextPipeline(rewrite=False)
    assert pipe.settle() == []  # nothing yet (the start is still being sniffed for SSML)
    assert pipe.feed("こんにちは。") == []  # a closing quote could still follow
    assert pipe.settle() == [Part(("こんにちは。",), chars=6)]
    assert pipe.settle() == []
    assert pipe.feed("」と今日は晴れ。") == []
    assert pipe.close() == [Part(("と今日は晴れ。",))]  # the late 」 dropped
