"""PyTorch BERT backend (transformers' DeBERTa-v2), for CUDA and for export/parity on CPU.

`ThirdFromLast` wraps a DeBERTa-v2 model so that its output *is* ``hidden_states[-3]``: it keeps
only the first N-2 encoder layers, so the last two are never computed (and never exported).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .features import BertFeatures
from .tokenizer import CharTokenizer

_LOGGER = logging.getLogger(__name__)


class ThirdFromLast(nn.Module):
    """``(input_ids, attention_mask) -> hidden_states[-3]`` of a DeBERTa-v2 model.

    `model` is a `DebertaV2ForMaskedLM` or `DebertaV2Model`; its encoder is cut to N-2 layers
    in place (DeBERTa-v2 has no final norm after the layers, so the last kept layer's output
    equals the full model's ``hidden_states[-3]``).
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        base = getattr(model, "deberta", model)
        encoder = getattr(base, "encoder", None)
        if encoder is None or not hasattr(encoder, "layer"):
            raise ValueError(f"{type(model).__name__} is not a DeBERTa-v2 model (no encoder.layer)")
        if getattr(base, "z_steps", 0) > 1:
            raise ValueError("DeBERTa-v2 with z_steps > 1 is not supported")
        n = len(encoder.layer)
        if n < 2:
            raise ValueError(f"BERT has {n} encoder layers; hidden_states[-3] needs at least 2")
        encoder.layer = nn.ModuleList(list(encoder.layer)[: n - 2])
        self.base = base
        self.hidden_size = int(base.config.hidden_size)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out = self.base(
            input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True
        )
        # hidden_states = (embeddings, layer_1, ..., layer_{N-2}): the last is the full
        # model's [-3].
        return out.hidden_states[-1]


def load_third_from_last(
    model_dir: str | Path, *, dtype: torch.dtype = torch.float32
) -> ThirdFromLast:
    """Load an ``AutoModelForMaskedLM`` folder (config.json + weights) as `ThirdFromLast`,
    in eval mode."""
    from transformers import AutoModelForMaskedLM

    model_dir = Path(model_dir)
    if not (model_dir / "config.json").is_file():
        raise FileNotFoundError(f"BERT model folder {model_dir} has no config.json")
    model = AutoModelForMaskedLM.from_pretrained(str(model_dir), dtype=dtype)
    # The MLM head is never used: drop it so its weights can be freed.
    wrapper = ThirdFromLast(model).eval()
    return wrapper


class _RelTable:
    """The encoder's (normalised) relative-position table, computed once per device/dtype.

    DeBERTa-v2 recomputes ``LayerNorm(rel_embeddings.weight)`` on every call; it is a constant
    in inference. Returning one cached tensor also lets `_CachedRelProjection` recognise it.
    """

    def __init__(self, encoder: nn.Module) -> None:
        self._compute = encoder.get_rel_embedding  # the original bound method
        self._weight = encoder.rel_embeddings.weight
        self.table: torch.Tensor | None = None

    def __call__(self) -> torch.Tensor:
        w = self._weight
        t = self.table
        if t is None or t.device != w.device or t.dtype != w.dtype:
            with torch.no_grad():
                t = self.table = self._compute()
        return t


class _CachedRelProjection(nn.Module):
    """A query/key projection that remembers its output for the relative-position table.

    Each layer projects the whole table (2 × 256 positions) with its query and key weights on
    every call: 2 × 512×1024×1024 multiply-adds per layer, ~47 GFLOP per call for the large
    model, more than the rest of a short sentence. The product is a constant in inference
    (ONNX Runtime folds it at load time); here it is computed once. Any other input — hidden
    states — goes through the projection as before.
    """

    def __init__(self, linear: nn.Module, rel: _RelTable) -> None:
        super().__init__()
        self.linear = linear
        self._rel = rel
        self.train(linear.training)
        self._key: tuple | None = None
        self._out: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        table = self._rel.table
        if (
            table is not None
            and not self.training
            and x.dim() == 3
            and x.shape[0] == 1
            and x.shape[1:] == table.shape
            and x.data_ptr() == table.data_ptr()
        ):
            key = (table.data_ptr(), table.device, table.dtype)
            if self._key != key or self._out is None:
                with torch.no_grad():
                    self._out = self.linear(x)
                self._key = key
            return self._out
        return self.linear(x)


def enable_rel_projection_cache(model: ThirdFromLast) -> int:
    """Cache the relative-position projections of `model` (inference only; see
    `_CachedRelProjection`). Returns how many projections are cached (0 if the model does not
    use shared-key relative attention)."""
    encoder = model.base.encoder
    if not getattr(encoder, "relative_attention", False):
        return 0
    rel = _RelTable(encoder)
    encoder.get_rel_embedding = rel  # instance attribute: shadows the method
    count = 0
    for layer in encoder.layer:
        att = layer.attention.self
        if not getattr(att, "share_att_key", False):
            continue  # separate pos_*_proj: not worth handling (not the ku-nlp config)
        for name in ("query_proj", "key_proj"):
            setattr(att, name, _CachedRelProjection(getattr(att, name), rel))
            count += 1
    return count


class TorchBert(BertFeatures):
    """BERT features from transformers' DeBERTa-v2 on `device` (``"cpu"``, ``"cuda"``,
    ``"cuda:N"``).

    `dtype` defaults to float32 (what the voices were trained with; the real checkpoint's
    config says float16, which transformers 5 would otherwise pick). Calls are serialised by
    a lock (one model, possibly one CUDA stream). `cache_rel_projections` (default on) computes
    the relative-position projections once instead of on every call (see
    `enable_rel_projection_cache`); off only to measure what it saves.
    """

    def __init__(
        self,
        model_dir: str | Path,
        tokenizer_dir: str | Path | None = None,
        device: str = "cpu",
        *,
        dtype: torch.dtype = torch.float32,
        threads: int | None = None,
        cache_rel_projections: bool = True,
        max_batch_tokens: int = 16384,
        max_batch_attention: int = 1 << 20,
    ) -> None:
        model_dir = Path(model_dir)
        super().__init__(
            CharTokenizer.from_dir(tokenizer_dir or model_dir),
            max_batch_tokens=max_batch_tokens,
            max_batch_attention=max_batch_attention,
        )
        if threads and str(device) == "cpu":
            torch.set_num_threads(threads)
        self.device = torch.device(device)
        self.model = load_third_from_last(model_dir, dtype=dtype).to(self.device)
        if cache_rel_projections:
            enable_rel_projection_cache(self.model)
        self.hidden_size = self.model.hidden_size
        self._lock = threading.Lock()

    def _hidden(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        ids = torch.from_numpy(input_ids).to(self.device)
        mask = torch.from_numpy(attention_mask).to(self.device)
        with self._lock, torch.inference_mode():
            hidden = self.model(ids, mask)
        return hidden.float().cpu().numpy()
