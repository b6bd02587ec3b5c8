"""The char tokenizer reproduces the reference (slow BertJapaneseTokenizer) ids exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.bert.tokenizer import CharTokenizer
from tests.helpers.paths import BERT_SMALL

RECORDS = [
    json.loads(line)
    for line in (BERT_SMALL / "bert_golden.jsonl").read_text(encoding="utf-8").splitlines()
]


@pytest.fixture(scope="module")
def tok() -> CharTokenizer:
    return CharTokenizer.from_dir(BERT_SMALL)


@pytest.mark.parametrize("rec", RECORDS, ids=lambda r: f"s{r['idx']}")
def test_golden_tokens_and_ids(tok: CharTokenizer, rec: dict) -> None:
    assert ["[CLS]", *tok.tokenize(rec["bert_text"]), "[SEP]"] == rec["tokens"]
    assert tok.encode(rec["bert_text"]) == rec["input_ids"]
    # On OpenJTalk word strings the per-character encoding is the same thing.
    assert tok.encode_per_char(rec["bert_text"]) == rec["input_ids"]


def test_special_ids(tok: CharTokenizer) -> None:
    assert (tok.pad_id, tok.cls_id, tok.sep_id, tok.unk_id) == (0, 1, 2, 3)
    assert tok.encode("") == [1, 2]


def test_behaviours_of_the_slow_tokenizer(tok: CharTokenizer) -> None:
    # Whitespace and control characters vanish; punctuation splits; NFKC per word.
    assert tok.tokenize("ａ b\tc\x07") == ["a", "b", "c"]
    # A spelled special token is kept whole.
    assert tok.tokenize("あ[MASK]い") == ["あ", "[MASK]", "い"]
    # Unknown character → [UNK] (id 3).
    assert "\U00020000" not in tok.vocab
    assert tok.encode("\U00020000") == [1, 3, 2]
    # NFKC expansion gives more tokens than characters; encode_per_char keeps one per char.
    assert len(tok.encode("㍻")) == 4
    assert tok.encode_per_char("㍻") == [1, 3, 2]


@pytest.fixture(scope="module")
def slow_reference():
    transformers = pytest.importorskip("transformers")
    return transformers.BertJapaneseTokenizer.from_pretrained(str(BERT_SMALL))


_ALPHABET = st.one_of(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),
    st.characters(min_codepoint=0x3000, max_codepoint=0x30FF),
    st.characters(min_codepoint=0x4E00, max_codepoint=0x4FFF),
    st.characters(min_codepoint=0xFF00, max_codepoint=0xFFEF),
    st.sampled_from(
        [
            "\x00",
            "\x01",
            "\ufffd",
            "\x85",
            "\xa0",
            "\u3000",
            "\u2028",
            "\u0301",
            "\u3099",
            "\u2026",
            "\u337b",
            "\U0001f600",
            "[CLS]",
            "[SEP]",
            "[UNK]",
            "[MASK]",
            "[PAD]",
            "\n",
            "\t",
        ]
    ),
)


@settings(max_examples=300, deadline=None)
@given(text=st.lists(_ALPHABET, max_size=24).map("".join))
def test_matches_transformers_slow_tokenizer(tok: CharTokenizer, slow_reference, text: str) -> None:
    assert tok.tokenize(text) == slow_reference.tokenize(text)
    assert tok.encode(text) == slow_reference(text)["input_ids"]


def test_missing_vocab_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        CharTokenizer.from_dir(tmp_path)


def test_other_subword_tokenizer_is_refused(tmp_path: Path) -> None:
    (tmp_path / "vocab.txt").write_bytes((BERT_SMALL / "vocab.txt").read_bytes())
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"subword_tokenizer_type": "wordpiece"})
    )
    with pytest.raises(ValueError, match="subword_tokenizer_type"):
        CharTokenizer.from_dir(tmp_path)
