"""ARM evidence without a board: which kernels our int8 decoder runs on aarch64, and how many
instructions of which kind each precision executes per second of audio, under qemu
user-mode emulation with CPU models close to the boards'.

    sudo bash benchmarks/arm/root.sh                 # once: the arm64 root (about 10 minutes)
    sudo python -m benchmarks.arm.evidence           # full-size voice (1-2 hours on 2 cores)
    sudo python -m benchmarks.arm.evidence --quick   # small voice, one CPU, fp32 + int8: ~1 minute

For each CPU target (`TARGETS`: the qemu CPU model, and the /proc/cpuinfo identity ONNX
Runtime's cpuinfo reads), inside the arm64 root with ONNX Runtime's real aarch64 wheel:

1. `info`: the CPU features qemu reports for that model (AT_HWCAP: what MLAS dispatches on);
2. the graph ONNX Runtime runs, per precision, with the engine's session options
   (`optimized_model_filepath`; ORT_ENABLE_ALL as `engine/synth/onnx_backend.py`, and
   ORT_ENABLE_EXTENDED as `engine/synth/ort_cache.py` saves it), counted by operator here;
3. executed instructions by class (`insn_count.c`, a TCG plugin) over decoder runs of F and 2F
   latent frames after warm-ups: the difference is the cost of F frames with the per-run
   overhead removed, scaled to one second of audio;
4. a throughput-bound cycle estimate of those counts on the core (`cores.py`: LLVM's
   scheduling models of the Arm optimization guides), and its ratios between precisions;
5. (`--profile`) ONNX Runtime's profiler, time by operator: under TCG emulation, where an
   emulated instruction costs wildly different host time by kind, these shares say little.

Results: JSON (`--json`) and Markdown (`--markdown`, benchmarks/results/arm-evidence.md).
Weights are random (no trained voice exists here): costs depend on shapes, not values.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.arm import cores, graphs  # noqa: E402

_LOG = logging.getLogger("benchmarks.arm.evidence")

HERE = Path(__file__).resolve().parent
DEFAULT_ROOT = Path(os.environ.get("ARM64_ROOT", "/var/tmp/wyoming-hayakoe-arm64-evidence"))
DEFAULT_WORK = Path(os.environ.get("ARM_EVIDENCE_WORK", "/var/tmp/wyoming-hayakoe-arm-evidence"))
RESULTS = REPO / "benchmarks" / "results"
VENV_PYTHON = "/opt/venv-evidence/bin/python"
BUNDLE = "/opt/qemu-host"  # inside the root (root.sh)
INSIDE_WORK = "/opt/arm-evidence"  # the work folder, bind-mounted inside the root
PRECISIONS = ("fp32", "int8", "fp16")


@dataclass(frozen=True)
class CpuTarget:
    """A qemu CPU model and the /proc/cpuinfo identity shown with it."""

    key: str
    qemu_cpu: str
    part: int
    variant: int
    revision: int
    features: str
    boards: str
    note: str = ""

    def cpuinfo(self, count: int) -> str:
        one = (
            "processor\t: {i}\nBogoMIPS\t: 50.00\nFeatures\t: {f}\nCPU implementer\t: 0x41\n"
            "CPU architecture: 8\nCPU variant\t: {v:#x}\nCPU part\t: {p:#05x}\n"
            "CPU revision\t: {r}\n\n"
        )
        return "".join(
            one.format(i=i, f=self.features, v=self.variant, p=self.part, r=self.revision)
            for i in range(count)
        )


V80 = "fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid"
V82 = V80 + " atomics fphp asimdhp asimdrdm lrcpc dcpop asimddp"
TARGETS = {
    "cortex-a72": CpuTarget(
        "cortex-a72", "cortex-a72", 0xD08, 0, 3, V80, "Raspberry Pi 4, CM4 (HA Yellow)"
    ),
    "cortex-a76": CpuTarget("cortex-a76", "cortex-a76", 0xD0B, 4, 1, V82, "Raspberry Pi 5"),
    "cortex-a55": CpuTarget(
        "cortex-a55",
        "cortex-a76",
        0xD05,
        2,
        0,
        V82,
        "RK3566 (HA Green)",
        "qemu 7.2 has no cortex-a55 model: the cortex-a76 model (the same Armv8.2 features: "
        "dot product, fp16) with an A55's /proc/cpuinfo (part 0xd05), so ONNX Runtime's "
        "cpuinfo takes the core for an A55 and MLAS may choose its A55 kernels",
    ),
}


def _run(cmd: list[str], timeout: float, **kw: Any) -> subprocess.CompletedProcess[str]:
    _LOG.debug("$ %s", " ".join(cmd))
    return subprocess.run(cmd, text=True, capture_output=True, timeout=timeout, check=False, **kw)


# ---- the plugin ------------------------------------------------------------------------------


def plugin_header(work: Path) -> Path:
    """The folder holding qemu-plugin.h: $QEMU_PLUGIN_INCLUDE, an installed one, or the
    header extracted from Debian's qemu source package (`apt-get source --download-only`,
    needs a deb-src entry) into `work`."""
    env = os.environ.get("QEMU_PLUGIN_INCLUDE")
    candidates = [Path(env)] if env else []
    candidates += [Path("/usr/include"), Path("/usr/include/qemu"), work / "qemu-include"]
    for c in candidates:
        if (c / "qemu-plugin.h").is_file():
            return c
    src = work / "qemu-source"
    src.mkdir(parents=True, exist_ok=True)
    got = _run(["apt-get", "source", "--download-only", "qemu"], 900, cwd=src)
    tarballs = sorted(src.glob("qemu_*.orig.tar.*"))
    if not tarballs:
        raise RuntimeError(
            "no qemu-plugin.h: set QEMU_PLUGIN_INCLUDE, or add a deb-src line for Debian so "
            f"`apt-get source qemu` works ({got.stderr.strip()[-300:]})"
        )
    out = work / "qemu-include"
    out.mkdir(parents=True, exist_ok=True)
    listing = _run(["tar", "-tf", str(tarballs[-1])], 600).stdout.splitlines()
    member = next(m for m in listing if m.endswith("include/qemu/qemu-plugin.h"))
    data = subprocess.run(
        ["tar", "-xOf", str(tarballs[-1]), member], capture_output=True, check=True
    )
    (out / "qemu-plugin.h").write_bytes(data.stdout)
    return out


def build_plugin(work: Path) -> Path:
    """Compile insn_count.c → work/insn_count.so."""
    include = plugin_header(work)
    out = work / "insn_count.so"
    cc = os.environ.get("CC", "cc")
    cmd = [cc, "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-shared", "-fPIC",
           f"-I{include}", f"-I{HERE}", "-o", str(out), str(HERE / "insn_count.c")]  # fmt: skip
    got = _run(cmd, 300)
    if got.returncode:
        raise RuntimeError(f"building the plugin failed: {got.stderr.strip()}")
    return out


# ---- the emulator ----------------------------------------------------------------------------


class Emulator:
    """Runs probe.py in the arm64 root under the host's qemu-aarch64, one private mount
    namespace per run: proc, the target's /proc/cpuinfo, sysfs (ONNX Runtime's cpuinfo reads
    the possible/present CPU lists there, else it gives up on the CPU's features) and the
    work folder mounted there."""

    def __init__(self, root: Path, work: Path, plugin: Path | None) -> None:
        self.root, self.work = root, work
        self.plugin = plugin
        qemu = root / BUNDLE.lstrip("/") / "qemu-aarch64"
        py = root / VENV_PYTHON.lstrip("/")
        if not qemu.is_file() or not (py.is_file() or py.is_symlink()):
            raise RuntimeError(f"{root}: no arm64 root with {BUNDLE} and {VENV_PYTHON}; "
                               "make it with `sudo bash benchmarks/arm/root.sh`")  # fmt: skip
        shutil.copy(HERE / "probe.py", work / "probe.py")
        if plugin is not None and plugin.resolve() != (work / "insn_count.so").resolve():
            shutil.copy(plugin, work / "insn_count.so")

    def qemu_version(self) -> str:
        return (self.root / BUNDLE.lstrip("/") / "VERSION").read_text().strip()

    def run(
        self,
        target: CpuTarget,
        args: list[str],
        *,
        count: str | None = None,
        timeout: float = 3600,
    ) -> tuple[str, str]:
        """(stdout of probe.py, the plugin's log) for `args` on `target`; with `count`, the
        plugin counts and logs into the work folder's file of that name."""
        cpuinfo = self.work / f"cpuinfo-{target.key}"
        cpuinfo.write_text(target.cpuinfo(os.cpu_count() or 1))
        log = self.work / (count or "plugin.log")
        log.unlink(missing_ok=True)
        r = str(self.root)
        ld = f"{BUNDLE}/lib/ld-linux-x86-64.so.2"
        qemu = [
            ld,
            "--library-path",
            f"{BUNDLE}/lib",
            f"{BUNDLE}/qemu-aarch64",
            "-cpu",
            target.qemu_cpu,
        ]
        if count:
            qemu += ["-plugin", f"{INSIDE_WORK}/insn_count.so", "-d", "plugin",
                     "-D", f"{INSIDE_WORK}/{log.name}"]  # fmt: skip
        inner = [*qemu, VENV_PYTHON, f"{INSIDE_WORK}/probe.py", *args]
        script = (
            'set -e; R="$1"; shift; mkdir -p "$R/proc" "$R$INSIDE"; '
            'mount -t proc proc "$R/proc"; mount --bind "$CPUINFO" "$R/proc/cpuinfo"; '
            'mkdir -p "$R/sys"; mount -t sysfs sysfs "$R/sys"; '
            'mount --bind "$WORK" "$R$INSIDE"; '
            'exec chroot "$R" /usr/bin/env -i HOME=/root LANG=C.UTF-8 '
            'PATH=/usr/local/bin:/usr/bin:/bin OMP_NUM_THREADS=1 "$@"'
        )
        cmd = [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
            r,
            *inner,
        ]
        env = {**os.environ, "CPUINFO": str(cpuinfo), "WORK": str(self.work), "INSIDE": INSIDE_WORK}
        t0 = time.monotonic()
        got = _run(cmd, timeout, env=env)
        _LOG.info("%s %s: %.0f s", target.key, " ".join(args[:2]), time.monotonic() - t0)
        if got.returncode:
            raise RuntimeError(
                f"{target.key} {args}: exit {got.returncode}: {got.stderr.strip()[-2000:]}"
            )
        return got.stdout, log.read_text() if log.is_file() else ""


# ---- analysis --------------------------------------------------------------------------------


def op_counts(path: Path) -> dict[str, int]:
    """Operators of an ONNX file by (domain.)op_type, most frequent first."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    c = Counter(
        (f"{n.domain}." if n.domain and n.domain != "ai.onnx" else "") + n.op_type
        for n in model.graph.node
    )
    return dict(c.most_common())


def marks(log: str) -> list[dict[str, int]]:
    """The plugin's `mark` lines, in order, as {class: count} (plus "total")."""
    out = []
    for line in log.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[0] != "insn_count" or parts[1] != "mark":
            continue
        out.append({k: int(v) for k, v in (p.split("=", 1) for p in parts[3:])})
    return out


def phase_counts(log: str) -> list[dict[str, int]]:
    """Counts between consecutive markers."""
    m = marks(log)
    return [{k: b[k] - a[k] for k in b} for a, b in zip(m, m[1:], strict=False)]


def per_audio_second(
    phases: list[dict[str, int]], frames: int, hop: int, sample_rate: int
) -> dict[str, float]:
    """Counts for one second of audio: (run of 2F frames − run of F frames) / F frames."""
    one, two = phases[0], phases[1]
    scale = sample_rate / hop / frames
    return {k: (two[k] - one[k]) * scale for k in one}


def profile_shares(path: Path) -> dict[str, float]:
    """ONNX Runtime profile: share of node time by operator."""
    events = json.loads(path.read_text())
    t: Counter[str] = Counter()
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            t[e.get("args", {}).get("op_name", "?")] += e.get("dur", 0)
    total = sum(t.values()) or 1
    return {k: v / total for k, v in t.most_common()}


def estimate(per_s: dict[str, float], core_key: str) -> dict[str, Any]:
    core = cores.CORES[core_key]
    cyc, pipe = cores.cycles(per_s, core)
    return {"cycles": cyc, "bound_by": pipe, "pipes": cores.pipe_cycles(per_s, core)}


# ---- the run ---------------------------------------------------------------------------------


def collect(args: argparse.Namespace) -> dict[str, Any]:
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    gdir = work / ("graphs-small" if args.quick else "graphs-full")
    if not (gdir / "graphs.json").is_file():
        graphs.build(gdir, small=args.quick)
    info = json.loads((gdir / "graphs.json").read_text())
    plugin = build_plugin(work)
    emu = Emulator(args.root, work, plugin)
    precisions = [p for p in args.precisions if p in info["graphs"]]
    inside_graph = {p: f"{INSIDE_WORK}/{gdir.name}/{info['graphs'][p]}" for p in precisions}
    frames = args.frames or (8 if args.quick else 16)
    result: dict[str, Any] = {
        "host": {
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "qemu": emu.qemu_version(),
        "commit": _run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], 30).stdout.strip(),
        "voice": info["voice"],
        "hop": info["hop"],
        "sample_rate": info["sample_rate"],
        "macs_per_frame": info["macs_per_frame"],
        "frames": frames,
        "targets": {},
    }
    for key in args.cpus:
        target = TARGETS[key]
        t: dict[str, Any] = {"qemu_cpu": target.qemu_cpu, "cpu_part": hex(target.part),
                             "boards": target.boards, "note": target.note}  # fmt: skip
        out, _ = emu.run(target, ["info"], timeout=600)
        t["info"] = json.loads(out.strip().splitlines()[-1])
        result.setdefault("onnxruntime", t["info"]["onnxruntime"])
        t["graphs"] = {}
        for p in precisions:
            g: dict[str, Any] = {}
            for level in ("all",) if args.quick else ("all", "extended"):
                name = f"opt-{key}-{p}-{level}.onnx"
                try:
                    if not (args.resume and (work / name).is_file()):
                        emu.run(
                            target,
                            [
                                "optimize",
                                inside_graph[p],
                                f"{INSIDE_WORK}/{name}",
                                "--level",
                                level,
                            ],
                            timeout=1800,
                        )
                    g[f"ops_{level}"] = op_counts(work / name)
                except RuntimeError as exc:  # e.g. no fp16 kernel for an operator
                    g[f"ops_{level}"] = {"error": str(exc)[-400:]}
            if "error" not in g["ops_all"]:
                log_name = f"plugin-{key}-{p}-{frames}.log"
                log = (work / log_name).read_text() if (work / log_name).is_file() else ""
                if not (args.resume and "insn_count exit" in log and len(marks(log)) >= 3):
                    _, log = emu.run(target, ["count", inside_graph[p], f"{frames},{2 * frames}"],
                                     count=log_name, timeout=args.timeout)  # fmt: skip
                phases = phase_counts(log)
                if len(phases) < 2:
                    raise RuntimeError(f"{key} {p}: the plugin logged {len(phases)} phases, not 2")
                per_s = per_audio_second(phases, frames, info["hop"], info["sample_rate"])
                g["phases"] = phases
                g["per_audio_second"] = per_s
            if args.profile and "error" not in g["ops_all"]:
                out, _ = emu.run(
                    target,
                    ["profile", inside_graph[p], str(frames), INSIDE_WORK],
                    timeout=args.timeout,
                )
                inside_path = json.loads(out.strip().splitlines()[-1])["profile"]
                g["profile"] = profile_shares(work / Path(inside_path).relative_to(INSIDE_WORK))
            t["graphs"][p] = g
            result["targets"][key] = t
            if args.json:  # what is done so far, in case a later run is stopped
                args.json.write_text(json.dumps(result, indent=1))
    return result


