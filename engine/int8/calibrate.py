"""Calibration latents: the voice's fp32 front graph run over sentences, in every style.

`voice_latents` yields each sentence's latent (`z`, `g`, and where asked the front graph's
own inputs); `crop` cuts the deterministic window of a latent that calibrates the decoder.
`LatentStore` keeps each one in the cache as it is made (under the stamp of the graphs it
is for), so a run stopped part-way resumes where it stopped instead of starting over.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

if TYPE_CHECKING:
    import onnxruntime as ort

    from ..synth.common import Latent, NoiseSource, SynthInputs, SynthParams

_LOGGER = logging.getLogger(__name__)


class FeatureSource(Protocol):
    """What `engine.bert` gives: BERT features per sentence."""

    def features(self, bert_texts: list[str], word2phs: list[list[int]]) -> list[np.ndarray]: ...


class LatentBackend(Protocol):
    """A synthesizer cut at the decoder (`SplitOnnxSynthesizer`)."""

    inter_channels: int
    hop_length: int
    sample_rate: int

    fp32_front_path: Path
    fp32_decoder_path: Path
    run_options: ort.RunOptions | None
    """ONNX Runtime `RunOptions` its sessions run under (set by int8 making, whose control
    terminates a run inside ONNX Runtime); None: the defaults."""

    @property
    def prior_noise_input(self) -> str | None: ...

    def latent_and_feeds(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> tuple[Latent, dict[str, np.ndarray]]: ...

    def decode(self, latent: Latent, z: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class VoiceSpec:
    """What calibration needs to know about a voice besides its graphs."""

    name: str
    style_vectors: np.ndarray
    """float32 [num_styles, 256] (row 0 the mean)."""
    styles: dict[str, int]
    """style name → row."""
    n_speakers: int = 1


@dataclass(frozen=True)
class SentenceLatent:
    sentence: str
    style: str
    z: np.ndarray
    g: np.ndarray | None
    feeds: dict[str, np.ndarray] | None = None
    """The front graph's inputs that gave `z` (when asked for)."""
    style_index: int = 0
    sentence_index: int = 0


def voice_latents(
    synth: LatentBackend,
    bert: FeatureSource,
    voice: VoiceSpec,
    sentences: Sequence[str],
    seed: int,
    progress: Callable[[int, int], None] | None = None,
    keep_feeds: Callable[[int, int], bool] | None = None,
    want: Callable[[int, int], bool] | None = None,
    between: Callable[[], None] | None = None,
) -> Iterator[SentenceLatent]:
    """The fp32 latent of every sentence in every style (speaker 0, default options, seed),
    with the front graph's inputs where `keep_feeds(style_index, sentence_index)` says.

    `want(style_index, sentence_index)` false skips a latent (one already in a
    `LatentStore`; it still counts for `progress`); BERT runs only for sentences some
    wanted latent needs. `between` runs before each front-graph run (pause or cancel)."""
    from ..synth.common import NoiseSource, SynthInputs, SynthParams
    from ..text import analyze

    params = SynthParams()  # hayakoe's defaults (noise 0.6, noise_w 0.8, sdp_ratio 0.2)
    total = len(sentences) * len(voice.styles)
    done = 0
    analysed: dict[int, tuple[Any, np.ndarray]] = {}

    def sentence_inputs(i: int) -> tuple[Any, np.ndarray]:
        if i not in analysed:  # one at a time: a long batch's peak memory is not worth it
            a = analyze(sentences[i]).with_blanks()
            if between is not None:
                between()
            analysed[i] = (a, bert.features([a.bert_text], [a.word2ph])[0])
        return analysed[i]

    for s, (style, row) in enumerate(sorted(voice.styles.items(), key=lambda kv: kv[1])):
        vec = voice.style_vectors[row].astype(np.float32)
        for i, sentence in enumerate(sentences):
            if want is None or want(s, i):
                a, f = sentence_inputs(i)
                inputs = SynthInputs(
                    np.asarray(a.phone_ids, np.int64),
                    np.asarray(a.tone_ids, np.int64),
                    np.asarray(a.lang_ids, np.int64),
                    f,
                    vec,
                    0,
                )
                if between is not None:
                    between()
                lat, feeds = synth.latent_and_feeds(inputs, params, NoiseSource(seed, i))
                keep = keep_feeds is not None and keep_feeds(s, i)
                yield SentenceLatent(sentence, style, lat.z, lat.g, feeds if keep else None, s, i)
            done += 1
            if progress is not None:
                progress(done, total)


def crop(z: np.ndarray, frames: int, key: str) -> np.ndarray:
    """A deterministic crop of at most `frames` latent frames (offset from `key`)."""
    n = z.shape[-1]
    if n <= frames:
        return z
    offset = int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16) % (n - frames + 1)
    return np.ascontiguousarray(z[..., offset : offset + frames])


class LatentStore:
    """Calibration inputs kept on disk as they are made: one `.npz` per sentence and style
    in `directory` (a work folder of the graphs' cache folder, named by their stamp), so a
    run stopped part-way (a restart, a short-lived process) resumes from them. Each file is
    written atomically; a damaged one is made again."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, style: int, sentence: int) -> Path:
        return self.directory / f"calib-{style:03d}-{sentence:04d}.npz"

    def has(self, style: int, sentence: int) -> bool:
        return self._path(style, sentence).is_file()

    def load(
        self, style: int, sentence: int
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """(decoder feed: z crop and g, front-graph feeds or {}) of one latent."""
        with np.load(self._path(style, sentence), allow_pickle=False) as data:
            arrays = {k: np.asarray(data[k]) for k in data.files}
        decoder = {k[4:]: v for k, v in arrays.items() if k.startswith("dec.")}
        front = {k[6:]: v for k, v in arrays.items() if k.startswith("front.")}
        return decoder, front

    def save(
        self,
        style: int,
        sentence: int,
        decoder: dict[str, np.ndarray],
        front: dict[str, np.ndarray] | None,
    ) -> None:
        arrays = {f"dec.{k}": v for k, v in decoder.items()}
        arrays.update({f"front.{k}": v for k, v in (front or {}).items()})
        path = self._path(style, sentence)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.partial.npz")
        np.savez(tmp, **cast(dict[str, Any], arrays))  # names, not savez's own options
        os.replace(tmp, path)

    def count(self) -> int:
        return sum(1 for _ in self.directory.glob("calib-*.npz"))
