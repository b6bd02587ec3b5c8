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
ONNX and int8 quantisation live in `engine.bert.export`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..layout import (
    BERT_ONNX_FP32_FILE,
    BERT_ONNX_FP32_PREFIX,
    BERT_ONNX_Q8_FILE,
    BERT_ONNX_Q8_PREFIX,
    BERT_TOKENIZER_PREFIX,
    BERT_TORCH_PREFIX,
)
from ..model_files import explain_load_failure
from .features import BertBackend

if TYPE_CHECKING:
    from ..sources.cache import CacheDir


@runtime_checkable
class _FetchingSource(Protocol):
    def fetch(self, prefix: str) -> Path: ...


# -- loading -------------------------------------------------------------------------------


def _resolve(root: Path | str | _FetchingSource, prefix: str) -> Path:
    if isinstance(root, (str, Path)):
        path = Path(root) / prefix
        if not path.is_dir():
            raise FileNotFoundError(
                f"BERT: {path} not found (expected hayakoe's layout under {root})"
            )
        return path
    if isinstance(root, _FetchingSource):
        return Path(root.fetch(prefix))
    raise TypeError(
        f"load_bert: root must be a path or a Source with fetch(prefix), not {type(root).__name__}"
    )


def _tokenizer_dir(root: Path | str | _FetchingSource, model_dir: Path | None) -> Path:
    """``bert/tokenizer`` under `root`; else the model folder if it holds a ``vocab.txt``."""
    try:
        return _resolve(root, BERT_TOKENIZER_PREFIX)
    except FileNotFoundError:
        if model_dir is not None and (model_dir / "vocab.txt").is_file():
            return model_dir
        raise


def load_bert(
    root: Path | str | _FetchingSource,
    device: str = "cpu",
    *,
    backend: str | None = None,
    precision: str = "q8",
    threads: int | None = None,
    cache_dir: CacheDir = None,
    make_derived: bool = True,
) -> BertBackend:
    """Load the BERT of a voice root laid out like hayakoe's repository.

    `root` is a folder or a `Source` (anything with ``fetch(prefix) -> Path``); only the needed
    prefixes are fetched. `device` ``"cpu"`` selects ONNX Runtime (``onnx/bert/q8/bert_q8.onnx``,
    or ``onnx/bert/fp32/bert.onnx`` with ``precision="fp32"``); ``"cuda"``/``"cuda:N"`` selects
    PyTorch (``pytorch/bert/fp32/``). `backend` (``"onnx"``/``"torch"``) overrides the choice,
    e.g. PyTorch on CPU. The tokenizer comes from ``bert/tokenizer/``. `cache_dir`: where
    the optimised ONNX graph is kept (default: the cache root). The int8 graph's fp32
    tables (word embeddings, folded position tables) are held in int8 too where they pass
    their gate (`engine.bert.compact`); `make_derived=False` uses them only when the cache
    holds them already (the library's first `prepare()`: no long work not asked for).
    """
    if backend is None:
        backend = "torch" if str(device).startswith("cuda") else "onnx"
    if backend == "onnx":
        from .onnx_backend import OnnxBert

        if precision == "q8":
            onnx_dir, name = _resolve(root, BERT_ONNX_Q8_PREFIX), BERT_ONNX_Q8_FILE
        elif precision == "fp32":
            onnx_dir, name = _resolve(root, BERT_ONNX_FP32_PREFIX), BERT_ONNX_FP32_FILE
        else:
            raise ValueError(f"load_bert: precision must be 'q8' or 'fp32', not {precision!r}")
        onnx_path = onnx_dir / name
        if not onnx_path.is_file():
            raise FileNotFoundError(f"BERT: {onnx_path} not found")
        try:
            return OnnxBert(
                onnx_path,
                _tokenizer_dir(root, None),
                threads=threads,
                cache_dir=cache_dir,
                int8_tables=precision == "q8",
                make_derived=make_derived,
            )
        except (ImportError, FileNotFoundError, MemoryError):
            raise
        except Exception as exc:  # name the damaged file
            raise explain_load_failure("BERT", exc, [onnx_path], onnx_dir) from exc
    if backend == "torch":
        from .torch_backend import TorchBert

        model_dir = _resolve(root, BERT_TORCH_PREFIX)
        return TorchBert(model_dir, _tokenizer_dir(root, model_dir), device=device, threads=threads)
    raise ValueError(f"load_bert: backend must be 'onnx' or 'torch', not {backend!r}")
