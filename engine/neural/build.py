"""One path that builds every neural voice, whatever its files look like.

    files = locate_native(name, source, device, cache_dir)    # engine.neural.loader
    files = describe_aivm(name, source, ...)                  # engine.aivm.loader
    built = build_voice(files, bert, BuildSettings(device=..., options=...), pool)

A finder turns a voice's files (hayakoe's layout, a plain Style-Bert-VITS2 folder, an
AivisHub file) into one `VoiceFiles`; `build_voice` makes the synthesizer, decides its
int8 plan (`engine.int8.plan`: the same gate, cache and background path for every kind)
and the `NeuralVoice`. Voices whose files are one model (the speakers of a multi-speaker
AivisHub file: the same `model_key`) share one synthesizer and one plan through a
`ModelPool`, each speaking through a `PinnedSpeaker`, so four speakers of a file hold
one set of sessions; a switch to int8 switches them together: the plan's pending job
goes to the background with the pool's `target(key)`, and each voice switches itself
(`NeuralVoice.use`) at a request boundary.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..bert.features import BertBackend
from ..int8.gate import GateThresholds
from ..int8.measure import Candidate
from ..int8.plan import (
    NONE,
    Int8Job,
    Int8Plan,
    PlanAsked,
    PlanVoice,
    PrecisionChoice,
    gate_thresholds,
    plan_int8,
)
from ..int8.store import cache_dir_for
from ..layout import INT8_SUBDIR, OnnxFolderFiles
from ..options import EngineOptions, Precision
from ..synth.common import SynthBackend
from ..voice_config import VoiceConfig, load_config
from .voice import NeuralVoice, load_style_vectors

if TYPE_CHECKING:
    from ..int8.calibrate import VoiceSpec
    from ..int8.store import Int8Graphs
    from ..sources.cache import CacheDir
    from ..synth.decoder_split import SplitOnnxSynthesizer

__all__ = [
    "BuildSettings",
    "BuiltVoice",
    "ModelPool",
    "VoiceFiles",
    "VoiceMeta",
    "build_voice",
]

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class VoiceMeta:
    """What a voice file says of itself beyond its graphs (None: the engine's default)."""

    description: str | None = None
    default_style: str | None = None
    license: str | None = None
    creators: tuple[str, ...] = ()
    version: str | None = None
    attribution_name: str | None = None
    attribution_url: str | None = None
    speaker_uuid: str | None = None
    """The AivisHub speaker the voice is (None: not from an AivisHub file)."""
    style_ids: Mapping[str, int] = field(default_factory=dict)
    """Style name → the AivisHub file's local style ID of that speaker."""


@dataclass(frozen=True)
class VoiceFiles:
    """One voice, found: its files and what they say (every kind of voice)."""

    name: str
    directory: Path
    """Where it was found (logs, `NeuralVoice.source`)."""
    onnx: OnnxFolderFiles | None = None
    """hayakoe's ONNX form (None: PyTorch weights only, `checkpoint`)."""
    checkpoint: Path | None = None
    """PyTorch weights (`*.safetensors`) with `config` and `style_vectors`."""
    config: Path | None = None
    style_vectors: Path | None = None
    model_key: str = ""
    """Voices with the same key are one model (share sessions and int8 graphs); "": `name`."""
    speaker_id: int | None = None
    """The speaker of a multi-speaker model this voice always speaks as."""
    voice_config: VoiceConfig | None = None
    """Replaces the config file's (a speaker's styles in a multi-speaker file)."""
    style_array: np.ndarray | None = None
    """Replaces the style-vector file's."""
    meta: VoiceMeta = field(default_factory=VoiceMeta)
    onnx_only: bool = False
    """Runs on ONNX Runtime even when a GPU is asked for (no PyTorch form exists)."""

    @property
    def key(self) -> str:
        return self.model_key or self.name


@dataclass
class _Model:
    synth: SynthBackend
    plan: Int8Plan
    voices: list[NeuralVoice] = field(default_factory=list)


class ModelPool:
    """The synthesizers of one `TTS`, by model key: built once, shared by every voice of a
    model, switched together."""

    def __init__(self) -> None:
        self._models: dict[str, _Model] = {}

    def __contains__(self, key: str) -> bool:
        return key in self._models

    def voices(self, key: str) -> list[NeuralVoice]:
        return list(self._models[key].voices) if key in self._models else []

    def _get(self, key: str) -> _Model | None:
        return self._models.get(key)

    def _add(self, key: str, model: _Model) -> None:
        self._models[key] = model

    def remeasure(self, voice: object) -> tuple[str, Int8Job] | None:
        """The model of `voice` and the job that takes its speed measurement again (serving
        what the voice runs now); None when there is nothing to measure (not `auto`, or no
        int8 graphs made)."""
        for key, model in self._models.items():
            if any(v is voice for v in model.voices):
                job = model.plan.remeasure
                job = job.with_graphs() if job is not None else None
                if job is None:
                    return None
                return key, dataclasses.replace(job, serving=model.voices[0].precision_choice)
        return None

    def target(self, key: str) -> ModelTarget:
        """The voices of model `key`, as the background's `Int8Target` (given at submit)."""
        return ModelTarget(self, key)

    def discard(self, voices: Iterable[object]) -> list[str]:
        """Forget `voices` (removed from their `TTS`); a model left with none is dropped
        (its sessions freed once no request holds them). The dropped models' keys."""
        gone = {id(v) for v in voices}
        dropped = []
        for key, model in list(self._models.items()):
            model.voices = [v for v in model.voices if id(v) not in gone]
            if not model.voices:
                del self._models[key]
                dropped.append(key)
        return dropped

    def keep(self, key: str, choice: PrecisionChoice) -> None:
        """Every voice of model `key` keeps its synthesizer; `choice` says why now."""
        model = self._models.get(key)
        if model is None:  # removed meanwhile (`discard`)
            return
        model.plan = dataclasses.replace(model.plan, choice=choice)
        for voice in model.voices:
            voice.precision_choice = choice

    def use(self, key: str, synth: SynthBackend, choice: PrecisionChoice) -> None:
        """Every voice of model `key` speaks through `synth` (which runs `choice`) from now
        on (call between requests of all of them); the old synthesizer's memory is given
        back. A model removed meanwhile (`discard`) is left alone."""
        model = self._models.get(key)
        if model is None:
            synth.release_memory()
            return
        old = model.synth
        model.synth = synth
        for voice in model.voices:
            voice.use(synth, choice)
        old.release_memory()


@dataclass(frozen=True)
class ModelTarget:
    """One model's voices in a `ModelPool` (`engine.int8.plan.Int8Target`)."""

    pool: ModelPool
    key: str

    def use(self, synth: SynthBackend, choice: PrecisionChoice) -> None:
        self.pool.use(self.key, synth, choice)

    def keep(self, choice: PrecisionChoice) -> None:
        self.pool.keep(self.key, choice)


@dataclass(frozen=True)
class BuiltVoice:
    voice: NeuralVoice
    plan: Int8Plan
    key: str
    """Its model key (`ModelPool`)."""
    first: bool
    """Whether this call built the model (False: shared with an earlier voice)."""


def voice_spec(name: str, files: OnnxFolderFiles) -> VoiceSpec:
    """What int8 calibration needs to know of a voice (`engine.int8.calibrate.VoiceSpec`)."""
    from ..int8.calibrate import VoiceSpec

    cfg = load_config(files.config)
    vectors = np.load(files.style_vectors, allow_pickle=False).astype(np.float32)
    return VoiceSpec(name, vectors, dict(cfg.data.style2id), max(1, cfg.data.n_speakers))


def split_synthesizer(
    files: OnnxFolderFiles,
    options: EngineOptions,
    cache_dir: CacheDir = None,
    graphs: Int8Graphs | None = None,
    candidate: Candidate | None = None,
) -> SplitOnnxSynthesizer:
    """The synthesizer cut at the decoder (sub-sentence streaming), on `graphs` (the int8
    decoder and front graph) instead of the fp32 ones when given, run as `candidate` says
    (runtime × precision; default: ONNX Runtime, int8 with `graphs`, else fp32)."""
    from ..synth.decoder_split import SplitOnnxSynthesizer
    from ..synth.windowed import DecoderGeometry

    cfg = load_config(files.config)
    return SplitOnnxSynthesizer(
        files.synthesizer,
        files.duration_predictor,
        inter_channels=cfg.model.inter_channels,
        hop_length=cfg.hop_length,
        sample_rate=cfg.sample_rate,
        threads=options.threads,
        geometry=DecoderGeometry.from_config(dataclasses.asdict(cfg.model)),
        conv2d=options.conv2d,
        release_memory=options.release_memory,
        cache_dir=cache_dir,
        decoder=graphs.decoder if graphs is not None else None,
        front=graphs.front if graphs is not None else None,
        precision=candidate.precision if candidate else "int8" if graphs else "fp32",
        runtime=candidate.runtime if candidate is not None else "onnxruntime",
    )


def int8_job(
    key: str,
    files: OnnxFolderFiles,
    options: EngineOptions,
    bert: BertBackend,
    cache_dir: CacheDir = None,
) -> Int8Job:
    """How to make (and serve) the int8 graphs of the model `key` in `files`."""

    def fp32_synth(threads: int | None) -> SplitOnnxSynthesizer:
        few = dataclasses.replace(options, threads=threads, precision=Precision.FP32)
        return split_synthesizer(files, few, cache_dir)

    def synth_for(candidate: Candidate, graphs: Int8Graphs | None) -> SynthBackend:
        int8 = graphs if candidate.precision == "int8" else None
        if candidate.precision == "int8" and int8 is None:
            raise ValueError(f"voice {key}: {candidate.label} needs int8 graphs")
        return split_synthesizer(files, options, cache_dir, int8, candidate)

    return Int8Job(
        name=key,
        precision=options.precision,
        synthesizer=files.synthesizer,
        out_dir=cache_dir_for(key, files.synthesizer, cache_dir),
        bert=bert,
        spec=voice_spec(key, files),
        fp32_synth=fp32_synth,
        synth_for=synth_for,
        thresholds=_thresholds(options),
        runtime=options.runtime,
        threads=options.intra_op_threads,
    )


def _thresholds(options: EngineOptions) -> GateThresholds | None:
    if options.int8_min_snr_db is None:
        return None
    return gate_thresholds(options.int8_min_snr_db)


def _onnx_model(
    key: str, files: OnnxFolderFiles, bert: BertBackend, settings: BuildSettings
) -> tuple[SynthBackend, Int8Plan]:
    from ..synth.onnx_backend import OnnxSynthesizer

    options, cache_dir = settings.options, settings.cache_dir
    cfg = load_config(files.config)
    try:  # cut at the decoder: sub-sentence streaming (engine.synth.decoder_split)
        plan = plan_int8(
            PlanVoice(
                key,
                files.synthesizer,
                cfg.model.upsample_initial_channel,
                (files.directory / INT8_SUBDIR,),
            ),
            PlanAsked(
                options.precision,
                options.runtime,
                options.threads,
                _thresholds(options),
                cache_dir,
                settings.defer,
            ),
            lambda: int8_job(key, files, options, bert, cache_dir),
            progress=settings.progress,
        )
        _LOGGER.info("Voice %s runs %s: %s", key, plan.choice.short, plan.choice.reason)
        graphs = plan.choice.graphs if plan.precision == "int8" else None
        synth = split_synthesizer(files, options, cache_dir, graphs, plan.choice.candidate)
        return synth, plan
    except (ImportError, OSError, ValueError) as exc:  # SplitError is a ValueError
        _LOGGER.warning("%s: whole-sentence decoding only (%s)", files.synthesizer, exc)
    whole = OnnxSynthesizer(
        files.synthesizer,
        files.duration_predictor,
        inter_channels=cfg.model.inter_channels,
        hop_length=cfg.hop_length,
        sample_rate=cfg.sample_rate,
        threads=options.threads,
    )
    return whole, Int8Plan(NONE, PrecisionChoice("fp32", "whole-sentence graph: fp32 only"))


def _torch_model(files: VoiceFiles, device: str, compile: bool) -> tuple[SynthBackend, Int8Plan]:
    from ..synth.torch_backend import TorchSynthesizer

    if files.config is None or files.checkpoint is None:
        raise ValueError(f"voice {files.name}: no PyTorch weights in {files.directory}")
    synth = TorchSynthesizer(
        load_config(files.config), files.checkpoint, device=device, compile=compile
    )
    return synth, Int8Plan(NONE, PrecisionChoice("fp32", "PyTorch runs fp32"))


BACKENDS = ("onnx", "torch")


@dataclass(frozen=True)
class BuildSettings:
    """How `build_voice` builds (the same for every voice of one `TTS`): one object passed
    unchanged from the caller to the builder."""

    device: str = "cpu"
    """"cpu" or "cuda[:N]" (PyTorch weights run there; ONNX-only voices on the CPU)."""
    options: EngineOptions = field(default_factory=EngineOptions)
    backend: str | None = None
    """"onnx" or "torch" forces one (None: ONNX Runtime on CPU, PyTorch on CUDA where the
    voice has PyTorch weights)."""
    compile: bool = False
    """PyTorch: use torch.compile."""
    cache_dir: CacheDir = None
    defer: bool = False
    """int8 graphs still to be made are left for later (the plan says ``pending``)
    instead of made now."""
    progress: Callable[[str], None] | None = None
    """Sees each progress line of work done now (int8 graphs made at load)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """A ValueError naming the field at fault."""
        if self.backend is not None and self.backend not in BACKENDS:
            raise ValueError(f"backend must be 'onnx' or 'torch', got {self.backend!r}")

    @property
    def cuda(self) -> bool:
        return str(self.device).startswith("cuda")


def _new_model(files: VoiceFiles, bert: BertBackend, settings: BuildSettings) -> _Model:
    """The synthesizer of `files`' model, on the runtime `settings` choose, and its plan."""
    cuda = settings.cuda
    backend = settings.backend
    if backend is None:
        backend = "torch" if cuda and files.checkpoint is not None else "onnx"
    if backend == "torch" and files.checkpoint is not None:
        synth, plan = _torch_model(files, settings.device if cuda else "cpu", settings.compile)
    else:
        if cuda:
            _LOGGER.warning(
                "Voice %s has only ONNX files: it runs on ONNX Runtime (CPU)", files.name
            )
        onnx = files.onnx
        if onnx is None:  # PyTorch weights on the CPU: exported once into the cache
            from ..layout import onnx_folder_files
            from .exported import exported_onnx_dir

            onnx = onnx_folder_files(exported_onnx_dir(files.name, files, settings.cache_dir))
        synth, plan = _onnx_model(files.key, onnx, bert, settings)
    _LOGGER.info("Voice %s: %s from %s", files.name, synth.kind, files.directory)
    return _Model(synth, plan)


def build_voice(
    files: VoiceFiles,
    bert: BertBackend,
    settings: BuildSettings | None = None,
    models: ModelPool | None = None,
) -> BuiltVoice:
    """The voice `files` describe, ready to speak (see the module doc), built as `settings`
    say; `models`: the pool to share synthesizers in (default: a private one)."""
    settings = settings or BuildSettings()
    models = models if models is not None else ModelPool()
    key = files.key
    model = models._get(key)
    first = model is None
    if model is None:
        model = _new_model(files, bert, settings)
        models._add(key, model)
    config = files.voice_config
    if config is None:
        cfg_path = files.onnx.config if files.onnx is not None else files.config
        if cfg_path is None:
            raise ValueError(f"voice {files.name}: no config.json in {files.directory}")
        config = load_config(cfg_path)
    styles = files.style_array
    if styles is None:
        path = files.onnx.style_vectors if files.onnx is not None else files.style_vectors
        if path is None:
            raise ValueError(f"voice {files.name}: no style_vectors.npy in {files.directory}")
        styles = load_style_vectors(path)
    voice = NeuralVoice(
        files.name,
        config,
        styles,
        model.synth,
        bert,
        source=str(files.directory),
        first_window=settings.options.first_window,
        overlap=settings.options.overlap,
        speaker_id=files.speaker_id,
    )
    _apply_meta(voice, files.meta)
    voice.precision_choice = model.plan.choice
    model.voices.append(voice)
    return BuiltVoice(voice, model.plan, key, first)


def _apply_meta(voice: NeuralVoice, meta: VoiceMeta) -> None:
    if meta.description is not None:
        voice.description = meta.description
    if meta.default_style is not None:
        voice.default_style = meta.default_style
    if meta.license is not None:
        voice.license = meta.license
    if meta.creators:
        voice.creators = meta.creators
    if meta.version is not None:
        voice.version = meta.version
    if meta.attribution_name is not None:
        voice.attribution_name = meta.attribution_name
    if meta.attribution_url is not None:
        voice.attribution_url = meta.attribution_url
    voice.speaker_uuid = meta.speaker_uuid
    voice.local_style_ids = dict(meta.style_ids)