# ---- the report ------------------------------------------------------------------------------

KERNEL_OPS = ("QLinearConv", "com.microsoft.QLinearConv", "ConvInteger", "MatMulInteger",
              "QLinearMatMul", "com.microsoft.QLinearConvTranspose", "ConvTranspose",
              "DequantizeLinear", "QuantizeLinear", "Conv", "com.microsoft.FusedConv",
              "com.microsoft.NhwcFusedConv", "com.microsoft.NhwcConv", "Transpose",
              "Cast")  # fmt: skip

GROUPS = {
    "int8 dot (SDOT/UDOT)": ("dot.d", "dot.q"),
    "int8 matrix (SMMLA)": ("mmla",),
    "int SIMD multiply (UMULL/SMLAL/MUL)": ("imul.d", "imul.q"),
    "int pairwise accumulate (UADALP)": ("padal.d", "padal.q"),
    "fp32 SIMD FMLA/FMUL": ("f32mla.d", "f32mla.q"),
    "fp16 SIMD FMLA/FMUL": ("f16mla.d", "f16mla.q"),
    "other SIMD/FP": ("f16other", "fvecother", "simdother.d", "simdother.q", "fpscalar"),
    "loads": ("load",),
    "stores": ("store",),
    "scalar, branches": ("scalar", "branch"),
}


