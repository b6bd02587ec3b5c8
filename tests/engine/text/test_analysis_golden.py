"""Frontend parity with the reference (Style-Bert-VITS2 2.5.0): every golden line, exactly."""

from __future__ import annotations

import json

import pytest

from engine.text import Analysis, analyze
from engine.text.symbols import LANGUAGE_ID_MAP, LANGUAGE_TONE_START_MAP, PUNCTUATIONS, SYMBOLS
from tests.helpers.paths import DATA

GOLDEN = [
    json.loads(line)
    for line in (DATA / "frontend_golden.jsonl").read_text(encoding="utf-8").splitlines()
]
BERT_GOLDEN = [
    json.loads(line)
    for line in (DATA / "bert_golden_frontend.jsonl").read_text(encoding="utf-8").splitlines()
]
FIELDS = ("norm_text", "phones", "tones", "word2ph", "phone_ids", "tone_ids", "lang_ids")


def test_golden_file_is_complete() -> None:
    assert len(GOLDEN) == 64
    assert sum("error" in r for r in GOLDEN) == 1


def test_symbol_table_matches_reference() -> None:
    ref = json.loads((DATA / "symbols.json").read_text(encoding="utf-8"))
    assert list(SYMBOLS) == ref["symbols"]
    assert list(PUNCTUATIONS) == ref["punctuations"]
    assert LANGUAGE_ID_MAP == ref["language_id_map"]
    assert LANGUAGE_TONE_START_MAP == ref["language_tone_start_map"]


@pytest.mark.parametrize("line", [i for i, r in enumerate(GOLDEN, 1) if "error" not in r])
def test_golden_line(line: int) -> None:
    ref = GOLDEN[line - 1]
    r = analyze(ref["text"])
    assert isinstance(r, Analysis)
    for name in FIELDS:
        assert getattr(r, name) == ref[name], name
    b = r.with_blanks()
    assert b.phone_ids == ref["phone_ids_blank"]
    assert b.tone_ids == ref["tone_ids_blank"]
    assert b.lang_ids == ref["lang_ids_blank"]
    assert b.word2ph == ref["word2ph_blank"]
    assert sum(b.word2ph) == len(b.phone_ids)
    assert r.exact
    assert len(r.bert_text) == len(r.word2ph) - 2


@pytest.mark.parametrize("record", BERT_GOLDEN, ids=lambda r: f"bert{r['idx']}")
def test_bert_text_and_word2ph(record: dict) -> None:
    r = analyze(record["text"])
    assert r.norm_text == record["norm_text"]
    assert r.bert_text == record["bert_text"]
    assert r.phones == record["phones"]
    assert r.word2ph == record["word2ph"]
    assert r.with_blanks().word2ph == record["word2ph_blank"]
    # The character tokenizer gives [CLS], one token per character of bert_text, [SEP].
    assert (
        record["tokens"][1:-1] == list(r.bert_text) or len(record["tokens"]) == len(r.bert_text) + 2
    )


def test_with_blanks_is_idempotent_and_keeps_the_rest() -> None:
    r = analyze("こんにちは。")
    b = r.with_blanks()
    assert b.with_blanks() is b
    assert (b.phones, b.tones, b.norm_text, b.bert_text) == (
        r.phones,
        r.tones,
        r.norm_text,
        r.bert_text,
    )
    assert not r.blanks and b.blanks
    assert b.phone_ids[0::2] == [0] * (len(r.phone_ids) + 1)
    assert b.phone_ids[1::2] == r.phone_ids
