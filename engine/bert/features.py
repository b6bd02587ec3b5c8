"""What every BERT backend shares: the `BertBackend` protocol callers rely on, and
`BertFeatures`, the tokenising, batching and per-phone expansion a backend inherits.

The voices were trained on the output of encoder layer N-2 (``hidden_states[-3]``) of
`ku-nlp/deberta-v2-large-japanese-char-wwm`, read from OpenJTalk's word strings
(``analyze(text).bert_text``) and repeated per phone by ``word2ph``: ``float32 [hidden,
sum(word2ph)]`` per sentence, with one BERT call per request (sentences padded into one batch).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from .tokenizer import CharTokenizer

_LOGGER = logging.getLogger(__name__)

DEFAULT_ASSIST_WEIGHT = 0.7


class BertBackend(Protocol):
    """What callers of BERT rely on (`OnnxBert`, `TorchBert`)."""

    hidden_size: int

    def features(
        self,
        bert_texts: Sequence[str],
        word2phs: Sequence[Sequence[int]],
        *,
        assist_text: str | None = None,
        assist_text_weight: float = DEFAULT_ASSIST_WEIGHT,
    ) -> list[np.ndarray]: ...


class BertFeatures:
    """Tokenising, batching and per-phone expansion shared by every backend.

    Subclasses implement `_hidden(input_ids, attention_mask) -> float32 [batch, seq, hidden]`,
    the model's ``hidden_states[-3]``. `features` is thread-safe as long as `_hidden` is.
    """

    hidden_size: int

    def __init__(
        self,
        tokenizer: CharTokenizer,
        *,
        max_batch_tokens: int = 16384,
        max_batch_attention: int = 1 << 20,
    ) -> None:
        self.tokenizer = tokenizer
        self.max_batch_tokens = max_batch_tokens
        """Upper bound on batch × padded length per model call (bounds hidden-state memory)."""
        self.max_batch_attention = max_batch_attention
        """Upper bound on batch × padded length² per call (bounds attention-score memory: with
        16 heads in float32, 2^20 is 64 MB per score tensor). One sentence always runs."""

    # -- to implement ---------------------------------------------------------------------

    def _hidden(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------------------

    def token_ids(self, bert_text: str) -> list[int]:
        """``[CLS]`` + one id per character of `bert_text` + ``[SEP]``.

        Exactly the reference tokenizer's ids. If that tokenizer would not give one token per
        character (whitespace, control or NFKC-expanding characters, which OpenJTalk word
        strings do not normally contain), the reference would misalign or fail; we fall back
        to one id per character so the features stay aligned with word2ph.
        """
        ids = self.tokenizer.encode(bert_text)
        if len(ids) != len(bert_text) + 2:
            _LOGGER.warning(
                "BERT text %r gives %d tokens for %d characters; using one token per character",
                bert_text,
                len(ids) - 2,
                len(bert_text),
            )
            ids = self.tokenizer.encode_per_char(bert_text)
        return ids

    def hidden_states(self, id_lists: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """Token-level ``hidden_states[-3]`` (float32 [n_tokens, hidden]) for each id list.

        Lists are padded (id 0, mask 0) into as few model calls as `max_batch_tokens` and
        `max_batch_attention` allow (normally one); padding does not change the unpadded
        positions' values beyond float rounding.
        """
        out: dict[int, np.ndarray] = {}
        order = sorted(range(len(id_lists)), key=lambda i: len(id_lists[i]))
        batch: list[int] = []

        def flush() -> None:
            if not batch:
                return
            seq = max(len(id_lists[i]) for i in batch)
            ids = np.full((len(batch), seq), self.tokenizer.pad_id, dtype=np.int64)
            mask = np.zeros((len(batch), seq), dtype=np.int64)
            for row, i in enumerate(batch):
                n = len(id_lists[i])
                ids[row, :n] = id_lists[i]
                mask[row, :n] = 1
            hidden = self._hidden(ids, mask)
            if hidden.ndim != 3 or hidden.shape[:2] != ids.shape:
                raise RuntimeError(
                    f"BERT returned shape {hidden.shape}; expected [{ids.shape[0]}, {seq}, hidden]"
                )
            for row, i in enumerate(batch):
                out[i] = np.asarray(hidden[row, : len(id_lists[i])], dtype=np.float32)
            batch.clear()

        # Sorted by length, so a flush only ever pads up to the longest of similar lengths.
        for i in order:
            longest = len(id_lists[i])
            rows = len(batch) + 1
            if batch and (
                rows * longest > self.max_batch_tokens
                or rows * longest * longest > self.max_batch_attention
            ):
                flush()
            batch.append(i)
        flush()
        return [out[i] for i in range(len(id_lists))]

    def features(
        self,
        bert_texts: Sequence[str],
        word2phs: Sequence[Sequence[int]],
        *,
        assist_text: str | None = None,
        assist_text_weight: float = DEFAULT_ASSIST_WEIGHT,
    ) -> list[np.ndarray]:
        """Per-phone BERT features, ``float32 [hidden, sum(word2ph)]``, one per sentence.

        `word2phs[i]` has one entry per token of `bert_texts[i]` including ``[CLS]`` and
        ``[SEP]`` (so ``len == len(text) + 2``); entry j repeats token j's vector that many
        times (0 drops it). All sentences (and `assist_text`) run in one batched BERT call.

        `assist_text` (Style-Bert-VITS2's option) mixes each token vector with the mean vector
        of the assist text: ``v * (1 - w) + mean(assist) * w``.
        """
        if isinstance(bert_texts, str):
            raise TypeError("bert_texts must be a list of strings, not one string")
        if len(bert_texts) != len(word2phs):
            raise ValueError(f"got {len(bert_texts)} BERT texts but {len(word2phs)} word2ph lists")
        for n, (text, w2p) in enumerate(zip(bert_texts, word2phs)):
            if len(w2p) != len(text) + 2:
                raise ValueError(
                    f"sentence {n}: len(word2ph) = {len(w2p)} but BERT text {text!r} has "
                    f"{len(text)} characters; word2ph needs len(text) + 2 = {len(text) + 2} "
                    "entries (one per character plus [CLS] and [SEP])"
                )
            if any(int(w) < 0 for w in w2p):
                raise ValueError(f"sentence {n}: word2ph has a negative entry: {list(w2p)}")
        if not bert_texts:
            return []
        id_lists = [self.token_ids(t) for t in bert_texts]
        assist = assist_text if assist_text and assist_text_weight != 0 else None
        use_assist = assist is not None
        if assist is not None:
            id_lists.append(self.tokenizer.encode(assist))
        hidden = self.hidden_states(id_lists)
        assist_mean = None
        if use_assist:
            assist_mean = hidden.pop().mean(axis=0, dtype=np.float32)
        feats = []
        for h, w2p in zip(hidden, word2phs):
            if assist_mean is not None:
                h = (
                    h * np.float32(1 - assist_text_weight)
                    + assist_mean * np.float32(assist_text_weight)
                ).astype(np.float32)
            counts = np.asarray(w2p, dtype=np.int64)
            feats.append(np.ascontiguousarray(np.repeat(h, counts, axis=0).T, dtype=np.float32))
        return feats
