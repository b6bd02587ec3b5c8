"""`wyoming-hayakoe export-bert`: PyTorch DeBERTa → ONNX (fp32) → int8, in hayakoe's layout.

Example (needs the `torch` extra)::

    wyoming-hayakoe export-bert path/to/deberta-v2-large-japanese-char-wwm --out voices/
    # writes voices/onnx/bert/q8/bert_q8.onnx and voices/bert/tokenizer/

MODEL is an ``AutoModelForMaskedLM`` folder (config.json + weights) or a hayakoe-layout root
holding ``pytorch/bert/fp32/`` (then ``bert/tokenizer/`` there is used for the tokenizer).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from engine import layout

from ..logs import setup_logging

_FP32_PATH = f"{layout.BERT_ONNX_FP32_PREFIX}/{layout.BERT_ONNX_FP32_FILE}"

_LOGGER = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser (also used by the top-level CLI's help)."""
    parser = argparse.ArgumentParser(
        prog="wyoming-hayakoe export-bert",
        description="Export the DeBERTa BERT to ONNX and quantise it to int8 (hayakoe's layout).",
    )
    parser.add_argument(
        "model",
        type=Path,
        help=f"AutoModelForMaskedLM folder, or a root with {layout.BERT_TORCH_PREFIX}/",
    )
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help=f"output root (gets {layout.BERT_ONNX_Q8_PREFIX}/ and "
        f"{layout.BERT_TOKENIZER_PREFIX}/)",
    )
    parser.add_argument(
        "--tokenizer-dir",
        type=Path,
        default=None,
        help="folder with vocab.txt (default: from MODEL)",
    )
    parser.add_argument("--no-quantize", action="store_true", help=f"write only {_FP32_PATH}")
    parser.add_argument("--keep-fp32", action="store_true", help=f"also keep {_FP32_PATH}")
    parser.add_argument("--opset", type=int, default=17, help="ONNX opset (default 17, as hayakoe)")
    parser.add_argument("--no-check", action="store_true", help="skip the ONNX-vs-PyTorch check")
    parser.add_argument("--debug", action="store_true", help="debug logging")
    return parser


def _locate(model: Path, tokenizer_dir: Path | None) -> tuple[Path, Path]:
    """(model folder, tokenizer folder) for MODEL; raises FileNotFoundError naming what is
    missing."""
    if (model / layout.BERT_TORCH_PREFIX / "config.json").is_file():
        model_dir = model / layout.BERT_TORCH_PREFIX
        default_tok = model / layout.BERT_TOKENIZER_PREFIX
        if not (default_tok / "vocab.txt").is_file():
            default_tok = model_dir
    elif (model / "config.json").is_file():
        model_dir = default_tok = model
    else:
        raise FileNotFoundError(
            f"{model}: no config.json (nor {layout.BERT_TORCH_PREFIX}/config.json)"
        )
    tok = tokenizer_dir or default_tok
    if not (tok / "vocab.txt").is_file():
        raise FileNotFoundError(f"{tok}: no vocab.txt (give --tokenizer-dir)")
    return model_dir, tok


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (0 on success)."""
    args = build_parser().parse_args(argv)
    setup_logging(args.debug)
    try:
        model_dir, tok_dir = _locate(args.model, args.tokenizer_dir)
    except FileNotFoundError as exc:
        print(f"export-bert: {exc}", file=sys.stderr)
        return 2
    try:
        from engine.bert.export import export_bert
    except ImportError as exc:  # torch / transformers / onnx missing
        print(
            f"export-bert: needs the torch extra (pip install 'wyoming-hayakoe[torch]'): {exc}",
            file=sys.stderr,
        )
        return 2
    try:
        result = export_bert(
            model_dir,
            args.out,
            tokenizer_dir=tok_dir,
            quantize=not args.no_quantize,
            keep_fp32=args.keep_fp32,
            opset=args.opset,
            check=not args.no_check,
        )
    except ImportError as exc:
        print(
            f"export-bert: needs the torch extra (pip install 'wyoming-hayakoe[torch]'): {exc}",
            file=sys.stderr,
        )
        return 2
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"export-bert: {exc}", file=sys.stderr)
        return 1
    for path in (result.q8_path, result.fp32_path):
        if path is not None:
            print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
    print(f"wrote {result.tokenizer_dir}/")
    if result.fp32_max_abs_diff == result.fp32_max_abs_diff:  # not NaN
        print(f"ONNX fp32 vs PyTorch: max abs diff {result.fp32_max_abs_diff:.2e}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
