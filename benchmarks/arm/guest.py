"""What runs inside the arm64 root, under qemu-aarch64 (numpy and onnxruntime; torch and
executorch for ExecuTorch programs). No project import: the root need not have it.

    python guest.py info
    python guest.py count MANIFEST FRAMES[,FRAMES...]
    python guest.py outputs MANIFEST IN.npz OUT.npz

MANIFEST (JSON, written by the host, paths as the guest sees them) names one decoder:
`{"kind": "ort", "stages": [ONNX, ...], "z": NAME, "g": NAME|null, "stage_in": NAME,
"channels": C, "g_file": NPY|null}` (ONNX Runtime, one session per stage as the engine runs
its decoder, the engine's session options with one thread) or `{"kind": "pte", "program":
PTE, "channels": C, "g_file": NPY|null}` (an ExecuTorch program, its threadpool at one thread).

`info` prints (JSON) the CPU features the kernel (here qemu, from the emulated CPU model)
reports in AT_HWCAP/AT_HWCAP2, what the kernel libraries dispatch on, and the versions.
`count` runs the decoder once on each number of latent frames after a warm-up run of each,
marking every stage of every run for the instruction-counting plugin (`insn_count.c`:
lseek(-1, MAGIC, k) before each stage, and once after the last). `outputs` decodes the
held-out latents of IN.npz (`held0000.z`, `held0000.g`, ...) and writes the audio to OUT.npz.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from collections.abc import Callable
from typing import Any

MARKER_MAGIC = 0x48796B6F65417231  # "HykoeAr1", as in insn_count.c

# AArch64 Linux HWCAP bits (arch/arm64/include/uapi/asm/hwcap.h)
HWCAP_BITS = {"fp": 0, "asimd": 1, "aes": 3, "atomics": 8, "fphp": 9, "asimdhp": 10,
              "asimdrdm": 12, "lrcpc": 15, "asimddp": 20, "sve": 22, "asimdfhm": 23}  # fmt: skip
HWCAP2_BITS = {"i8mm": 13, "bf16": 14, "svei8mm": 9}
AT_HWCAP, AT_HWCAP2 = 16, 26

Stage = Callable[[Any], Any]


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


def _ort_stages(m: dict[str, Any]) -> tuple[list[Stage], Callable[[Any, Any], Any]]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
    sessions = [
        ort.InferenceSession(p, sess_options=opts, providers=["CPUExecutionProvider"])
        for p in m["stages"]
    ]

    def first(feeds: Any) -> Any:
        z, g = feeds
        x = {m["z"]: z}
        if m["g"]:
            x[m["g"]] = g
        return sessions[0].run(None, x)[0]

    def later(sess: Any) -> Stage:
        return lambda x: sess.run(None, {m["stage_in"]: x})[0]

    return [first, *(later(s) for s in sessions[1:])], lambda z, g: (z, g)


def _pte_stages(m: dict[str, Any]) -> tuple[list[Stage], Callable[[Any, Any], Any]]:
    import torch
    from executorch.extension.pybindings import portable_lib
    from executorch.runtime import Runtime

    torch.set_num_threads(1)
    portable_lib._unsafe_reset_threadpool(1)
    method = Runtime.get().load_program(m["program"]).load_method("forward")

    def whole(inputs: Any) -> Any:
        return method.execute(inputs)[0].numpy()

    def prepare(z: Any, g: Any) -> Any:
        return [torch.from_numpy(z)] + ([torch.from_numpy(g)] if g is not None else [])

    return [whole], prepare


def decoder(m: dict[str, Any]) -> Callable[[Any, Any, bool], Any]:
    """z, g, marked → audio; marked: a marker before each stage."""
    stages, prepare = _ort_stages(m) if m["kind"] == "ort" else _pte_stages(m)

    def run(z: Any, g: Any, marked: bool = False) -> Any:
        x = prepare(z, g)
        for k, stage in enumerate(stages):
            if marked:
                mark(k + 1)
            x = stage(x)
        return x

    run.stages = len(stages)  # type: ignore[attr-defined]
    return run


def main(argv: list[str]) -> int:
    import numpy as np

    cmd = argv[0] if argv else ""
    if cmd == "info":
        import onnxruntime as ort

        out: dict[str, Any] = {"hwcaps": hwcaps(), "machine": os.uname().machine,
                               "onnxruntime": ort.__version__}  # fmt: skip
        try:
            from importlib.metadata import version

            out["executorch"], out["torch"] = version("executorch"), version("torch")
        except Exception as exc:  # noqa: BLE001 (the ORT half works without it)
            out["executorch"] = f"absent: {exc}"
        print(json.dumps(out))
        return 0
    if cmd not in ("count", "outputs"):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        m = json.load(f)
    run = decoder(m)
    g = np.load(m["g_file"]) if m.get("g_file") else None
    if cmd == "count":
        sizes = [int(x) for x in argv[2].split(",")]
        rng = np.random.default_rng(7)
        zs = [(0.5 * rng.standard_normal((1, m["channels"], f))).astype(np.float32) for f in sizes]
        samples = [int(np.asarray(run(z, g, False)).size) for z in zs]  # warm-ups
        for z in zs:
            run(z, g, True)
        mark(0)
        print(json.dumps({"frames": sizes, "samples": samples, "stages": run.stages}))  # type: ignore[attr-defined]
        return 0
    with np.load(argv[2]) as data:
        held = {k: data[k] for k in data.files}
    keys = sorted({k.split(".")[0] for k in held})
    got: dict[str, Any] = {
        k: np.asarray(run(held[f"{k}.z"], held.get(f"{k}.g"), False)).reshape(-1) for k in keys
    }
    np.savez(argv[3], **got)
    print(json.dumps({"outputs": len(got)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
