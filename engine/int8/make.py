"""`make_int8`: calibrate, quantize and gate one voice's int8 graphs, resumably.

About 80 % of a JP-Extra voice's CPU time is the HiFi-GAN decoder (44.1 kHz, ~54 GFLOP per
second of audio). Its convolutions run about twice as fast in int8 on ONNX Runtime's CPU
kernels. For one ONNX voice, in four steps, each announced by a progress line:

1. **calibration latents** (`engine.int8.calibrate`): the fp32 front graph over the
   calibration sentences (`data/calibration_ja.txt`), every style, a fixed seed;
2. **an int8 decoder** (`engine.int8.quantize`): static QDQ quantization calibrated on crops
   of those latents (the last upsampling stage stays fp32, `QuantSettings.fp32_tail_stages`);
3. **an int8 front graph** (`QuantSettings.front_ffn`): the flow's feed-forward convolutions
   only, so durations (and the audio's length) stay exactly those of fp32;
4. **the fidelity gate** (`engine.int8.gate`): held-out sentences (`data/heldout_ja.txt`,
   never calibrated on), every style, fp32 against int8 on the same inputs and noise.

Every finished piece (each calibration latent, each quantized graph, each held-out
sentence's figures) is kept in a work folder named by the stamp (`<out_dir>/.work/<key>/`),
so a run stopped part-way (a restart, a short-lived script, `close`) resumes where it
stopped; the stamp is written last, and the work folder removed, once everything is in
place. One process at a time makes a folder (a lock file); a second one waits and reads
what the first made. `control` (`engine.int8.control`) pauses the work between steps while
requests run and cancels it, inside ONNX Runtime too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from ..synth.windowed import StagedSynth
from .calibrate import FeatureSource, LatentBackend, LatentStore, VoiceSpec, crop, voice_latents
from .control import Cancelled, Int8Control
from .gate import FidelityReport, GateThresholds, SentenceFidelity, compare, judge
from .quantize import QuantizeError, flow_ffn_nodes, quantize_decoder, quantize_front
from .recipe import (
    CALIBRATION_FILE,
    DECODER_FILE,
    FRONT_FILE,
    HELDOUT_FILE,
    REPORT_FILE,
    STAMP_FILE,
    Int8Stamp,
    QuantSettings,
    read_sentences,
)
from .store import Int8Graphs, read_int8_dir, write_stamp

__all__ = ["make_int8"]

_LOGGER = logging.getLogger(__name__)

WORK_SUBDIR = ".work"
LOCK_FILE = ".lock"
HELD_WINDOW = 32
"""Latent frames decoded between two checkpoints of the fp32 reference (exact: staged)."""


def _work_key(stamp: Int8Stamp, calibration: Sequence[str], heldout: Sequence[str]) -> str:
    h = hashlib.sha256(json.dumps(asdict(stamp), sort_keys=True).encode("utf-8"))
    for text in (*calibration, "\0", *heldout):
        h.update(text.encode("utf-8") + b"\n")
    return h.hexdigest()[:16]


@contextlib.contextmanager
def _exclusive(directory: Path, control: Int8Control, say: Callable[[str], None]) -> Iterator[None]:
    """Hold `directory`'s lock file (another process making the same graphs: wait)."""
    import fcntl

    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK_FILE, "a+b") as handle:
        told = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if not told:
                    say(f"another process is making the int8 graphs in {directory}: waiting")
                    told = True
                if control.event.wait(0.2):
                    raise Cancelled() from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def make_int8(
    synth: LatentBackend,
    fp32_decoder: Path,
    bert: FeatureSource,
    voice: VoiceSpec,
    out_dir: Path,
    stamp: Int8Stamp,
    *,
    settings: QuantSettings | None = None,
    thresholds: GateThresholds | None = None,
    calibration: Sequence[str] | None = None,
    heldout: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
    threads: int | None = None,
    control: Int8Control | None = None,
    source: Path | None = None,
) -> Int8Graphs:
    """Make (or finish making) one voice's int8 graphs in `out_dir` (see the module doc).

    `synth` is the voice's fp32 `SplitOnnxSynthesizer` (front graph for the latents, fp32
    decoder for the reference audio), used by this call alone; `fp32_decoder` its decoder
    graph file; `source` the voice's synthesizer (when given, finished graphs another
    process made meanwhile are taken as they are). Raises `Cancelled` when `control` is
    cancelled (what was finished stays for the next run)."""
    settings = settings or QuantSettings()
    calibration = list(calibration if calibration is not None else read_sentences(CALIBRATION_FILE))
    heldout = list(heldout if heldout is not None else read_sentences(HELDOUT_FILE))
    control = control or Int8Control()
    say = progress or (lambda msg: _LOGGER.info("%s", msg))
    out_dir = Path(out_dir)
    with _exclusive(out_dir, control, say):
        if source is not None:
            done = read_int8_dir(out_dir, Path(source), settings)
            if done is not None:
                say(f"{voice.name}: int8 graphs made by another process, in {out_dir}")
                return done
        return _Maker(
            synth,
            fp32_decoder,
            bert,
            voice,
            out_dir,
            stamp,
            settings,
            thresholds,
            calibration,
            heldout,
            say,
            threads,
            control,
        ).run()


