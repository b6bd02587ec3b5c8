"""Memory of a real server process, for sizing containers (Kubernetes requests and limits).

For each configuration a server is started as its own process (`python -m wyoming_hayakoe`)
on loopback and measured with psutil: RSS once it says Ready (voices loaded and prepared),
the peak RSS while it answers `--requests` synthesize requests (sampled every 20 ms), and
RSS after them (what a warm, idle replica holds). Configurations: the embedded voice
`openjtalk-mei`, and a neural voice with the real JP-Extra shapes and the full-size int8
BERT (random weights: memory depends on shapes, not values; `benchmarks.lib.fullsize`;
`--quick`: the tests' small voice instead, 2 requests).

`--aivm`: the speakers of one AivisHub file share one set of sessions. A four-speaker
`.aivmx` with the full-size shapes (random weights, made once into the benchmark cache by the
tests' AivisHub writer; `--quick`: model_small's shapes) served as one voice, then as all four
(`--voice sN=file://...#speaker=N`), each answering in turn; fp32, so that no int8 work runs
behind. Printed: the four-speaker server's RSS over the one-speaker one (target ≤ 1.15×).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from benchmarks.lib import CACHE
from benchmarks.lib.procs import Server
from benchmarks.lib.report import Report
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, server_args
from wyoming_hayakoe.client import WyomingClient

RESULT = None
TEXTS = [
    "こんにちは、今日はいい天気ですね。",
    "リビングの照明を消しました。エアコンは二十五度の冷房で動いています。",
    "明日の天気は晴れのち曇り、最高気温は二十八度、降水確率は二十パーセントです。",
]
MIB = 2**20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--requests", type=int, default=15)
    p.add_argument(
        "--aivm",
        action="store_true",
        help="one speaker of a four-speaker .aivmx against all four (shared sessions)",
    )


async def measure(
    label: str, args: list[str], requests: int, voice: str | list[str]
) -> tuple[float, int, int, int]:
    """(s to Ready, RSS at Ready, peak while speaking, idle after; bytes) of a server started
    with `args`; requests go to the voices of `voice` in turn."""
    voices = [voice] if isinstance(voice, str) else voice
    with tempfile.TemporaryDirectory() as cache:
        with Server([*args, "--cache-dir", cache], label=f"rss-{voice}") as server:
            ready_s = await server.wait_ready()
            ready = peak = server.usage()[0]
            stop = asyncio.Event()

            async def sample() -> None:
                nonlocal peak
                while not stop.is_set():
                    peak = max(peak, server.usage()[0])
                    await asyncio.sleep(0.02)

            sampler = asyncio.create_task(sample())
            for i in range(requests):
                name = voices[i % len(voices)]
                spoken = await WyomingClient(server.uri).speak(TEXTS[i % len(TEXTS)], name)
                assert spoken.seconds > 0.3, f"{label}: no audio"
            stop.set()
            await sampler
            await asyncio.sleep(1.0)
            idle = server.usage()[0]
    return ready_s, ready, peak, idle


def row(label: str, figures: tuple[float, int, int, int]) -> list[object]:
    """A table row: the label, seconds to Ready, then the three RSS figures in MiB."""
    ready_s, *rss = figures
    return [label, f"{ready_s:.1f}", *(f"{b / MIB:,.0f}" for b in rss)]


SPEAKERS = 4


def four_speaker_aivmx(quick: bool) -> tuple[Path, Path]:
    """(a four-speaker `.aivmx`, the root of the BERT it goes with), made once."""
    import numpy as np
    import torch

    from benchmarks.lib.voices import fullsize_root, small_root
    from tests.helpers.aivm import BERT_WIDTH, Speaker, Spec, export_aivis_onnx, write_aivmx

    bert_root = small_root() if quick else fullsize_root()
    out = CACHE / ("aivm-four-small" if quick else "aivm-four")
    path = out / "four.aivmx"
    if path.is_file():
        return path, bert_root
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(4)
    if quick:
        from tests.helpers.aivm import small_model

        model, cfg, vectors = small_model(n_speakers=SPEAKERS, bert_channels=BERT_WIDTH)
    else:
        from benchmarks.lib.fullsize import voice_config
        from engine.model import JPExtraSynthesizer
        from engine.voice_config import parse_config

        cfg = voice_config()
        cfg["data"].update(n_speakers=SPEAKERS, spk2id={f"s{i}": i for i in range(SPEAKERS)})
        model = JPExtraSynthesizer(parse_config(cfg)).eval()
        from engine import layout

        folder = bert_root / layout.speaker_prefix(VOICE_NAME, "onnx")
        vectors = np.load(folder / "style_vectors.npy").astype(np.float32)
    graph = export_aivis_onnx(model, out / "four.onnx")
    spec = Spec("Bench Four", [Speaker(f"S{i}", i, {"Neutral": 0}) for i in range(SPEAKERS)])
    write_aivmx(graph, out / "four.partial.aivmx", cfg, vectors, spec)
    (out / "four.partial.aivmx").replace(path)
    graph.unlink()
    return path, bert_root


def run_aivm(args: argparse.Namespace) -> Report:
    requests = 2 if args.quick else args.requests
    path, bert_root = four_speaker_aivmx(args.quick)
    common = ["--bert-source", str(bert_root), "--precision", "fp32"]
    names = [f"s{i}" for i in range(SPEAKERS)]
    voices = [a for n in names for a in ("--voice", f"{n}=file://{path}#speaker={n[1:]}")]
    one = asyncio.run(measure("one speaker", [*voices[:2], *common], requests, "s0"))
    four = asyncio.run(measure(f"{SPEAKERS} speakers", [*voices, *common], requests, names))
    rows = [row("one speaker of the file", one), row(f"all {SPEAKERS} speakers", four)]
    report = Report(f"Server RSS, one {SPEAKERS}-speaker .aivmx, {requests} requests each (MiB)")
    report.table(
        ["configuration", "start → Ready (s)", "RSS at Ready", "peak while speaking", "idle after"],
        rows,
    )
    report.note(
        f"{SPEAKERS} speakers / 1: RSS at Ready {four[1] / one[1]:.3f}×, idle after "
        f"{four[3] / one[3]:.3f}× (target ≤ 1.15×; "
        f"{'full-size shapes' if not args.quick else 'model_small shapes'}, random weights)"
    )
    return report


def run(args: argparse.Namespace) -> Report:
    from benchmarks.lib.voices import fullsize_root, small_root

    if args.aivm:
        return run_aivm(args)
    requests = 2 if args.quick else args.requests
    if args.quick:
        neural = ("small random-weight voice", server_args(small_root(), SMALL_VOICE), SMALL_VOICE)
    else:
        neural = ("full-size neural voice (int8 BERT)", server_args(fullsize_root()), VOICE_NAME)
    runs = [("embedded openjtalk-mei", ["--voice", "openjtalk-mei"], "openjtalk-mei"), neural]
    rows = [row(label, asyncio.run(measure(label, a, requests, voice))) for label, a, voice in runs]
    report = Report(f"Server RSS, {requests} requests each (MiB)")
    report.table(
        ["configuration", "start → Ready (s)", "RSS at Ready", "peak while speaking", "idle after"],
        rows,
    )
    return report
