"""Character tokenizer of `ku-nlp/deberta-v2-large-japanese-char-wwm`, without transformers.

The voices were trained with BERT features computed from the *slow* Python
`BertJapaneseTokenizer` (``word_tokenizer_type="basic"``, ``subword_tokenizer_type="character"``).
The bundled ``tokenizer.json`` (a WordPiece fast tokenizer) gives other ids, so this module
re-implements the slow path from its documented behaviour:

1. text that spells a special token (``[CLS]``, ``[UNK]``, …) is kept as that token;
2. the rest goes through the *basic* word tokenizer: drop NUL, U+FFFD and control characters,
   turn whitespace into spaces, NFC, split on whitespace, split punctuation into its own words
   (no lower-casing, no accent stripping, no CJK spacing);
3. each word is NFKC-normalised and split into characters; each character is looked up in
   ``vocab.txt`` (unknown → ``[UNK]``).

It needs only the standard library and ``vocab.txt``, so the CPU (ONNX) path does not pay for
importing transformers/torch (resident memory matters on a Raspberry Pi).
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path

_LOGGER = logging.getLogger(__name__)

PAD, CLS, SEP, UNK, MASK = "[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)


def _is_whitespace(ch: str) -> bool:
    if ch in " \t\n\r":
        return True
    return unicodedata.category(ch) == "Zs"


def _is_control(ch: str) -> bool:
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch).startswith("C")


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    # All non-alphanumeric ASCII counts as punctuation (BERT convention), e.g. "$", "^", "`".
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def load_vocab(path: Path) -> dict[str, int]:
    """Read a BERT ``vocab.txt`` (one token per line; the line number is the id)."""
    vocab: dict[str, int] = {}
    with open(path, encoding="utf-8") as f:
        for index, line in enumerate(f):
            vocab[line.rstrip("\n")] = index
    if not vocab:
        raise ValueError(f"{path}: empty vocabulary")
    return vocab


class CharTokenizer:
    """The slow `BertJapaneseTokenizer` (basic words + character subwords) as plain Python.

    `tokenize` gives the token strings, `encode` the ids with ``[CLS]``/``[SEP]`` around them.
    """

    def __init__(self, vocab: dict[str, int], *, do_lower_case: bool = False) -> None:
        missing = [t for t in SPECIAL_TOKENS if t not in vocab]
        if missing:
            raise ValueError(f"vocabulary lacks special tokens {missing}")
        self.vocab = vocab
        self.do_lower_case = do_lower_case
        self.pad_id = vocab[PAD]
        self.cls_id = vocab[CLS]
        self.sep_id = vocab[SEP]
        self.unk_id = vocab[UNK]
        specials = sorted(SPECIAL_TOKENS, key=len, reverse=True)
        self._special_re = re.compile("(" + "|".join(re.escape(t) for t in specials) + ")")

    @classmethod
    def from_dir(cls, directory: str | Path) -> CharTokenizer:
        """Load from a tokenizer folder (``vocab.txt`` and, if present, ``tokenizer_config.json``).

        Refuses configs that ask for another word/subword tokenizer, since ids would differ.
        """
        directory = Path(directory)
        vocab_path = directory / "vocab.txt"
        if not vocab_path.is_file():
            raise FileNotFoundError(f"BERT tokenizer: {vocab_path} not found")
        do_lower_case = False
        config_path = directory / "tokenizer_config.json"
        if config_path.is_file():
            try:
                config = json.loads(config_path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{config_path}: invalid JSON ({exc})") from exc
            for key, want in (
                ("word_tokenizer_type", "basic"),
                ("subword_tokenizer_type", "character"),
            ):
                got = config.get(key, want)
                if got != want:
                    raise ValueError(f"{config_path}: {key} is {got!r}; only {want!r} is supported")
            if (
                config.get("do_word_tokenize", True) is False
                or config.get("do_subword_tokenize", True) is False
            ):
                raise ValueError(
                    f"{config_path}: do_word_tokenize/do_subword_tokenize must be true"
                )
            do_lower_case = bool(config.get("do_lower_case", False))
        return cls(load_vocab(vocab_path), do_lower_case=do_lower_case)

    # -- basic word tokenizer -------------------------------------------------------------

    def _words(self, text: str) -> list[str]:
        cleaned = []
        for ch in text:
            if ch == "\x00" or ch == "\ufffd" or _is_control(ch):
                continue
            cleaned.append(" " if _is_whitespace(ch) else ch)
        text = unicodedata.normalize("NFC", "".join(cleaned))
        words: list[str] = []
        for word in text.split():
            if self.do_lower_case and word not in SPECIAL_TOKENS:
                word = "".join(
                    c
                    for c in unicodedata.normalize("NFD", word.lower())
                    if unicodedata.category(c) != "Mn"
                )
            current = ""
            for ch in word:
                if _is_punctuation(ch):
                    if current:
                        words.append(current)
                        current = ""
                    words.append(ch)
                else:
                    current += ch
            if current:
                words.append(current)
        return words

    def _characters(self, word: str) -> list[str]:
        return [ch if ch in self.vocab else UNK for ch in unicodedata.normalize("NFKC", word)]

    # -- public ---------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[str]:
        """Token strings for `text` (no ``[CLS]``/``[SEP]``), exactly as the slow tokenizer."""
        tokens: list[str] = []
        for piece in self._special_re.split(text):
            if not piece:
                continue
            if piece in SPECIAL_TOKENS:
                tokens.append(piece)
                continue
            for word in self._words(piece):
                tokens.extend(self._characters(word))
        return tokens

    def convert_tokens_to_ids(self, tokens: Iterable[str]) -> list[int]:
        """Vocabulary ids of `tokens` (unknown strings → ``[UNK]``)."""
        return [self.vocab.get(t, self.unk_id) for t in tokens]

    def encode(self, text: str) -> list[int]:
        """``[CLS]`` + ids of `tokenize(text)` + ``[SEP]``."""
        return [self.cls_id, *self.convert_tokens_to_ids(self.tokenize(text)), self.sep_id]

    def encode_per_char(self, text: str) -> list[int]:
        """One id per character of `text`, plus ``[CLS]``/``[SEP]``: always ``len(text) + 2`` ids.

        Equal to `encode` whenever the slow tokenizer gives one token per character (the normal
        case for OpenJTalk word strings). Used as a fallback when it does not (whitespace,
        control characters, NFKC expansions), so features stay aligned with word2ph.
        """
        ids = [self.cls_id]
        for ch in text:
            norm = unicodedata.normalize("NFKC", ch)
            ids.append(self.vocab.get(norm, self.unk_id) if len(norm) == 1 else self.unk_id)
        ids.append(self.sep_id)
        return ids
