"""PyTorch synthesizer backend: CUDA (optionally `torch.compile`d) and CPU (fp32).

- `device="cuda"`: fp32 weights on the GPU; with `compile=True` the text encoder, each
  flow coupling layer and the decoder are wrapped in `torch.compile(dynamic=True)` when the
  backend is built, and the first synthesis (the warm-up `TTS.prepare(warmup=True)` runs)
  pays the compilation.
- `device="cpu"`: fp32 (int8 on the CPU is ONNX Runtime's: `engine.int8`; PyTorch's
  int8 lost on both speed and fidelity, see docs/synthesizer.md).

Noise comes from `NoiseSource` (NumPy, seeded), the same draws as the ONNX backend.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from ..model import load_synthesizer
from ..voice_config import VoiceConfig
from .common import Latent, NoiseSource, SynthInputs, SynthOutput, SynthParams

_LOGGER = logging.getLogger(__name__)


class TorchSynthesizer:
    """A JP-Extra voice on PyTorch."""

    kind = "torch"
    precision = "fp32"
    runtime = "pytorch"

    def __init__(
        self,
        config: VoiceConfig,
        checkpoint: Path,
        *,
        device: str = "cpu",
        compile: bool = False,
        compile_backend: str = "inductor",
    ) -> None:
        self.config = config
        self.hop_length = config.hop_length
        self.sample_rate = config.sample_rate
        self.device = torch.device(device)
        self.model = load_synthesizer(config, checkpoint, "cpu").to(self.device)
        self.compiled = False
        if compile:
            self._compile()
        # Windowed (sub-sentence) decoding: `latent` + `decode` (engine.synth.windowed).
        from dataclasses import asdict

        from .windowed import DecoderGeometry

        self.context = DecoderGeometry.from_config(asdict(config.model)).context_frames()

    def _compile(self, backend: str = "inductor") -> None:
        """Wrap the heavy stages in torch.compile (dynamic shapes: every sentence has its own
        length); compilation happens on the first call, i.e. the warm-up.

        Each coupling layer of the flow is compiled on its own: they share one class, so one
        trace serves all four (tracing the whole 4×6-layer flow at once took ~20× longer).
        `backend="eager"` only traces (the CPU tests use it to check the stages compile)."""
        m = self.model
        opts = {"dynamic": True, "backend": backend}
        m.enc_p.forward = torch.compile(m.enc_p.forward, **opts)  # type: ignore[method-assign]
        for layer in m.flow.flows[::2]:
            layer.inverse = torch.compile(layer.inverse, **opts)  # type: ignore[method-assign]
        m.dec.forward = torch.compile(m.dec.forward, **opts)  # type: ignore[method-assign]
        self.compiled = True

    def _tensors(self, inputs: SynthInputs) -> tuple[torch.Tensor, ...]:
        dev = self.device
        t = inputs.length

        def as_long(a: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(np.asarray(a, np.int64), device=dev).view(1, t)

        return (
            as_long(inputs.phone_ids),
            torch.tensor([t], dtype=torch.int64, device=dev),
            torch.tensor([inputs.speaker_id], dtype=torch.int64, device=dev),
            as_long(inputs.tone_ids),
            as_long(inputs.lang_ids),
            torch.as_tensor(np.ascontiguousarray(inputs.bert, np.float32), device=dev).unsqueeze(0),
            torch.as_tensor(np.asarray(inputs.style_vec, np.float32), device=dev).view(1, -1),
        )

    def _durations(
        self, enc, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> torch.Tensor:
        sdp_noise = torch.from_numpy(noise.sdp(inputs.length)).to(self.device)
        logw = self.model.log_durations(enc, params.sdp_ratio, params.noise_scale_w, sdp_noise)
        return self.model.frames(logw, enc.x_mask, params.length_scale)

    def _encode_and_align(self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource):
        """Text encoder, durations and the prior noise: what both the whole-sentence and the
        windowed paths need before the flow."""
        if inputs.speaker_id >= self.model.emb_g.num_embeddings or inputs.speaker_id < 0:
            raise ValueError(
                f"speaker_id {inputs.speaker_id} out of range (voice has "
                f"{self.model.emb_g.num_embeddings} speakers)"
            )
        enc = self.model.encode(*self._tensors(inputs))
        w_ceil = self._durations(enc, inputs, params, noise)
        frames = max(int(w_ceil.sum().item()), 1)
        z_noise = torch.from_numpy(noise.prior(self.model.inter_channels, frames)).to(self.device)
        return enc, w_ceil, z_noise

    @torch.inference_mode()
    def release_memory(self) -> None:
        """Nothing to give back between requests (see `SynthBackend.release_memory`)."""

    def synthesize(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> SynthOutput:
        enc, w_ceil, z_noise = self._encode_and_align(inputs, params, noise)
        audio, _, _ = self.model.decode(enc, w_ceil, params.noise_scale, z_noise)
        return SynthOutput(
            audio[0, 0].float().cpu().numpy(),
            w_ceil[0, 0].long().cpu().numpy(),
        )

    @torch.inference_mode()
    def latent(self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource) -> Latent:
        """Everything but the vocoder: the sentence's latent for windowed decoding."""
        enc, w_ceil, z_noise = self._encode_and_align(inputs, params, noise)
        _, z, y_mask = self.model.latent(enc, w_ceil, params.noise_scale, z_noise)
        return Latent((z * y_mask).float().cpu().numpy(), enc.g, w_ceil[0, 0].long().cpu().numpy())

    @torch.inference_mode()
    def decode(self, latent, z: np.ndarray) -> np.ndarray:
        """Audio `float32 [frames·hop]` of the latent slice `z` `[1, C, frames]`."""
        zt = torch.from_numpy(np.ascontiguousarray(z)).to(self.device, dtype=latent.g.dtype)
        return self.model.dec(zt, g=latent.g)[0, 0].float().cpu().numpy()

    @torch.inference_mode()
    def predict_durations(
        self, inputs: SynthInputs, params: SynthParams, noise: NoiseSource
    ) -> np.ndarray:
        enc = self.model.encode(*self._tensors(inputs))
        return self._durations(enc, inputs, params, noise)[0, 0].long().cpu().numpy()
