"""PyTorch synthesizer backend: CUDA (optionally `torch.compile`d) and CPU (fp32 or int8).

- `device="cuda"`: fp32 weights on the GPU; with `compile=True` the text encoder, each
  flow coupling layer and the decoder are wrapped in `torch.compile(dynamic=True)` when the
  backend is built, and the first synthesis (the warm-up `TTS.prepare(warmup=True)` runs)
  pays the compilation.
- `device="cpu"`: fp32, or with `quantize=True` int8 dynamic quantization of the linear
  maps. Point-wise (1×1) convolutions and the transformer feed-forward convolutions are
  rewritten as `nn.Linear` first so that dynamic quantization reaches them; the quantized
  engine is `qnnpack` on ARM and `x86` (else `fbgemm`) elsewhere.

Noise comes from `NoiseSource` (NumPy, seeded), the same draws as the ONNX backend.
"""

from __future__ import annotations

import logging
import platform
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..model import JPExtraSynthesizer, load_synthesizer
from ..neural.config import VoiceConfig
from .common import Latent, NoiseSource, SynthInputs, SynthOutput, SynthParams

_LOGGER = logging.getLogger(__name__)

ARM_MACHINES = ("aarch64", "arm64", "armv7l", "armv8l", "armv6l")


def quantized_engine(machine: str | None = None, supported: list[str] | None = None) -> str:
    """The quantized-kernel engine for this CPU: qnnpack on ARM, x86/fbgemm otherwise."""
    machine = (machine or platform.machine()).lower()
    supported = (
        supported if supported is not None else list(torch.backends.quantized.supported_engines)
    )
    if machine in ARM_MACHINES or machine.startswith("arm"):
        wanted = ["qnnpack"]
    else:
        wanted = ["x86", "fbgemm"]
    for engine in wanted:
        if engine in supported:
            return engine
    raise RuntimeError(
        f"no quantized engine among {wanted} on this PyTorch build (supported: {supported})"
    )


class _PointwiseLinear(nn.Module):
    """A 1×1 Conv1d as a Linear over channels ([b, c, t] in and out)."""

    def __init__(self, conv: nn.Conv1d) -> None:
        super().__init__()
        self.linear = nn.Linear(conv.in_channels, conv.out_channels, bias=conv.bias is not None)
        self.linear.weight.data.copy_(conv.weight.data[:, :, 0])
        if conv.bias is not None:
            self.linear.bias.data.copy_(conv.bias.data)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.transpose(1, 2)).transpose(1, 2)


class _UnfoldLinear(nn.Module):
    """An unpadded stride-1 Conv1d as unfold + Linear (so dynamic quantization applies)."""

    def __init__(self, conv: nn.Conv1d) -> None:
        super().__init__()
        self.kernel_size = conv.kernel_size[0]
        c_in = conv.in_channels
        self.linear = nn.Linear(
            c_in * self.kernel_size, conv.out_channels, bias=conv.bias is not None
        )
        self.linear.weight.data.copy_(conv.weight.data.reshape(conv.out_channels, -1))
        if conv.bias is not None:
            self.linear.bias.data.copy_(conv.bias.data)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, _ = x.shape
        cols = x.unfold(2, self.kernel_size, 1)  # [b, c, t', k]
        cols = cols.permute(0, 2, 1, 3).reshape(b, -1, c * self.kernel_size)
        return self.linear(cols).transpose(1, 2)


def _linearize(module: nn.Module) -> int:
    """Swap quantizable convolutions of the text encoder / flow / duration predictors for
    Linear equivalents (in place). The HiFi-GAN decoder is left in float."""
    count = 0
    for name, child in list(module.named_children()):
        if (
            isinstance(child, nn.Conv1d)
            and child.groups == 1
            and child.stride == (1,)
            and child.dilation == (1,)
        ):
            if child.kernel_size == (1,) and child.padding == (0,):
                setattr(module, name, _PointwiseLinear(child))
                count += 1
                continue
            if child.padding == (0,) and child.kernel_size[0] > 1:
                setattr(module, name, _UnfoldLinear(child))
                count += 1
                continue
        count += _linearize(child)
    return count


def quantize_int8(model: JPExtraSynthesizer, engine: str | None = None) -> JPExtraSynthesizer:
    """Dynamic int8 quantization (CPU) of everything but the decoder, in place."""
    engine = engine or quantized_engine()
    torch.backends.quantized.engine = engine
    n = sum(_linearize(getattr(model, part)) for part in ("enc_p", "flow", "dp", "sdp"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation notices for quantized tensors
        for part in ("enc_p", "flow", "dp", "sdp"):
            setattr(
                model,
                part,
                torch.ao.quantization.quantize_dynamic(
                    getattr(model, part), {nn.Linear}, dtype=torch.qint8
                ),
            )
    _LOGGER.info("int8 dynamic quantization (%s engine): %d convolutions as linear", engine, n)
    return model


class TorchSynthesizer:
    """A JP-Extra voice on PyTorch."""

    kind = "torch"

    def __init__(
        self,
        config: VoiceConfig,
        checkpoint: Path,
        *,
        device: str = "cpu",
        compile: bool = False,
        quantize: bool = False,
        compile_backend: str = "inductor",
    ) -> None:
        self.config = config
        self.hop_length = config.hop_length
        self.sample_rate = config.sample_rate
        self.device = torch.device(device)
        if quantize and self.device.type != "cpu":
            raise ValueError("int8 quantization is a CPU option (device must be 'cpu')")
        model = load_synthesizer(config, checkpoint, "cpu")
        if quantize:
            model = quantize_int8(model)
        self.model = model.to(self.device)
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
