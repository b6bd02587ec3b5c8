"""The decoder's last upsampling stage in int8: training-free methods, measured (issue 19, 5).

    python benchmarks/int8_tail.py --voice bench     # full-size random-weight benchmark voice
    python benchmarks/int8_tail.py --voice small     # tests/data/model_small (1-channel tail)

Today's recipe (`engine.synth.quantize`) keeps the last stage (ConvTranspose, three residual
blocks, conv_post) in fp32. This script cuts the fp32 decoder into its stages
(`decoder_split`), feeds the last stage the fp32 (and, for the end-to-end figure, today's
int8) output of the stages before it, and tries, on that stage alone:

- ``plain``: ONNX Runtime static QDQ int8 of every convolution (what gave 13 dB);
- ``sens:<conv>``: one convolution at a time (the sensitivity of each, for mixed precision);
- ``cle``: cross-layer equalization of the conv→LeakyReLU→conv pairs, Nagel et al.'s
  weight-range rule (`engine.synth.equalize.cle_scales`);
- ``balance``: activation/weight balancing of the pairs and of the residual stream
  (`balance_scales`, α = 0.5), from calibration statistics;
- ``+bc``: empirical bias correction (`correct_biases`) on top;
- ``mixed``: only the convolutions whose own int8 costs little (greedy, from ``sens``).

Each variant: audible-band SNR (min over held-out sentences), log-mel distance and MCD
(`engine.synth.fidelity`) of (a) the stage alone (fp32 input) and (b) the whole decoder
(today's int8 stages, then the variant) against the all-fp32 decoder, and the stage's time
(and the decoder's) against the fp32 stage in the same run. The gate is the project's
(`GateThresholds`), applied to (b). Weights are random (not trained): the figures say how
int8 rounding behaves on this architecture, not how a trained voice sounds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def _voice(which: str) -> tuple[Any, Any, Any]:
    """(files, bert, spec) of the benchmark voice or model_small."""
    from engine.layout import onnx_folder_files, speaker_prefix
    from engine.neural.loader import voice_spec

    if which == "bench":
        import fullsize

        from engine.bert import load_bert

        root = fullsize.build()
        name = fullsize.VOICE_NAME
        bert = load_bert(root, "cpu")
    else:
        from tests.helpers.voices import FakeBert, shared_small_root

        root, name, bert = shared_small_root(), "small", FakeBert(1024)
    files = onnx_folder_files(root / speaker_prefix(name, "onnx"))
    return files, bert, voice_spec(name, files)


def _session(model: Any, threads: int) -> Any:
    import onnxruntime as ort

    from engine.synth.onnx_backend import session_options

    data = model if isinstance(model, bytes) else model.SerializeToString()
    return ort.InferenceSession(
        data, sess_options=session_options(threads), providers=["CPUExecutionProvider"]
    )


def _run_stages(sessions: list[Any], z: np.ndarray, g: np.ndarray | None) -> np.ndarray:
    feeds = {"z": z}
    if g is not None and "g" in {i.name for i in sessions[0].get_inputs()}:
        feeds["g"] = g
    x = sessions[0].run(None, feeds)[0]
    for s in sessions[1:]:
        x = s.run(None, {"x": x})[0]
    return x


class Tail:
    """The last stage: fp32 model, calibration inputs, held-out inputs and references."""

    def __init__(
        self,
        stage: Any,
        cal: list[np.ndarray],
        held: list[np.ndarray],
        held_q: list[np.ndarray],
        refs: list[np.ndarray],
        sr: int,
        threads: int,
        scratch: Path,
        names: list[str],
    ) -> None:
        self.stage, self.cal, self.held, self.held_q = stage, cal, held, held_q
        self.refs, self.sr, self.threads, self.scratch, self.names = (
            refs,
            sr,
            threads,
            scratch,
            names,
        )
        self.convs = [n.name for n in stage.graph.node if n.op_type in ("Conv", "ConvTranspose")]
        self.fp32_s = self.time(stage)[0]

    def quantize(self, model: Any, include: list[str], tag: str) -> Any:
        import onnx

        from engine.synth.quantize import QuantSettings, _quantize_static

        src = self.scratch / f"{tag}.fp32.onnx"
        out = self.scratch / f"{tag}.int8.onnx"
        onnx.save(model, str(src))
        feeds = [{"x": x} for x in self.cal]
        _quantize_static(src, out, feeds, QuantSettings(fp32_tail_stages=0), include=include)
        return onnx.load(str(out))

    def _once(self, sess: Any) -> float:
        t0 = time.perf_counter()
        for x in self.held:
            sess.run(None, {"x": x})
        return time.perf_counter() - t0

    def time(self, model: Any, reps: int = 3) -> tuple[float, float]:
        """(best time of `model`, best time of the fp32 stage), runs alternating so that a
        change in the machine's load hits both."""
        sess = _session(model, self.threads)
        ref = self._fp32 if hasattr(self, "_fp32") else sess
        self._fp32 = ref
        sess.run(None, {"x": self.held[0][..., :64]})
        best = ref_best = float("inf")
        for _ in range(reps):
            best = min(best, self._once(sess))
            ref_best = min(ref_best, self._once(ref))
        return best, ref_best

    def fidelity(self, model: Any) -> dict[str, Any]:
        from engine.synth.fidelity import SentenceFidelity, compare, judge

        sess = _session(model, self.threads)
        out: dict[str, Any] = {}
        for key, inputs in (("stage", self.held), ("decoder", self.held_q)):
            rows = []
            for name, x, ref in zip(self.names, inputs, self.refs, strict=True):
                y = np.asarray(sess.run(None, {"x": x})[0]).reshape(-1)
                snr, lm, mcd = compare(np.clip(ref, -1, 1), np.clip(y, -1, 1), self.sr)
                rows.append(SentenceFidelity(name, "", len(ref) / self.sr, snr, lm, mcd))
            rep = judge("tail", rows)
            out[key] = {
                "snr_min": round(rep.snr_db_min, 2),
                "logmel": round(rep.logmel_db_mean, 3),
                "mcd": round(rep.mcd_db_mean, 3),
                "passed": rep.passed,
            }
        return out


