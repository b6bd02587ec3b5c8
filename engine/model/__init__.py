"""The Style-Bert-VITS2 JP-Extra network in PyTorch, key-compatible with published
checkpoints (own implementation; layout and numerics follow the reference)."""

from .checkpoint import (
    CheckpointError,
    is_ignored_key,
    load_state,
    load_synthesizer,
    prepare_state_dict,
    read_tensors,
)
from .synthesizer import Encoded, JPExtraSynthesizer

__all__ = [
    "CheckpointError",
    "Encoded",
    "JPExtraSynthesizer",
    "is_ignored_key",
    "load_state",
    "load_synthesizer",
    "prepare_state_dict",
    "read_tensors",
]
