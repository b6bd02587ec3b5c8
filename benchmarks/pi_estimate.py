"""ESTIMATE (not a measurement): what int8 means on a Raspberry Pi 4 and 5.

    python benchmarks/pi_estimate.py [--front-share 0.2] [--flow-share 0.48]

1. Operation counts, measured: multiply-accumulates (MACs) of every convolution of the
   full-size voice's decoder graph, per second of 44.1 kHz audio, split into the part int8
   runs (`engine.synth.quantize` settings) and the part left in fp32 (the last stage).
2. Published per-core throughput (Arm's software optimization guides): Cortex-A72 (Pi 4,
   1.8 GHz, Armv8.0: no dot-product instructions) 8 fp32 MACs/cycle (two 128-bit FMA pipes)
   and about 16 int8 MACs/cycle (widening multiply-accumulate); Cortex-A76 (Pi 5, 2.4 GHz,
   Armv8.2 with SDOT/UDOT) 8 fp32 and 32 int8 MACs/cycle. Four cores each.
3. One published measurement anchors the efficiency: hayakoe 1.3.1 on a Raspberry Pi 4B
   runs at 0.3× real time (RTF 3.3, ONNX Runtime, fp32), and our fp32 engine did the same work
   in 0.8× hayakoe's time here (benchmarks/results). The fraction of peak that implies is
   assumed for int8 and for the Pi 5 too (MLAS kernels on both). Of the non-decoder work
   (text encoder, flow, BERT: `--front-share` of fp32 time), the flow's feed-forward
   convolutions (`--flow-share` of it, from a profile on x86) run in int8 like the decoder;
   the rest runs at fp32 speed throughout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

BOARDS = {
    # name: (cores, GHz, fp32 MACs/cycle/core, int8 MACs/cycle/core)
    "Raspberry Pi 4 (Cortex-A72 1.8 GHz)": (4, 1.8, 8, 16),
    "Raspberry Pi 5 (Cortex-A76 2.4 GHz)": (4, 2.4, 8, 32),
}
HAYAKOE_PI4_RTF = 1 / 0.3
OURS_VS_HAYAKOE_FP32 = 0.8


def decoder_macs(decoder: Path, tail_stages: int) -> tuple[float, float, int]:
    """(int8 MACs, fp32 MACs) per latent frame of `decoder`, and the hop (samples/frame)."""
    import onnx

    from engine.synth.quantize import tail_nodes

    model = onnx.load(str(decoder))
    inits = {t.name: t for t in model.graph.initializer}
    tail = set(tail_nodes(decoder, tail_stages))
    rate: dict[str, float] = {i.name: 1.0 for i in model.graph.input}  # samples per frame
    q = f = 0.0
    for node in model.graph.node:
        r = max((rate.get(x, 0.0) for x in node.input if x), default=1.0)
        if node.op_type in ("Conv", "ConvTranspose") and node.input[1] in inits:
            w = list(inits[node.input[1]].dims)
            if node.op_type == "ConvTranspose":
                stride = next(a.ints[0] for a in node.attribute if a.name == "strides")
                r_out = r * stride
                macs = w[0] * w[1] * w[2] * r  # in × out/group × k per input sample
            else:
                r_out = r
                macs = w[0] * w[1] * w[2] * r_out  # out × in/group × k per output sample
            if node.name in tail:
                f += macs
            else:
                q += macs
        else:
            r_out = r
        for out in node.output:
            rate[out] = r_out
    hop = int(max(rate.values()))
    return q, f, hop


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--front-share",
        type=float,
        default=0.2,
        help="fp32 time outside the decoder (measured ~0.2 on x86)",
    )
    parser.add_argument(
        "--flow-share",
        type=float,
        default=0.48,
        help="part of that time in the flow's feed-forward convolutions, int8 with "
        "--precision int8 (x86 profile, medium text: 0.64 of the front graph's time, the "
        "front graph 0.75 of the time outside the decoder, BERT the rest)",
    )
    args = parser.parse_args()
    import fullsize

    from engine import EngineOptions
    from engine.layout import onnx_folder_files, speaker_prefix
    from engine.neural.loader import _split_backend
    from engine.synth.quantize import QuantSettings

    root = fullsize.build()
    files = onnx_folder_files(root / speaker_prefix(fullsize.VOICE_NAME, "onnx"))
    synth = _split_backend(files, EngineOptions(precision="fp32", threads=1))
    q, f, hop = decoder_macs(synth.fp32_decoder_path, QuantSettings().fp32_tail_stages)
    fps = 44100 / hop
    gq, gf = q * fps / 1e9, f * fps / 1e9
    print(
        f"decoder per second of audio: {gq + gf:.1f} GMAC ({2 * (gq + gf):.0f} GFLOP); "
        f"int8 part {gq:.1f} GMAC, fp32 tail {gf:.1f} GMAC"
    )
    # Efficiency from the published Pi 4 figure: our fp32 RTF there ≈ 0.8 × 3.33.
    cores, ghz, fp, i8 = BOARDS["Raspberry Pi 4 (Cortex-A72 1.8 GHz)"]
    ours_pi4 = HAYAKOE_PI4_RTF * OURS_VS_HAYAKOE_FP32
    decoder_s = ours_pi4 * (1 - args.front_share)  # seconds per second of audio
    eff = (gq + gf) / decoder_s / (cores * ghz * fp)
    print(f"implied efficiency on the Pi 4 (fp32): {eff:.0%} of peak")
    print("\nESTIMATE — real-time factor (lower is better; < 1 keeps up with playback):")
    print("| board | fp32 RTF | int8 RTF | int8 speed-up |")
    print("| --- | ---: | ---: | ---: |")
    for board, (cores, ghz, fp, i8) in BOARDS.items():
        peak32, peak8 = cores * ghz * fp * eff, cores * ghz * i8 * eff
        dec32 = (gq + gf) / peak32
        front = dec32 * args.front_share / (1 - args.front_share)
        rtf32 = dec32 + front
        front8 = front * (1 - args.flow_share) + front * args.flow_share * fp / i8
        rtf8 = gq / peak8 + gf / peak32 + front8
        print(f"| {board} | {rtf32:.2f} | {rtf8:.2f} | {rtf32 / rtf8:.1f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
