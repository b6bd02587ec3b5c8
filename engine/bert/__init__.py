"""BERT features for Style-Bert-VITS2 JP-Extra voices (one BERT per `TTS`, shared by every
speaker).

- `features`: the `BertBackend` protocol and `BertFeatures` (tokenise, batch, expand per phone)
- `tokenizer`: the DeBERTa character tokenizer in plain Python
- `loader`: `load_bert(root, device)` picks a backend from a folder or `Source` in hayakoe's
  layout
- `onnx_backend`: `OnnxBert` (ONNX Runtime, CPUs); `torch_backend`: `TorchBert` (PyTorch)
- `export`: `export_bert` (ONNX export and int8 quantisation)

`OnnxBert`, `TorchBert` and `export_bert` are loaded on first use (module ``__getattr__``) so
that ``import engine.bert`` never imports onnxruntime or torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .features import DEFAULT_ASSIST_WEIGHT, BertBackend, BertFeatures
from .loader import load_bert
from .tokenizer import CharTokenizer

if TYPE_CHECKING:  # for the type checker only: at run time `__getattr__` imports them
    from .export import export_bert as export_bert
    from .onnx_backend import OnnxBert as OnnxBert
    from .torch_backend import TorchBert as TorchBert

_LAZY = {
    "OnnxBert": "engine.bert.onnx_backend",
    "TorchBert": "engine.bert.torch_backend",
    "export_bert": "engine.bert.export",
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(_LAZY[name]), name)


__all__ = [
    "DEFAULT_ASSIST_WEIGHT",
    "BertBackend",
    "BertFeatures",
    "CharTokenizer",
    "load_bert",
]
