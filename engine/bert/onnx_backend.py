"""ONNX Runtime BERT backend (the CPU path; no torch or transformers import).

Reads a graph with inputs ``input_ids``, ``attention_mask`` (int64 [batch, seq]) and, as its
first output, ``hidden_states[-3]`` (float32 [batch, seq, hidden]) — hayakoe's
``onnx/bert/q8/bert_q8.onnx`` or one written by `engine.bert.export`.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnxruntime as ort

    from ..sources.cache import CacheDir

from ..heap import trim_heap
from .features import BertFeatures
from .tokenizer import CharTokenizer

_LOGGER = logging.getLogger(__name__)


def physical_cores() -> int:
    """Physical cores this process may use (hyper-threads add little to BERT's matmuls).

    Counted from /proc/cpuinfo's (physical id, core id) pairs of the CPUs in our affinity
    mask; falls back to the affinity count (or `os.cpu_count()`) where that is unavailable.
    """
    try:
        allowed = set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        allowed = set(range(os.cpu_count() or 1))
    cores: set[tuple[str, str]] = set()
    try:
        cpu = phys = core = None
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in list(f) + [""]:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "processor":
                    cpu = int(value)
                elif key == "physical id":
                    phys = value
                elif key == "core id":
                    core = value
                elif not key:  # blank line ends one processor's block
                    if cpu is not None and cpu in allowed and core is not None:
                        cores.add((phys or "0", core))
                    cpu = phys = core = None
    except (OSError, ValueError):
        cores = set()
    return max(1, len(cores) or len(allowed))


def session_options(threads: int | None = None) -> ort.SessionOptions:
    """SessionOptions for small CPUs: all graph optimisations, `threads` intra-op threads
    (default: physical cores), one inter-op thread, sequential execution."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.intra_op_num_threads = threads if threads and threads > 0 else physical_cores()
    opts.inter_op_num_threads = 1
    return opts


COMPACT_MIN_BYTES = 64 << 20
"""`int8_tables` applies to graphs at least this large (the full-size int8 BERT is 452 MiB,
its fp32 tables 174 MiB of it; a test-sized BERT's are a few MiB, not worth a derived
file)."""


class OnnxBert(BertFeatures):
    """BERT features from an ONNX Runtime session (one session, shared; `run` is thread-safe).

    `onnx_path`: the graph; `tokenizer_dir`: folder with ``vocab.txt`` (hayakoe's
    ``bert/tokenizer``). `threads`: intra-op threads (default physical cores). `cache_dir`:
    where the graph optimised once is kept (default: the cache root). `int8_tables`: hold the
    word embeddings and folded position tables in int8 (`engine.bert.compact`: made once into
    the cache and gated on the features; graphs under `COMPACT_MIN_BYTES` and a failed gate
    keep the file as it is). `make_derived=False`: derived graphs (the compacted one, the
    optimised one) are taken from the cache where made, never made now: the graph as it is.
    """

    def __init__(
        self,
        onnx_path: str | Path,
        tokenizer_dir: str | Path,
        *,
        threads: int | None = None,
        providers: list[str] | None = None,
        cache_dir: CacheDir = None,
        max_batch_tokens: int = 16384,
        max_batch_attention: int = 1 << 20,
        int8_tables: bool = False,
        make_derived: bool = True,
    ) -> None:
        import onnxruntime as ort

        onnx_path = Path(onnx_path)
        if not onnx_path.is_file():
            raise FileNotFoundError(f"BERT ONNX file {onnx_path} not found")
        super().__init__(
            CharTokenizer.from_dir(tokenizer_dir),
            max_batch_tokens=max_batch_tokens,
            max_batch_attention=max_batch_attention,
        )
        self.path = onnx_path
        compact = None
        if int8_tables and onnx_path.stat().st_size >= COMPACT_MIN_BYTES:
            from .compact import compact_model  # gated; None: use the file as it is

            compact = compact_model(onnx_path, tokenizer_dir, cache_dir, make=make_derived)
        self.int8_tables = compact is not None
        """Whether the fp32 tables are held in int8 (`engine.bert.compact`)."""
        try:
            from ..synth.ort_cache import optimized_model  # made once: lower peak memory at start

            graph = compact or (optimized_model(onnx_path, cache_dir) if make_derived else None)
            self.session = ort.InferenceSession(
                str(graph or onnx_path),
                sess_options=session_options(threads),
                providers=providers or ["CPUExecutionProvider"],
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ValueError(f"{onnx_path}: cannot load ONNX model ({exc})") from exc
        trim_heap()
        names = [i.name for i in self.session.get_inputs()]
        missing = {"input_ids", "attention_mask"} - set(names)
        if missing:
            raise ValueError(
                f"{onnx_path}: BERT graph lacks inputs {sorted(missing)} (has {names}); expected "
                "input_ids and attention_mask, int64 [batch, seq]"
            )
        self._feed_names = names
        out = self.session.get_outputs()[0]
        hidden = out.shape[-1] if out.shape else None
        if not isinstance(hidden, int):
            # Dynamic last axis in the graph's metadata: ask the model once.
            probe = np.array([[self.tokenizer.cls_id, self.tokenizer.sep_id]], dtype=np.int64)
            hidden = int(self._hidden(probe, np.ones_like(probe)).shape[-1])
        self.hidden_size = int(hidden)
        _LOGGER.debug("Loaded BERT %s (hidden %d)", onnx_path, self.hidden_size)

    def _hidden(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": input_ids, "attention_mask": attention_mask}
        if "token_type_ids" in self._feed_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        return np.asarray(self.session.run(None, feeds)[0])