class _Maker:
    """One run of `make_int8` (its steps share the work folder and the control)."""

    def __init__(
        self,
        synth: LatentBackend,
        fp32_decoder: Path,
        bert: FeatureSource,
        voice: VoiceSpec,
        out_dir: Path,
        stamp: Int8Stamp,
        settings: QuantSettings,
        thresholds: GateThresholds | None,
        calibration: list[str],
        heldout: list[str],
        say: Callable[[str], None],
        threads: int | None,
        control: Int8Control,
    ) -> None:
        self.synth = synth
        self.fp32_decoder = Path(fp32_decoder)
        self.bert = bert
        self.voice = voice
        self.out = out_dir
        self.stamp = stamp
        self.settings = settings
        self.thresholds = thresholds
        self.calibration = calibration
        self.heldout = heldout
        self.say = say
        self.threads = threads
        self.control = control
        key = _work_key(stamp, calibration, heldout)
        works = out_dir / WORK_SUBDIR
        for old in works.glob("*") if works.is_dir() else []:
            if old.name != key:  # another recipe's leftovers
                shutil.rmtree(old, ignore_errors=True)
        self.work = works / key
        self.work.mkdir(parents=True, exist_ok=True)
        self.timings: dict[str, float] = {}
        self._last = 0.0

    # -- helpers -------------------------------------------------------------------
    def tick(self, what: str, resumed: int = 0) -> Callable[[int, int], None]:
        def show(done: int, total: int) -> None:
            now = time.perf_counter()
            if done == total or now - self._last > 5.0:
                self._last = now
                extra = f" ({resumed} from an earlier run)" if resumed else ""
                self.say(f"{self.voice.name}: {what} {done}/{total}{extra}")

        return show

    def _marker(self, name: str) -> Path:
        return self.work / f"{name}.done"

    def _session(self, path: Path) -> Any:
        import onnxruntime as ort

        from ..synth.onnx_backend import session_options

        return ort.InferenceSession(
            str(path),
            sess_options=session_options(self.threads),
            providers=["CPUExecutionProvider"],
        )

    # -- the steps -----------------------------------------------------------------
    def run(self) -> Int8Graphs:
        c = self.control
        (self.out / STAMP_FILE).unlink(missing_ok=True)  # incomplete until written again
        self.synth.run_options = c.run_options()
        try:
            prior = self.synth.prior_noise_input
            front_nodes = (
                flow_ffn_nodes(self.synth.fp32_front_path, prior)
                if self.settings.front_ffn and prior
                else []
            )
            self.latents(bool(front_nodes))
            self.quantize(front_nodes)
            report = self.gate(bool(front_nodes), len(front_nodes))
            attempts = [report.attempt(self.settings.describe())]
            fallback = self.settings.fallback()
            if not report.passed and fallback is not None:
                self.say(f"{report.summary()}; making the decoder again: {fallback.describe()}")
                self.quantize_decoder(fallback, "fallback")
                report = self.gate(bool(front_nodes), len(front_nodes), fallback, "fallback")
                attempts.append(report.attempt(fallback.describe()))
            report.attempts = attempts
        except Exception as exc:
            c.raise_if_cancelled(exc)
            raise
        report.save(self.out / REPORT_FILE)
        write_stamp(self.out, self.stamp)
        shutil.rmtree(self.work.parent, ignore_errors=True)
        self.say(report.summary())
        return Int8Graphs(self.out, report)

    def latents(self, keep_front: bool) -> None:
        """Step 1: every calibration latent into the work folder (those there are kept)."""
        t0 = time.perf_counter()
        store = LatentStore(self.work / "calibration")
        n_styles = max(1, len(self.voice.styles))
        resumed = store.count()
        total = len(self.calibration) * len(self.voice.styles)
        if resumed < total:
            self.say(
                f"{self.voice.name}: 1/4 calibration latents ({len(self.calibration)} sentences "
                f"× {len(self.voice.styles)} styles"
                + (f", {resumed} kept from an earlier run)" if resumed else ")")
            )
        for lat in voice_latents(
            self.synth,
            self.bert,
            self.voice,
            self.calibration,
            self.settings.seed,
            self.tick("calibration latents", resumed),
            keep_feeds=(lambda s, i: i % n_styles == s) if keep_front else None,
            want=lambda s, i: not store.has(s, i),
            between=self.control.checkpoint,
        ):
            feed = {"z": crop(lat.z, self.settings.crop_frames, f"{lat.style}|{lat.sentence}")}
            if lat.g is not None:
                feed["g"] = lat.g
            store.save(lat.style_index, lat.sentence_index, feed, lat.feeds)
        self.timings["latents_s"] = time.perf_counter() - t0

    def quantize(self, front_nodes: list[str]) -> None:
        """Steps 2 and 3: the int8 decoder and front graph (each kept once made)."""
        t1 = time.perf_counter()
        store = LatentStore(self.work / "calibration")
        n_styles = max(1, len(self.voice.styles))
        keys = [(s, i) for s in range(len(self.voice.styles)) for i in range(len(self.calibration))]
        self.quantize_decoder(self.settings, "")
        if not front_nodes:
            (self.out / FRONT_FILE).unlink(missing_ok=True)
        elif not self._marker("front").is_file():
            front_feeds = [store.load(s, i)[1] for s, i in keys if i % n_styles == s]
            self.say(
                f"{self.voice.name}: 3/4 quantizing the flow's {len(front_nodes)} feed-forward "
                f"convolutions ({len(front_feeds)} sentences)"
            )
            quantize_front(
                self.synth.fp32_front_path,
                self.out / FRONT_FILE,
                front_feeds,
                self.settings,
                front_nodes,
                self.control.checkpoint,
            )
            self._marker("front").touch()
        self.timings["quantize_s"] = time.perf_counter() - t1

    def quantize_decoder(self, settings: QuantSettings, tag: str) -> None:
        """Step 2: the int8 decoder made with `settings` (kept once made, under the marker
        `decoder` + `tag`: the fallback recipe's replaces the first one's file)."""
        marker = self._marker("decoder" + (f"-{tag}" if tag else ""))
        if marker.is_file():
            return
        store = LatentStore(self.work / "calibration")
        keys = [(s, i) for s in range(len(self.voice.styles)) for i in range(len(self.calibration))]
        feeds = [store.load(s, i)[0] for s, i in keys]
        self.say(
            f"{self.voice.name}: 2/4 quantizing the decoder ({settings.method}, "
            f"{len(feeds)} crops{f', {tag}' if tag else ''})"
        )
        quantize_decoder(
            self.fp32_decoder, self.out / DECODER_FILE, feeds, settings, self.control.checkpoint
        )
        del feeds
        marker.touch()

    def gate(
        self,
        with_front: bool,
        n_front: int,
        settings: QuantSettings | None = None,
        tag: str = "",
    ) -> FidelityReport:
        """Step 4: each held-out sentence's figures (kept one by one), judged (`settings`:
        the recipe the decoder was made with, `tag` its work subfolder's suffix)."""
        import onnxruntime as ort

        settings = settings or self.settings
        t2 = time.perf_counter()
        rows_dir = self.work / ("heldout" + (f"-{tag}" if tag else ""))
        rows_dir.mkdir(parents=True, exist_ok=True)

        def row_path(s: int, i: int) -> Path:
            return rows_dir / f"row-{s:03d}-{i:04d}.json"

        resumed = sum(1 for _ in rows_dir.glob("row-*.json"))
        self.say(
            f"{self.voice.name}: 4/4 fidelity gate ({len(self.heldout)} held-out sentences × "
            f"{len(self.voice.styles)} styles"
            + (f", {resumed} kept from an earlier run)" if resumed else ")")
        )
        run_options = self.control.run_options()
        dec = self._session(self.out / DECODER_FILE)
        has_g = "g" in {i.name for i in dec.get_inputs()}
        front = self._session(self.out / FRONT_FILE) if with_front else None
        front_outputs = [o.name for o in front.get_outputs()] if front is not None else []
        sample_rate = self.synth.sample_rate

        def int8(lat: Any) -> np.ndarray:
            z, g = lat.z, lat.g
            if front is not None and lat.feeds is not None:
                outs = dict(
                    zip(front_outputs, front.run(None, lat.feeds, run_options), strict=True)
                )
                z, g = outs["z"], outs.get("g")
                if z.shape != lat.z.shape:
                    raise QuantizeError(
                        f"{self.voice.name}: the int8 front graph gave {z.shape[-1]} latent "
                        f"frames for {lat.sentence!r} where fp32 gave {lat.z.shape[-1]} "
                        "(durations changed)"
                    )
            self.control.checkpoint()
            feeds: dict[str, Any] = {"z": z}
            if has_g:
                feeds["g"] = g
            return np.asarray(dec.run(None, feeds, run_options)[0]).reshape(-1)

        def fp32(lat: Any) -> np.ndarray:
            if not isinstance(self.synth, StagedSynth):
                return np.asarray(self.synth.decode(lat, lat.z)).reshape(-1)
            decoding = self.synth.staged(lat, lat.z)
            n = int(lat.z.shape[-1])
            pieces = []
            for end in range(HELD_WINDOW, n + HELD_WINDOW, HELD_WINDOW):
                self.control.checkpoint()  # exact: staged decoding keeps its state
                pieces.append(decoding.audio_until(min(end, n)))
            return np.concatenate(pieces).astype(np.float32).reshape(-1)

        for lat in voice_latents(  # one sentence at a time: front inputs are ~1 MB each
            self.synth,
            self.bert,
            self.voice,
            self.heldout,
            self.settings.seed + 1,
            self.tick("held-out sentences", resumed),
            keep_feeds=(lambda s, i: True) if front is not None else None,
            want=lambda s, i: not row_path(s, i).is_file(),
            between=self.control.checkpoint,
        ):
            ref = np.clip(fp32(lat), -1, 1)
            tst = np.clip(int8(lat), -1, 1)
            snr, logmel, mcd = compare(ref, tst, sample_rate)
            row = SentenceFidelity(
                lat.sentence,
                lat.style,
                len(ref) / sample_rate,
                round(snr, 3),
                round(logmel, 4),
                round(mcd, 4),
            )
            path = row_path(lat.style_index, lat.sentence_index)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
            tmp.write_text(json.dumps(asdict(row)), encoding="utf-8")
            os.replace(tmp, path)
        rows = [
            SentenceFidelity(**json.loads(row_path(s, i).read_text(encoding="utf-8")))
            for s in range(len(self.voice.styles))
            for i in range(len(self.heldout))
        ]
        self.timings["gate_s"] = time.perf_counter() - t2
        report = judge(
            self.voice.name,
            rows,
            self.thresholds,
            {
                **settings.to_dict(),
                "int8_front_convolutions": n_front,
                "calibration_sentences": len(self.calibration),
                "styles": len(self.voice.styles),
                "ort": ort.__version__,
            },
        )
        report.settings["timings_s"] = {k: round(v, 2) for k, v in self.timings.items()}
        return report