def tail_op(model: Any, name: str) -> str:
    return next(n.op_type for n in model.graph.node if n.name == name)


def _copy(model: Any) -> Any:
    import onnx

    m = onnx.ModelProto()
    m.CopyFrom(model)
    return m


def _pairs_cle(model: Any) -> Any:
    from engine.synth import equalize as eq

    m = _copy(model)
    g = {t.name: t for t in m.graph.initializer}
    from onnx import numpy_helper

    nodes = {n.name: n for n in m.graph.node}
    for p in eq.find_pairs(m):
        a, b = nodes[p.producer], nodes[p.consumer]
        wa = numpy_helper.to_array(g[a.input[1]])
        wb = numpy_helper.to_array(g[b.input[1]])
        eq.scale_pair(m, p, eq.cle_scales(wa, 0, wb))
        g = {t.name: t for t in m.graph.initializer}
        nodes = {n.name: n for n in m.graph.node}
    return m


def _balance(model: Any, tail: Tail, alpha: float, pairs: bool, stream: bool) -> Any:
    from onnx import numpy_helper

    from engine.synth import equalize as eq

    m = _copy(model)
    feeds = [{"x": x} for x in tail.cal]
    if stream:
        up = next(n.name for n in m.graph.node if n.op_type == "ConvTranspose")
        st = eq.find_stream(m, up)
        if st is None:
            raise RuntimeError("no residual stream found")
        stats = eq.tensor_stats(m, [st.probe], feeds)
        g = {t.name: t for t in m.graph.initializer}
        nodes = {n.name: n for n in m.graph.node}
        ws = [numpy_helper.to_array(g[nodes[c].input[1]]) for c in st.consumers]
        eq.scale_stream(m, st, eq.balance_scales(stats[st.probe][0], ws, alpha))
    if pairs:
        ps = eq.find_pairs(m)
        stats = eq.tensor_stats(m, [p.tensor for p in ps], feeds)
        for p in ps:
            g = {t.name: t for t in m.graph.initializer}
            nodes = {n.name: n for n in m.graph.node}
            wb = numpy_helper.to_array(g[nodes[p.consumer].input[1]])
            # the LeakyReLU passes positive values unchanged: the range after it is the
            # positive part's, or 0.1 of the negative part's
            eq.scale_pair(m, p, eq.balance_scales(stats[p.tensor][0], [wb], alpha))
    return m


