"""`wyoming-hayakoe export SRC_DIR OUT_ROOT --name NAME`: a Style-Bert-VITS2 model folder →
hayakoe's ONNX layout (`OUT_ROOT/onnx/speakers/NAME/`).

Needs the `torch` extra. SRC_DIR holds `config.json`, `*.safetensors` (the newest is used)
and `style_vectors.npy`; hayakoe's `pytorch/speakers/<name>/` folders are such folders. The
result (`config.json`, `style_vectors.npy`, `synthesizer.onnx`, `duration_predictor.onnx`)
loads in hayakoe and in this server (`--voice NAME=OUT_ROOT`). With `--check` (default) the
exported synthesizer is compared with PyTorch on a test sentence, noise off.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from engine import layout

from ..logs import setup_logging

_LOGGER = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser."""
    parser = argparse.ArgumentParser(
        prog="wyoming-hayakoe export",
        description="Export a Style-Bert-VITS2 JP-Extra model folder to hayakoe's ONNX layout.",
    )
    parser.add_argument(
        "src_dir", type=Path, help="model folder: config.json, *.safetensors, style_vectors.npy"
    )
    parser.add_argument(
        "out_root", type=Path, help=f"output root (gets {layout.speaker_prefix('NAME', 'onnx')}/)"
    )
    parser.add_argument(
        "--name", required=True, help="voice name (its folder name in the output root)"
    )
    parser.add_argument("--opset", type=int, default=17, help="ONNX opset (default 17, as hayakoe)")
    parser.add_argument("--no-check", action="store_true", help="skip the ONNX-vs-PyTorch check")
    parser.add_argument("--debug", action="store_true", help="debug logging")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (0 on success)."""
    args = build_parser().parse_args(argv)
    setup_logging(args.debug)
    try:
        from engine.synth.export import check_export, export_voice
    except ImportError as exc:
        print(
            f"export: needs the torch extra (pip install 'wyoming-hayakoe[torch]'): {exc}",
            file=sys.stderr,
        )
        return 2
    try:
        out_dir = export_voice(args.src_dir, args.out_root, args.name, opset=args.opset)
    except FileNotFoundError as exc:
        print(f"export: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"export: {exc}", file=sys.stderr)
        return 1
    for f in sorted(out_dir.iterdir()):
        print(f"wrote {f} ({f.stat().st_size / 1e6:.1f} MB)")
    if not args.no_check:
        diff = check_export(args.src_dir, out_dir)
        print(f"ONNX Runtime vs PyTorch (noise off): max abs diff {diff:.2e}")
        if not diff <= 1e-3:
            print("export: the ONNX graph differs from PyTorch by more than 1e-3", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
