"""What runs inside the arm64 root, under qemu-aarch64 (numpy and onnxruntime only).

    python probe.py info
    python probe.py optimize GRAPH OUT [--level all|extended]
    python probe.py count GRAPH FRAMES[,FRAMES...]
    python probe.py profile GRAPH FRAMES OUT_DIR

`info` prints (JSON) the machine as the guest sees it: the ONNX Runtime version, its
providers, and the CPU features the kernel (here qemu, from the emulated CPU model) reports
in the ELF auxiliary vector (AT_HWCAP/AT_HWCAP2): what ONNX Runtime's MLAS reads to choose
its kernels. `optimize` writes the graph ONNX Runtime will run, with the session options the
engine uses (`engine/synth/onnx_backend.py` `session_options`: ORT_ENABLE_ALL, sequential,
one thread, no spinning; `--level extended` is what `engine/synth/ort_cache.py` saves).
`count` runs the decoder once on each number of latent frames after a warm-up run of each
(first-run allocations, caches), marking the runs for the instruction-counting plugin
(`insn_count.c`: lseek(-1, MAGIC, k) before run k and after the last).
`profile` does two runs with ONNX Runtime's profiler on and keeps its JSON.

No engine import: the root has no torch and need not have the project installed; the
session options are spelled here as the engine spells them (one place each would be better;
the drivers check the engine's values against these on the host, `evidence.py`).
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

MARKER_MAGIC = 0x48796B6F65417231  # "HykoeAr1", as in insn_count.c

# AArch64 Linux HWCAP bits (arch/arm64/include/uapi/asm/hwcap.h)
HWCAP_BITS = {
    "fp": 0,
    "asimd": 1,
    "aes": 3,
    "atomics": 8,
    "fphp": 9,
    "asimdhp": 10,
    "asimdrdm": 12,
    "lrcpc": 15,
    "asimddp": 20,
    "sve": 22,
    "asimdfhm": 23,
}
HWCAP2_BITS = {"i8mm": 13, "bf16": 14, "svei8mm": 9}
AT_HWCAP, AT_HWCAP2 = 16, 26


def mark(label: int) -> None:
    """A marker for the plugin: a system call that fails and changes nothing."""
    try:
        os.lseek(-1, MARKER_MAGIC, label)
    except OSError:
        pass


def hwcaps() -> list[str]:
    libc = ctypes.CDLL(None)
    libc.getauxval.restype = ctypes.c_ulong
    libc.getauxval.argtypes = [ctypes.c_ulong]
    h1, h2 = libc.getauxval(AT_HWCAP), libc.getauxval(AT_HWCAP2)
    return [n for n, b in HWCAP_BITS.items() if h1 >> b & 1] + [
        n for n, b in HWCAP2_BITS.items() if h2 >> b & 1
    ]


def session_options(ort, level: str = "all"):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if level == "all"
        else ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    )
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return opts


def feed(session, frames: int):
    """Random inputs: free axes are batch 1 (the first) and `frames` (the others)."""
    import numpy as np

    rng = np.random.default_rng(7)
    out = {}
    for inp in session.get_inputs():
        dims = [d if isinstance(d, int) else None for d in inp.shape]
        free = [i for i, d in enumerate(dims) if d is None]
        for i in free:
            dims[i] = 1 if i == 0 else frames
        out[inp.name] = (0.5 * rng.standard_normal(dims)).astype(np.float32)
    return out


def main(argv: list[str]) -> int:
    import onnxruntime as ort

    cmd = argv[0]
    if cmd == "info":
        print(
            json.dumps(
                {
                    "onnxruntime": ort.__version__,
                    "providers": ort.get_available_providers(),
                    "hwcaps": hwcaps(),
                    "machine": os.uname().machine,
                }
            )
        )
        return 0
    if cmd == "optimize":
        graph, out = argv[1], argv[2]
        level = argv[4] if len(argv) > 4 and argv[3] == "--level" else "all"
        opts = session_options(ort, level)
        opts.optimized_model_filepath = out
        ort.InferenceSession(graph, sess_options=opts, providers=["CPUExecutionProvider"])
        print(json.dumps({"optimized": out, "level": level}))
        return 0
    if cmd == "count":
        graph, sizes = argv[1], [int(f) for f in argv[2].split(",")]
        session = ort.InferenceSession(
            graph, sess_options=session_options(ort), providers=["CPUExecutionProvider"]
        )
        feeds = [feed(session, frames) for frames in sizes]
        samples = [int(session.run(None, x)[0].size) for x in feeds]  # warm-ups
        for k, x in enumerate(feeds):
            mark(k + 1)
            session.run(None, x)
        mark(len(feeds) + 1)
        print(json.dumps({"frames": sizes, "samples": samples}))
        return 0
    if cmd == "profile":
        graph, frames, out_dir = argv[1], int(argv[2]), argv[3]
        opts = session_options(ort)
        opts.enable_profiling = True
        opts.profile_file_prefix = os.path.join(out_dir, "ort-profile")
        session = ort.InferenceSession(graph, sess_options=opts, providers=["CPUExecutionProvider"])
        x = feed(session, frames)
        for _ in range(2):
            session.run(None, x)
        print(json.dumps({"profile": session.end_profiling()}))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
