"""Resident memory of a runtime over new input lengths: the traces `auto`'s memory rule
(`engine.int8.measure.settled_growth_mb`) is tested on.

Each runtime in a process of its own: the full-size random-weight voice's split synthesizer
(front graph and whole decoder) on the warm-up sentences, once at their own length, then
`--runs` times at new lengths, RSS (MB) recorded before the first timed run and after each.
Lengths as the measurement times them (each run a little shorter than the last) and as it
timed them before (each a little longer: an arena then grows every run); OpenVINO compiles
per length either way. Prints the traces with the rule's figure and verdict, and
`--write-test-data` stores them as `tests/data/measure_traces.json` (`--quick`: the tests'
small voice, ONNX Runtime only, two runs; nothing written).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.lib import REPO
from benchmarks.lib.procs import program_env
from benchmarks.lib.report import Report, log
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, fullsize_root, small_root

RESULT = "measure-traces"
TEST_DATA = REPO / "tests" / "data" / "measure_traces.json"

_ONE = r"""
import json, sys
from pathlib import Path
from benchmarks.engine.measure_traces import trace
print(json.dumps(trace(Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))))
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=int, default=6, help="timed runs at new lengths")
    p.add_argument("--write-test-data", action="store_true", help=f"store in {TEST_DATA}")


def trace(root: Path, name: str, runtime: str, order: str, runs: int) -> list[float]:
    """RSS (MB) before the first timed run and after each (see the module text)."""
    from engine import EngineOptions
    from engine.bert import load_bert
    from engine.int8.measure import WARMUP_TEXT, Candidate
    from engine.int8.timing import rss_mb
    from engine.layout import onnx_folder_files, speaker_prefix
    from engine.neural.build import split_synthesizer, voice_spec
    from engine.synth.common import NoiseSource, SynthInputs, SynthParams
    from engine.text import analyze, sentences_of

    cache = REPO / "benchmarks" / ".cache" / "ours-cache"
    files = onnx_folder_files(root / speaker_prefix(name, "onnx"))
    synth = split_synthesizer(
        files, EngineOptions(threads=2), cache, None, Candidate(runtime, "fp32")
    )
    bert = load_bert(root, "cpu", threads=2, cache_dir=cache)
    spec = voice_spec(name, files)
    vec = spec.style_vectors[0].astype("float32")
    inputs = []
    for sentence in sentences_of(WARMUP_TEXT):
        a = analyze(sentence).with_blanks()
        feats = bert.features([a.bert_text], [a.word2ph])[0]
        phones, tones, langs = (
            np.asarray(x, np.int64) for x in (a.phone_ids, a.tone_ids, a.lang_ids)
        )
        inputs.append(SynthInputs(phones, tones, langs, feats, vec, 0))

    def run(k: int) -> None:
        step = -0.011 if order == "shorter" else 0.011
        params = SynthParams(length_scale=1.0 + step * k)
        for i, x in enumerate(inputs):
            synth.synthesize(x, params, NoiseSource(1, i))

    run(0)
    out = [rss_mb() or 0.0]
    for k in range(1, runs + 1):
        run(k)
        out.append(rss_mb() or 0.0)
    return [round(m, 1) for m in out]


def run(args: argparse.Namespace) -> Report:
    from engine.int8.measure import MEMORY_GROWTH_MB, settled_growth_mb
    from engine.synth import openvino_backend

    root, name = (small_root(), SMALL_VOICE) if args.quick else (fullsize_root(), VOICE_NAME)
    runs = 2 if args.quick else args.runs
    kinds = [("onnxruntime", "shorter"), ("onnxruntime", "longer")]
    if args.quick:
        kinds = kinds[:1]
    elif openvino_backend.available():
        kinds.append(("openvino", "shorter"))
    report = Report("Memory over new input lengths (fp32, whole decoder)")
    traces: dict[str, Any] = {}
    rows = []
    for runtime, order in kinds:
        log(f"measure-traces: {runtime}, lengths {order} run by run")
        proc = subprocess.run(
            [sys.executable, "-c", _ONE, str(root), name, runtime, order, str(runs)],
            capture_output=True,
            text=True,
            env=program_env(),
            cwd=REPO,
            check=True,
        )
        rss = json.loads(proc.stdout.strip().splitlines()[-1])
        growth = settled_growth_mb(rss)
        traces[f"{runtime}-{order}"] = rss
        rows.append(
            [
                runtime,
                order,
                " ".join(f"{b - a:+.0f}" for a, b in zip(rss, rss[1:])),
                f"{growth:.1f}",
                "grows" if growth > MEMORY_GROWTH_MB else "settles",
            ]
        )
    report.table(
        ["runtime", "lengths run by run", "MB added per run", "settled MB/run", "rule"], rows
    )
    report.data["traces"] = traces
    report.data["threshold_mb"] = MEMORY_GROWTH_MB
    if args.write_test_data and not args.quick:
        data = {
            "about": "RSS (MB) before the first timed run and after each, new input lengths "
            f"each run, full-size random-weight voice, fp32: {__name__}",
            "settling": {k: v for k, v in traces.items() if k.startswith("onnxruntime-shorter")},
            "growing": {k: v for k, v in traces.items() if k.startswith("openvino")},
            "recorded_not_judged": {k: v for k, v in traces.items() if k.endswith("-longer")},
        }
        TEST_DATA.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        log(f"wrote {TEST_DATA}")
    return report
