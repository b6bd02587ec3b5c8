"""`wyoming-hayakoe quantize SRC [OUT_ROOT] --name NAME`: int8 graphs for one voice.

Calibrates on the voice's own latents (the fp32 front graph over the engine's calibration
sentences, every style), quantizes the decoder to int8 and checks it against fp32 on held-out
sentences (the fidelity gate). With OUT_ROOT, the voice's files and its `int8/` folder
(graphs, `fidelity.json`, stamp) are written to `OUT_ROOT/onnx/speakers/NAME/`, a hayakoe
layout root that the server reads with `--voice NAME=OUT_ROOT` (Docker images bake voices this
way); without it, into the cache, where the server looks for them at start. Either way the
server's `--precision auto` then uses int8 for this voice if the gate passed.

It does its work once: graphs already in place (same synthesizer, same recipe) are kept and
the command returns in seconds; `--force` makes them again. Into the cache, it then takes the
speed measurement `--precision auto` chooses by, as a server with default options would,
unless a complete one is stored; `--measure` takes it again (also with OUT_ROOT, where it is
otherwise skipped: graphs baked for an image are measured on the machine that runs it).

Exit status: 0 when the graphs were written (whatever the verdict; it is printed), 1 when
they could not be made, 2 for bad arguments or a voice that cannot be found.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from engine import OFFICIAL_SOURCE, layout
from engine.sources.redact import redact

from ..logs import setup_logging

if TYPE_CHECKING:
    from engine.neural.quantize import MeasureWhen

_LOGGER = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser."""
    parser = argparse.ArgumentParser(
        prog="wyoming-hayakoe quantize",
        description=(
            "Make int8 graphs (decoder, flow) for a voice, calibrated on its own latents, and "
            "check them against fp32 (the fidelity gate)."
        ),
    )
    parser.add_argument(
        "src",
        help="where the voice is: a hayakoe-layout root or voice folder, "
        "hf://user/repo, s3://bucket/prefix, file:///path",
    )
    parser.add_argument(
        "out_root",
        nargs="?",
        type=Path,
        default=None,
        help=f"output root (gets {layout.speaker_prefix('NAME', 'onnx')}/ with an "
        f"{layout.INT8_SUBDIR}/ folder); default: the cache",
    )
    parser.add_argument("--name", required=True, help="voice name (its folder in the layout)")
    parser.add_argument(
        "--bert-source",
        default=OFFICIAL_SOURCE,
        help=f"where the BERT is (default {OFFICIAL_SOURCE})",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="cache root (default: $HAYAKOE_CACHE, else ~/.cache/hayakoe)",
    )
    parser.add_argument(
        "--method",
        choices=["minmax", "entropy", "percentile"],
        default=None,
        help="activation calibration (default: the engine's, see docs)",
    )
    parser.add_argument("--threads", type=int, default=None, help="ONNX Runtime threads")
    parser.add_argument(
        "--force",
        action="store_true",
        help="make the graphs again even where valid ones are (same synthesizer and recipe)",
    )
    parser.add_argument(
        "--measure",
        action="store_true",
        help="take the speed measurement of --precision auto again, even if one is stored",
    )
    parser.add_argument(
        "--hf-token-file",
        type=Path,
        default=None,
        help="file holding a Hugging Face token (else $HF_TOKEN)",
    )
    parser.add_argument("--debug", action="store_true", help="debug logging")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    args = build_parser().parse_args(argv)
    setup_logging(args.debug)
    if args.threads is not None and args.threads < 1:
        print("quantize: --threads must be at least 1", file=sys.stderr)
        return 2
    token = None
    if args.hf_token_file is not None:
        try:
            token = args.hf_token_file.read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            print(
                f"quantize: cannot read --hf-token-file {args.hf_token_file}: {exc}",
                file=sys.stderr,
            )
            return 2
    from engine.neural.quantize import quantize_voice

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        graphs = quantize_voice(
            args.name,
            args.src,
            args.out_root,
            bert_source=args.bert_source,
            cache_dir=args.cache_dir,
            token=token,
            method=args.method,
            threads=args.threads,
            progress=progress,
            force=args.force,
            measure=_measure_when(args.measure, args.out_root is not None),
        )
    except FileNotFoundError as exc:
        print(f"quantize: {redact(str(exc))}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"quantize: {redact(str(exc))}", file=sys.stderr)
        return 2
    except (OSError, RuntimeError) as exc:
        print(f"quantize: {redact(str(exc))}", file=sys.stderr)
        return 1
    report = graphs.report
    print(f"wrote {graphs.directory}")
    print(f"{'style':<10} {'seconds':>7} {'SNR dB':>7} {'log-mel dB':>10} {'MCD dB':>7}  sentence")
    for s in report.sentences:
        print(
            f"{s.style[:10]:<10} {s.seconds:7.2f} {s.snr_db:7.1f} {s.logmel_db:10.2f} "
            f"{s.mcd_db:7.2f}  {s.sentence}"
        )
    print(report.summary())
    if not report.passed:
        print("precision auto will run this voice in fp32 (precision int8 forces int8)")
    return 0


def _measure_when(again: bool, baked: bool) -> MeasureWhen:
    """`--measure`: again; else into the cache when owed, baked into OUT_ROOT not at all."""
    from engine.neural.quantize import MeasureWhen

    if again:
        return MeasureWhen.AGAIN
    return MeasureWhen.SKIP if baked else MeasureWhen.OWED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
