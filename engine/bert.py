"""BERT features for Style-Bert-VITS2 JP-Extra voices.

The voices were trained on the output of encoder layer N-2 (``hidden_states[-3]``) of
`ku-nlp/deberta-v2-large-japanese-char-wwm`, read from OpenJTalk's word strings
(``analyze(text).bert_text``) and repeated per phone by ``word2ph``. This module turns those
strings into that feature, ``float32 [hidden, sum(word2ph)]`` per sentence, with one BERT call
per request (sentences padded into one batch).

Backends (one BERT per `TTS`, shared by every speaker):

* `OnnxBert` — ONNX Runtime, for CPUs; reads hayakoe's ``onnx/bert/q8/bert_q8.onnx``
  (``input_ids``, ``attention_mask`` → ``hidden_states[-3]``). No torch/transformers import.
* `TorchBert` — PyTorch + transformers, for CUDA (or CPU parity checks); reads
  ``pytorch/bert/fp32/`` (an ``AutoModelForMaskedLM`` folder).

`load_bert(root, device)` picks one from a folder (or `Source`) in hayakoe's layout. Export to
ONNX and int8 quantisation live in `engine.runtime.bert_export`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .tokenizer import CharTokenizer

_LOGGER = logging.getLogger(__name__)

# Prefixes of hayakoe's layout (see hayakoe-interface.md, section 2).
TOKENIZER_PREFIX = "bert/tokenizer"
ONNX_Q8_PREFIX = "onnx/bert/q8"
ONNX_Q8_FILE = "bert_q8.onnx"
ONNX_FP32_PREFIX = "onnx/bert/fp32"
ONNX_FP32_FILE = "bert.onnx"
TORCH_PREFIX = "pytorch/bert/fp32"

DEFAULT_ASSIST_WEIGHT = 0.7

# OnnxBert, TorchBert and export_bert are public too, but loaded lazily (module __getattr__)
# so that `import engine.bert` never imports onnxruntime or torch; they are left out of
# __all__ so that a star import does not pull torch in either.
__all__ = [
    "ONNX_FP32_FILE",
    "ONNX_FP32_PREFIX",
    "ONNX_Q8_FILE",
    "ONNX_Q8_PREFIX",
    "TOKENIZER_PREFIX",
    "TORCH_PREFIX",
    "BertBackend",
    "BertFeatures",
    "load_bert",
]


@runtime_checkable
class _FetchingSource(Protocol):
    def fetch(self, prefix: str) -> Path: ...


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
        self, tokenizer: CharTokenizer, *, max_batch_tokens: int = 16384, max_batch_attention: int = 1 << 20
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
                bert_text, len(ids) - 2, len(bert_text),
            )
            ids = self.tokenizer.encode_per_char(bert_text)
        return ids

    def hidden_states(self, id_lists: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """Token-level ``hidden_states[-3]`` (float32 [n_tokens, hidden]) for each id list.

        Lists are padded (id 0, mask 0) into as few model calls as `max_batch_tokens` and
        `max_batch_attention` allow (normally one); padding does not change the unpadded positions' values beyond float
        rounding.
        """
        out: list[np.ndarray | None] = [None] * len(id_lists)
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
            if batch and (rows * longest > self.max_batch_tokens or rows * longest * longest > self.max_batch_attention):
                flush()
            batch.append(i)
        flush()
        return out  # type: ignore[return-value]

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
            raise ValueError(
                f"got {len(bert_texts)} BERT texts but {len(word2phs)} word2ph lists"
            )
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
        use_assist = bool(assist_text) and assist_text_weight != 0
        if use_assist:
            id_lists.append(self.tokenizer.encode(assist_text))  # type: ignore[arg-type]
        hidden = self.hidden_states(id_lists)
        assist_mean = None
        if use_assist:
            assist_mean = hidden.pop().mean(axis=0, dtype=np.float32)
        feats = []
        for h, w2p in zip(hidden, word2phs):
            if assist_mean is not None:
                h = (h * np.float32(1 - assist_text_weight) + assist_mean * np.float32(assist_text_weight)).astype(
                    np.float32
                )
            counts = np.asarray(w2p, dtype=np.int64)
            feats.append(np.ascontiguousarray(np.repeat(h, counts, axis=0).T, dtype=np.float32))
        return feats


# -- loading -------------------------------------------------------------------------------


def _resolve(root: Any, prefix: str) -> Path:
    if isinstance(root, (str, Path)):
        path = Path(root) / prefix
        if not path.is_dir():
            raise FileNotFoundError(f"BERT: {path} not found (expected hayakoe's layout under {root})")
        return path
    if isinstance(root, _FetchingSource):
        return Path(root.fetch(prefix))
    raise TypeError(f"load_bert: root must be a path or a Source with fetch(prefix), not {type(root).__name__}")


def _tokenizer_dir(root: Any, model_dir: Path | None) -> Path:
    """``bert/tokenizer`` under `root`; else the model folder if it holds a ``vocab.txt``."""
    try:
        return _resolve(root, TOKENIZER_PREFIX)
    except FileNotFoundError:
        if model_dir is not None and (model_dir / "vocab.txt").is_file():
            return model_dir
        raise


def load_bert(
    root: Path | str | Any,
    device: str = "cpu",
    *,
    backend: str | None = None,
    precision: str = "q8",
    threads: int | None = None,
) -> BertFeatures:
    """Load the BERT of a voice root laid out like hayakoe's repository.

    `root` is a folder or a `Source` (anything with ``fetch(prefix) -> Path``); only the needed
    prefixes are fetched. `device` ``"cpu"`` selects ONNX Runtime (``onnx/bert/q8/bert_q8.onnx``,
    or ``onnx/bert/fp32/bert.onnx`` with ``precision="fp32"``); ``"cuda"``/``"cuda:N"`` selects
    PyTorch (``pytorch/bert/fp32/``). `backend` (``"onnx"``/``"torch"``) overrides the choice,
    e.g. PyTorch on CPU. The tokenizer comes from ``bert/tokenizer/``.
    """
    if backend is None:
        backend = "torch" if str(device).startswith("cuda") else "onnx"
    if backend == "onnx":
        from .runtime.bert_onnx import OnnxBert

        if precision == "q8":
            onnx_dir, name = _resolve(root, ONNX_Q8_PREFIX), ONNX_Q8_FILE
        elif precision == "fp32":
            onnx_dir, name = _resolve(root, ONNX_FP32_PREFIX), ONNX_FP32_FILE
        else:
            raise ValueError(f"load_bert: precision must be 'q8' or 'fp32', not {precision!r}")
        onnx_path = onnx_dir / name
        if not onnx_path.is_file():
            raise FileNotFoundError(f"BERT: {onnx_path} not found")
        return OnnxBert(onnx_path, _tokenizer_dir(root, None), threads=threads)
    if backend == "torch":
        from .runtime.bert_torch import TorchBert

        model_dir = _resolve(root, TORCH_PREFIX)
        return TorchBert(model_dir, _tokenizer_dir(root, model_dir), device=device, threads=threads)
    raise ValueError(f"load_bert: backend must be 'onnx' or 'torch', not {backend!r}")


def __getattr__(name: str) -> Any:
    # Lazy, so importing engine.bert never imports onnxruntime or torch by itself.
    if name == "OnnxBert":
        from .runtime.bert_onnx import OnnxBert

        return OnnxBert
    if name == "TorchBert":
        from .runtime.bert_torch import TorchBert

        return TorchBert
    if name == "export_bert":
        from .runtime.bert_export import export_bert

        return export_bert
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

