"""Where things are: the repository root, the tests folder, the test data."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TESTS_DIR = REPO_ROOT / "tests"
DATA = TESTS_DIR / "data"
STUBS = TESTS_DIR / "stubs"
BERT_SMALL = DATA / "bert_small"
"""A tiny DeBERTa (hidden 64) with the real tokenizer files."""
MODEL_SMALL = DATA / "model_small"
"""A small JP-Extra synthesizer checkpoint with reference outputs."""