def _bias_corrected(fp32: Any, tail: Tail, include: list[str], tag: str, passes: int = 1) -> Any:
    """Quantize, measure each quantized conv's mean output shift (int8 − fp32, as its
    consumers see it), subtract it from the fp32 bias, quantize again (`passes` times)."""
    from engine.synth import equalize as eq

    m = _copy(fp32)
    for k in range(passes):
        q = tail.quantize(m, include, f"{tag}-bc{k}")
        convs = [n for n in m.graph.node if n.name in include]
        outs = [n.output[0] for n in convs]
        # in the QDQ graph the consumers read DequantizeLinear(QuantizeLinear(out))
        qcons: dict[str, list[Any]] = {}
        for n in q.graph.node:
            for i in n.input:
                qcons.setdefault(i, []).append(n)
        seen = []
        for o in outs:
            t = o
            ql = [n for n in qcons.get(o, []) if n.op_type == "QuantizeLinear"]
            if ql:
                dq = [n for n in qcons.get(ql[0].output[0], []) if n.op_type == "DequantizeLinear"]
                if dq:
                    t = dq[0].output[0]
            seen.append(t)
        feeds = [{"x": x} for x in tail.cal]
        ref = eq.tensor_stats(m, outs, feeds)
        got = eq.tensor_stats(q, seen, feeds)
        shifts = {n.name: got[s][1] - ref[o][1] for n, o, s in zip(convs, outs, seen, strict=True)}
        eq.correct_biases(m, shifts)
    return tail.quantize(m, include, f"{tag}-bcq")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voice", choices=("bench", "small"), default="bench")
    parser.add_argument("--calibration", type=int, default=50, help="calibration sentences")
    parser.add_argument("--heldout", type=int, default=8, help="held-out sentences")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-sensitivity", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    import onnx

    from engine import EngineOptions
    from engine.neural.loader import _split_backend
    from engine.synth.decoder_split import split_decoder_stages
    from engine.synth.quantize import (
        CALIBRATION_FILE,
        HELDOUT_FILE,
        QuantSettings,
        crop,
        quantize_decoder,
        read_sentences,
        voice_latents,
    )

    t_start = time.perf_counter()
    files, bert, spec = _voice(args.voice)
    synth = _split_backend(files, EngineOptions(precision="fp32", threads=args.threads))
    settings = QuantSettings()
    calibration = read_sentences(CALIBRATION_FILE)[: args.calibration]
    heldout = read_sentences(HELDOUT_FILE)[: args.heldout]
    cal_feeds = []
    for lat in voice_latents(synth, bert, spec, calibration, settings.seed):
        feed = {"z": crop(lat.z, settings.crop_frames, f"{lat.style}|{lat.sentence}")}
        if lat.g is not None:
            feed["g"] = lat.g
        cal_feeds.append(feed)
    held = list(voice_latents(synth, bert, spec, heldout, settings.seed + 1))
    print(
        f"latents: {len(cal_feeds)} calibration crops, {len(held)} held-out "
        f"({time.perf_counter() - t_start:.0f} s)",
        flush=True,
    )

    with tempfile.TemporaryDirectory(prefix="int8-tail-") as tmp:
        scratch = Path(tmp)
        t0 = time.perf_counter()
        today = scratch / "today.int8.onnx"
        quantize_decoder(synth.fp32_decoder_path, today, cal_feeds, settings)
        print(f"today's int8 decoder made in {time.perf_counter() - t0:.0f} s", flush=True)
        fp32_stages = split_decoder_stages(onnx.load(str(synth.fp32_decoder_path)))
        q_stages = split_decoder_stages(onnx.load(str(today)))
        up32 = [_session(s, args.threads) for s in fp32_stages[:-1]]
        up8 = [_session(s, args.threads) for s in q_stages[:-1]]
        last = _session(fp32_stages[-1], args.threads)
        cal_x = [_run_stages(up32, f["z"], f.get("g")) for f in cal_feeds]
        held_x = [_run_stages(up32, h.z, h.g) for h in held]
        refs = [np.asarray(last.run(None, {"x": x})[0]).reshape(-1) for x in held_x]
        t0 = time.perf_counter()
        held_xq = [_run_stages(up8, h.z, h.g) for h in held]
        up8_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for h in held:
            _run_stages(up8, h.z, h.g)
        up8_s = min(up8_s, time.perf_counter() - t0)
        names = [f"{h.style}|{h.sentence}" for h in held]
        tail = Tail(
            fp32_stages[-1],
            cal_x,
            held_x,
            held_xq,
            refs,
            synth.sample_rate,
            args.threads,
            scratch,
            names,
        )
        audio_s = sum(len(r) for r in refs) / synth.sample_rate
        print(
            f"audio {audio_s:.1f} s; stages before the last, int8: {up8_s:.2f} s; last stage "
            f"fp32: {tail.fp32_s:.2f} s",
            flush=True,
        )
        rows: list[dict[str, Any]] = []

        def measure(label: str, model: Any, note: str = "") -> dict[str, Any]:
            fid = tail.fidelity(model)
            secs, ref = tail.time(model)
            row = {
                "variant": label,
                **fid,
                "stage_s": round(secs, 3),
                "stage_vs_fp32": round(secs / ref, 3),
                "decoder_vs_today": round((up8_s + secs) / (up8_s + ref), 3),
                "note": note,
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
            return row

        measure("fp32 (today)", tail.stage)
        convs = tail.convs
        ups = [c for c in convs if tail_op(tail.stage, c) == "ConvTranspose"]
        post = [c for c in convs if "conv_post" in c] or [convs[-1]]
        no_post = [c for c in convs if c not in post]
        blocks = [c for c in no_post if c not in ups]
        measure("plain: all convolutions", tail.quantize(tail.stage, convs, "plain"))
        measure("plain, conv_post fp32", tail.quantize(tail.stage, no_post, "nopost"))
        sens: dict[str, float] = {}
        if not args.no_sensitivity:
            for c in convs:
                r = measure(f"sens: {c}", tail.quantize(tail.stage, [c], "sens"))
                sens[c] = r["stage"]["snr_min"]
        measure(
            "residual blocks int8 (ConvTranspose, conv_post fp32)",
            tail.quantize(tail.stage, blocks, "blocks"),
        )
        cle = _pairs_cle(tail.stage)
        measure(
            "CLE (pairs, weight ranges), residual blocks int8", tail.quantize(cle, blocks, "cle")
        )
        bal = _balance(tail.stage, tail, 0.5, pairs=True, stream=True)
        measure(
            "balance α=0.5 (pairs + stream), residual blocks int8",
            tail.quantize(bal, blocks, "bal"),
        )
        measure(
            "bias correction, residual blocks int8", _bias_corrected(tail.stage, tail, blocks, "bc")
        )
        measure(
            "balance α=0.5 + bias correction, residual blocks int8",
            _bias_corrected(bal, tail, blocks, "balbc"),
        )
        firsts = [c for c in blocks if "convs1" in c]
        measure(
            "mixed: convs1 only (their output stays inside the block)",
            tail.quantize(tail.stage, firsts, "convs1"),
        )
        if sens:
            order = sorted(blocks, key=lambda c: -sens[c])
            keep = len(order) // 2
            measure(
                f"mixed: {keep} least sensitive of {len(order)} block convolutions",
                tail.quantize(tail.stage, order[:keep], f"mixed{keep}"),
                note=", ".join(order[:keep]),
            )
    result = {
        "voice": args.voice,
        "audio_s": audio_s,
        "held_out": len(held),
        "calibration_crops": len(cal_feeds),
        "upstream_int8_s": up8_s,
        "stage_fp32_s": tail.fp32_s,
        "rows": rows,
        "total_s": round(time.perf_counter() - t_start, 1),
    }
    out = args.out or HERE / "results" / f"int8-tail-{args.voice}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    out.with_suffix(".md").write_text(render(result) + "\n", encoding="utf-8")
    print(render(result))
    print(f"wrote {out}")
    return 0


def render(result: dict[str, Any]) -> str:
    """Markdown table of one run."""
    lines = [
        f"{result['voice']} voice: {result['held_out']} held-out sentences "
        f"({result['audio_s']:.1f} s of audio), {result['calibration_crops']} calibration crops; "
        "random weights (not trained).",
        "",
        "| last stage | SNR min, stage alone | log-mel | MCD | SNR min, whole decoder int8 | "
        "log-mel | MCD | gate | stage time / fp32 | decoder time / today |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
    ]
    for r in result["rows"]:
        st, de = r["stage"], r["decoder"]
        lines.append(
            f"| {r['variant']} | {st['snr_min']:.1f} dB | {st['logmel']:.2f} | {st['mcd']:.2f} | "
            f"{de['snr_min']:.1f} dB | {de['logmel']:.2f} | {de['mcd']:.2f} | "
            f"{'pass' if de['passed'] else 'FAIL'} | {r['stage_vs_fp32']:.2f}× | "
            f"{r['decoder_vs_today']:.2f}× |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
