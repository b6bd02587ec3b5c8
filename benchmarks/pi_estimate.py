"""ESTIMATE (not a measurement): what to expect on Home Assistant's boards and other SBCs.

    python benchmarks/pi_estimate.py [--front-share 0.2] [--flow-share 0.48] [--answer 3]

Boards: Home Assistant Yellow (Raspberry Pi CM4), Home Assistant Green (Rockchip RK3566),
Raspberry Pi 4 and 5, and the CPU of a Jetson Orin Nano. Nothing here ran on a board: the
figures combine three things, each cited.

1. Operation counts, measured: multiply-accumulates (MACs) of every convolution of the
   full-size voice's decoder graph, per second of 44.1 kHz audio, split into the part int8
   runs (`engine.synth.quantize` settings) and the part left in fp32 (the last stage).
2. Published per-core throughput, from Arm's Software Optimization Guides (instruction
   throughput tables: ASIMD FMLA and, where the core has it, SDOT/UDOT, 128-bit forms):
   - Cortex-A72 (Armv8.0, no dot product; "Cortex-A72 Software Optimization Guide",
     UAN0016A): two 128-bit FP/ASIMD pipes → 8 fp32 MACs/cycle, about 16 int8
     MACs/cycle through widening multiply-accumulates (SMLAL/UMLAL);
   - Cortex-A55 (Armv8.2 with dot product; "Cortex-A55 Software Optimization Guide",
     ARM-EPM-128372): in-order, one 128-bit ASIMD issue per cycle → 4 fp32 and 16 int8
     (SDOT/UDOT) MACs/cycle;
   - Cortex-A76 ("Cortex-A76 Software Optimization Guide") and Cortex-A78/A78AE
     ("Cortex-A78 Software Optimization Guide"): two 128-bit pipes → 8 fp32 and 32 int8
     (SDOT/UDOT) MACs/cycle.
   Clocks and core counts from the makers' datasheets: CM4 4× A72 at 1.5 GHz (Raspberry Pi
   Compute Module 4 datasheet; Home Assistant Yellow is built on it); RK3566 4× A55 at
   1.8 GHz (Rockchip RK3566 datasheet; Home Assistant Green's SoC); Pi 4 4× A72 at 1.8 GHz
   (boards since 2020; 1.5 GHz before); Pi 5 4× A76 at 2.4 GHz; Jetson Orin Nano 6× A78AE
   at 1.5 GHz (NVIDIA Jetson Orin Nano series datasheet; 1.7 GHz in the later "Super"
   power mode).
3. One published measurement anchors the efficiency: hayakoe 1.3.1 on a Raspberry Pi 4B
   runs at 0.3× real time (RTF 3.3, ONNX Runtime, fp32, its README), and our fp32 engine
   did the same work in 0.8× hayakoe's time here (benchmarks/results). The fraction of peak
   that implies is assumed for int8 and for the other cores too (ONNX Runtime's MLAS
   kernels on all of them) — optimistic for the in-order Cortex-A55, whose 128-bit loads
   stall the pipe (ONNX Runtime carries A55-specific int8 kernels for that reason), so read
   Green's figures as a best case. Of the non-decoder work (text encoder, flow, BERT:
   `--front-share` of fp32 time), the flow's feed-forward convolutions (`--flow-share` of
   it, from a profile on x86) run in int8 like the decoder; the rest runs at fp32 speed.

The playback guard (`--playback-guard auto`) holds the first audio of an answer of D seconds
back by about D·(r − 1) when the real-time factor r is above 1, so that playback, once
started, never waits; below 1 it sends at once. The table gives that wait for a `--answer`
second answer (default 3 s, a typical Assist reply). Memory is not estimated: the
full-size int8 voice with its BERT holds about 0.6 GB after loading (x86, same files), so
every board here with 2 GB or more fits one voice.
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
    "Home Assistant Yellow (CM4, 4× Cortex-A72 1.5 GHz)": (4, 1.5, 8, 16),
    "Home Assistant Green (RK3566, 4× Cortex-A55 1.8 GHz)": (4, 1.8, 4, 16),
    "Raspberry Pi 4 (4× Cortex-A72 1.8 GHz)": (4, 1.8, 8, 16),
    "Raspberry Pi 5 (4× Cortex-A76 2.4 GHz)": (4, 2.4, 8, 32),
    "Jetson Orin Nano, CPU (6× Cortex-A78AE 1.5 GHz)": (6, 1.5, 8, 32),
}
ANCHOR = "Raspberry Pi 4 (4× Cortex-A72 1.8 GHz)"
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


def guard_wait(answer_s: float, rtf: float) -> float:
    """The playback guard's hold before the first audio of an `answer_s`-second answer at
    real-time factor `rtf`: playback started then ends just as synthesis does."""
    return answer_s * max(0.0, rtf - 1.0)


def advice(rtf8: float) -> str:
    """Which voice to run on a board whose full-size int8 voice runs at `rtf8`."""
    if rtf8 <= 0.8:
        return "a neural voice, int8 (keeps up with playback)"
    if rtf8 <= 1.0:
        return "a neural voice, int8 (just keeps up; short waits when busy)"
    if rtf8 <= 2.0:
        return "a neural voice, int8, if a wait before each answer is fine; else `openjtalk-mei`"
    return "`openjtalk-mei` (a neural answer waits longer than it lasts)"


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
    parser.add_argument(
        "--answer", type=float, default=3.0, help="answer length D (s) for the guard's wait"
    )
    parser.add_argument(
        "--fp32-tail-stages",
        type=int,
        default=None,
        help="decoder stages left in fp32 (default: today's recipe, QuantSettings)",
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
    tail = args.fp32_tail_stages
    if tail is None:
        tail = QuantSettings().fp32_tail_stages
    q, f, hop = decoder_macs(synth.fp32_decoder_path, tail)
    fps = 44100 / hop
    gq, gf = q * fps / 1e9, f * fps / 1e9
    print(
        f"decoder per second of audio: {gq + gf:.1f} GMAC ({2 * (gq + gf):.0f} GFLOP); "
        f"int8 part {gq:.1f} GMAC, fp32 tail {gf:.1f} GMAC"
    )
    # Efficiency from the published Pi 4 figure: our fp32 RTF there ≈ 0.8 × 3.33.
    cores, ghz, fp, i8 = BOARDS[ANCHOR]
    ours_pi4 = HAYAKOE_PI4_RTF * OURS_VS_HAYAKOE_FP32
    decoder_s = ours_pi4 * (1 - args.front_share)  # seconds per second of audio
    eff = (gq + gf) / decoder_s / (cores * ghz * fp)
    print(f"implied efficiency on the Pi 4 (fp32): {eff:.0%} of peak")
    d = args.answer
    print("\nESTIMATE — real-time factor (lower is better; < 1 keeps up with playback), and")
    print(f"the playback guard's wait before a {d:g}-second answer (≈ D·(r − 1) when r > 1):")
    print(
        "| board | fp32 RTF | int8 RTF | int8 speed-up | wait, fp32 | wait, int8 | voice to use |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for board, (cores, ghz, fp, i8) in BOARDS.items():
        peak32, peak8 = cores * ghz * fp * eff, cores * ghz * i8 * eff
        dec32 = (gq + gf) / peak32
        front = dec32 * args.front_share / (1 - args.front_share)
        rtf32 = dec32 + front
        front8 = front * (1 - args.flow_share) + front * args.flow_share * fp / i8
        rtf8 = gq / peak8 + gf / peak32 + front8
        print(
            f"| {board} | {rtf32:.2f} | {rtf8:.2f} | {rtf32 / rtf8:.1f}× | "
            f"{guard_wait(d, rtf32):.1f} s | {guard_wait(d, rtf8):.1f} s | {advice(rtf8)} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