def _g(x: float) -> str:
    return f"{x / 1e9:.2f}"


def ratios(t: dict[str, Any], model: str) -> dict[str, dict[str, float]]:
    """Per precision, against fp32 on the same target: executed instructions, and the
    throughput-bound cycles on the core `model` (a key of `cores.CORES`)."""
    g = {p: x for p, x in t["graphs"].items() if "per_audio_second" in x}
    if "fp32" not in g:
        return {}
    base = g["fp32"]
    out = {}
    for p, x in g.items():
        r = {"instructions": x["per_audio_second"]["total"] / base["per_audio_second"]["total"]}
        cyc = estimate(x["per_audio_second"], model)["cycles"]
        r["cycles"] = cyc / estimate(base["per_audio_second"], model)["cycles"]
        out[p] = r
    return out


def summary(res: dict[str, Any]) -> list[str]:
    """One row per CPU target: int8 and fp16 against fp32 (instructions; estimated time)."""
    lines = [
        "## Summary: against fp32 on the same core (decoder, per second of audio)",
        "",
        "| target | core model | int8 kernels | instructions int8 / fp32 "
        "| est. time int8 / fp32 | instructions fp16 / fp32 | est. time fp16 / fp32 |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for key, t, model in (
        (k, t, m) for k, t in res["targets"].items() for m in cores.MODELS.get(k, ())
    ):
        r = ratios(t, model)
        i8 = t["graphs"].get("int8", {}).get("per_audio_second", {})
        kind = (
            "SDOT/UDOT"
            if i8.get("dot.q", 0) + i8.get("dot.d", 0) > 0
            else "UMULL/UADALP (no dot product)"
            if i8.get("imul.q", 0) + i8.get("imul.d", 0) > 0
            else "?"
        )

        cells = [
            f"{r[p][w]:.2f}×" if p in r and w in r[p] else "–"
            for p, w in (("int8", "instructions"), ("int8", "cycles"), ("fp16", "instructions"),
                         ("fp16", "cycles"))
        ]  # fmt: skip
        lines.append(
            f"| {key} ({t['boards']}) | {cores.CORES[model].name} | {kind} | "
            + " | ".join(cells)
            + " |"
        )
    return lines


def markdown(res: dict[str, Any]) -> str:
    hop, sr = res["hop"], res["sample_rate"]
    macs = res["macs_per_frame"]
    gmac = (macs["int8_part"] + macs["fp32_tail"]) * sr / hop / 1e9
    tail = macs["fp32_tail"] / (macs["int8_part"] + macs["fp32_tail"])
    lines = [
        "# ARM evidence without a board (qemu user-mode emulation)",
        "",
        "Generated by `sudo python -m benchmarks.arm.evidence` "
        "([method](../../docs/arm-evidence.md)).",
        f"Voice: {res['voice']} (no trained voice exists here): the figures depend on the",
        "graph's shapes, not its values. The board estimate built on them: "
        "`python -m benchmarks.arm.boards` (the README's board table).",
        "",
        f"- machine: {res['host']['machine']} host, {res['host']['cpus']} CPUs, "
        f"Python {res['host']['python']}; {res['qemu']}",
        f"- ONNX Runtime {res.get('onnxruntime', '?')} (PyPI's aarch64 wheel, CPU provider) in an "
        f"arm64 Debian bookworm root; commit {res['commit']}",
        f"- decoder: {gmac:.1f} GMAC per second of audio ({tail:.0%} "
        "of them in the last upsampling stage, which the int8 recipe keeps in fp32); "
        f"instructions counted over runs of {res['frames']} and {2 * res['frames']} latent frames "
        f"(hop {hop}, {sr} Hz), the difference scaled to one second of audio",
        "",
    ]
    lines += summary(res) + [""]
    for key, t in res["targets"].items():
        lines += [
            f"## {key} (`-cpu {t['qemu_cpu']}`, cpuinfo part {t['cpu_part']}): {t['boards']}",
            "",
        ]
        if t["note"]:
            lines += [t["note"] + ".", ""]
        lines += [f"CPU features qemu reports (AT_HWCAP): `{' '.join(t['info']['hwcaps'])}`.", ""]
        lines += [
            "Operators ONNX Runtime runs (the optimized graph at ORT_ENABLE_ALL; at "
            "ORT_ENABLE_EXTENDED in brackets where different):",
            "",
        ]
        lines += [
            "| precision | convolution kernels and (de)quantization | all operators |",
            "| --- | --- | ---: |",
        ]
        for p, g in t["graphs"].items():
            ops = g["ops_all"]
            if "error" in ops:
                lines.append(f"| {p} | does not load: {ops['error'][-160:].replace('|', '/')} | |")
                continue
            ext = g.get("ops_extended", ops)
            shown = []
            for op in KERNEL_OPS:
                a, e = ops.get(op, 0), ext.get(op, 0) if "error" not in ext else 0
                if a or e:
                    shown.append(
                        f"{op} [{e}]" if not a else f"{op} {a}" + (f" [{e}]" if e != a else "")
                    )
            for op, n in ops.items():
                if op.startswith("com.microsoft.") and op not in KERNEL_OPS:
                    shown.append(f"{op} {n}")
            lines.append(f"| {p} | {', '.join(shown)} | {sum(ops.values())} |")
        lines += ["", "Executed instructions per second of audio (G = 10⁹), by class:", ""]
        ps = [p for p, g in t["graphs"].items() if "per_audio_second" in g]
        lines += ["| class | " + " | ".join(ps) + " |", "| --- |" + " ---: |" * len(ps)]
        for name, classes in GROUPS.items():
            row = [sum(t["graphs"][p]["per_audio_second"].get(c, 0.0) for c in classes) for p in ps]
            if any(row):
                lines.append(f"| {name} | " + " | ".join(_g(x) for x in row) + " |")
        lines.append(
            "| **all** | "
            + " | ".join(_g(t["graphs"][p]["per_audio_second"]["total"]) for p in ps)
            + " |"
        )
        for model in cores.MODELS.get(key, ()) if "fp32" in ps else ():
            est = {p: estimate(t["graphs"][p]["per_audio_second"], model) for p in ps}
            base = est["fp32"]["cycles"]
            core = cores.CORES[model]
            lines += [
                "",
                f"Throughput-bound cycle estimate on a {core.name} ({core.source}), per "
                "second of audio, one core:",
                "",
            ]
            lines += [
                "| precision | Gcycles | bound by | time vs fp32 |",
                "| --- | ---: | --- | ---: |",
            ]
            for p in ps:
                e = est[p]
                lines.append(
                    f"| {p} | {_g(e['cycles'])} | {e['bound_by']} | {e['cycles'] / base:.2f}× |"
                )
        prof = {p: t["graphs"][p].get("profile") for p in ps if t["graphs"][p].get("profile")}
        if prof:
            lines += [
                "",
                "ONNX Runtime's profile under TCG (share of node time; emulated time: a weak "
                "hint only):",
                "",
            ]
            for p, shares in prof.items():
                top = ", ".join(f"{op} {s:.0%}" for op, s in list(shares.items())[:6])
                lines.append(f"- {p}: {top}")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small test voice, one CPU target, fp32 and int8, ORT_ENABLE_ALL only",
    )
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="the arm64 root (root.sh)")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="graphs, plugin, logs")
    parser.add_argument("--cpus", default=None, help=f"comma-separated, of {', '.join(TARGETS)}")
    parser.add_argument("--frames", type=int, default=None, help="F (runs of F and 2F frames)")
    parser.add_argument("--profile", action="store_true", help="also ONNX Runtime's profiler")
    parser.add_argument(
        "--precisions", default=",".join(PRECISIONS), help="comma-separated, of fp32, int8, fp16"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="reuse optimized graphs and complete instruction logs left in --work",
    )
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per emulated run")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--markdown", type=Path, default=None, help="write the report here")
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        default=None,
        help="no run: combine these --json results (one run per CPU target) and report them",
    )
    args = parser.parse_args(argv)
    if args.merge:
        res = merge([json.loads(p.read_text()) for p in args.merge])
        return _write(res, args)
    if args.quick and args.precisions == ",".join(PRECISIONS):
        args.precisions = "fp32,int8"
    args.precisions = args.precisions.split(",")
    args.cpus = (args.cpus or ("cortex-a76" if args.quick else ",".join(TARGETS))).split(",")
    unknown = [c for c in args.cpus if c not in TARGETS]
    if unknown:
        parser.error(f"unknown CPU target(s) {unknown}; known: {', '.join(TARGETS)}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    return _write(collect(args), args)


def merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Results of runs on one voice and commit (e.g. one CPU target each, in parallel)."""
    res = dict(parts[0], targets={})
    for part in parts:
        for field in ("voice", "frames", "onnxruntime", "qemu"):
            if part.get(field) != res.get(field):
                raise ValueError(f"cannot merge runs with different {field}: {part.get(field)!r}")
        res["targets"].update(part["targets"])
    res["commit"] = ", ".join(sorted({p["commit"] for p in parts}))
    return res


def _write(res: dict[str, Any], args: argparse.Namespace) -> int:
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    text = markdown(res)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
