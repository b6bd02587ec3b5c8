"""The Style-Bert-VITS2 JP-Extra synthesizer for inference (`SynthesizerTrn` key layout).

Submodule names match the published checkpoints: `enc_p` (text encoder), `dp` / `sdp`
(duration predictors), `flow` (transformer coupling flow), `dec` (HiFi-GAN), `emb_g`
(speaker embedding). The posterior encoder `enc_q` is training-only and not built.

Noise is passed in rather than drawn inside, so callers control reproducibility:
`sdp_noise` [b, 2, t] (standard normal) and `z_noise` [b, inter_channels, n] (standard
normal). `z_noise` may be longer than the predicted frame count (it is cut) or shorter (it
is zero-padded; the backends draw enough). `None` draws `torch.randn` inside, which is what
the hayakoe-compatible ONNX graph contains (RandomNormalLike).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..voice_config import VoiceConfig
from .duration import DurationPredictor, StochasticDurationPredictor
from .flow import TransformerCouplingBlock
from .generator import Generator
from .layers import length_mask
from .text_encoder import TextEncoder


@dataclass
class Encoded:
    """Text-encoder results for one batch."""

    hidden: torch.Tensor  # [b, h, t]
    m_p: torch.Tensor  # [b, c, t]
    logs_p: torch.Tensor  # [b, c, t]
    x_mask: torch.Tensor  # [b, 1, t]
    g: torch.Tensor  # [b, gin, 1]


class JPExtraSynthesizer(nn.Module):
    def __init__(self, config: VoiceConfig) -> None:
        super().__init__()
        m = config.model
        self.config = config
        self.inter_channels = m.inter_channels
        gin = m.gin_channels
        self.enc_p = TextEncoder(
            config.n_vocab,
            config.n_tones,
            config.n_languages,
            m.inter_channels,
            m.hidden_channels,
            m.filter_channels,
            m.n_heads,
            m.n_layers,
            m.kernel_size,
            gin_channels=gin if m.use_spk_conditioned_encoder else 0,
            bert_channels=m.bert_channels,
            style_dim=config.style_dim,
        )
        self.dec = Generator(
            m.inter_channels,
            m.resblock,
            m.resblock_kernel_sizes,
            m.resblock_dilation_sizes,
            m.upsample_rates,
            m.upsample_initial_channel,
            m.upsample_kernel_sizes,
            gin_channels=gin,
        )
        self.flow = TransformerCouplingBlock(
            m.inter_channels,
            m.hidden_channels,
            m.filter_channels,
            m.n_heads,
            config.n_layers_trans_flow,
            config.flow_kernel_size,
            config.n_flow_layer,
            gin_channels=gin,
        )
        self.sdp = StochasticDurationPredictor(m.hidden_channels, 3, 4, gin_channels=gin)
        self.dp = DurationPredictor(
            m.hidden_channels, config.dp_filter_channels, 3, gin_channels=gin
        )
        self.emb_g = nn.Embedding(max(config.data.n_speakers, 1), gin)

    # --- stages -------------------------------------------------------------------------

    def encode(
        self,
        x: torch.Tensor,
        x_lengths: torch.Tensor,
        sid: torch.Tensor,
        tone: torch.Tensor,
        language: torch.Tensor,
        bert: torch.Tensor,
        style_vec: torch.Tensor,
    ) -> Encoded:
        g = self.emb_g(sid).unsqueeze(-1)
        hidden, m_p, logs_p, x_mask = self.enc_p(x, x_lengths, tone, language, bert, style_vec, g=g)
        return Encoded(hidden, m_p, logs_p, x_mask, g)

    def log_durations(
        self,
        enc: Encoded,
        sdp_ratio: torch.Tensor | float,
        noise_scale_w: torch.Tensor | float,
        sdp_noise: torch.Tensor | None,
    ) -> torch.Tensor:
        """Blend of stochastic and deterministic log-durations [b, 1, t]."""
        if sdp_noise is None:
            sdp_noise = torch.randn_like(enc.m_p[:, :2])
        logw_sdp = self.sdp(enc.hidden, enc.x_mask, sdp_noise * noise_scale_w, g=enc.g)
        logw_dp = self.dp(enc.hidden, enc.x_mask, g=enc.g)
        return logw_sdp * sdp_ratio + logw_dp * (1 - sdp_ratio)

    @staticmethod
    def frames(
        logw: torch.Tensor, x_mask: torch.Tensor, length_scale: torch.Tensor | float
    ) -> torch.Tensor:
        """Integer-valued (float) frames per phone [b, 1, t]: ceil(exp(logw)·mask·scale)."""
        return torch.ceil(torch.exp(logw) * x_mask * length_scale)

    def decode(
        self,
        enc: Encoded,
        w_ceil: torch.Tensor,
        noise_scale: torch.Tensor | float,
        z_noise: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Expand the prior by durations, invert the flow, vocode.

        Returns (audio [b, 1, samples], z_p [b, c, f], z [b, c, f])."""
        z_p, z, y_mask = self.latent(enc, w_ceil, noise_scale, z_noise)
        audio = self.dec(z * y_mask, g=enc.g)
        return audio, z_p, z

    def latent(
        self,
        enc: Encoded,
        w_ceil: torch.Tensor,
        noise_scale: torch.Tensor | float,
        z_noise: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """`decode` without the vocoder (for windowed decoding, `engine.synth.windowed`).

        Returns (z_p [b, c, f], z [b, c, f], y_mask [b, 1, f]); the decoder reads z · y_mask."""
        y_lengths = torch.clamp_min(torch.sum(w_ceil, [1, 2]), 1).long()
        n_frames = y_lengths.max()
        y_mask = length_mask(y_lengths, n_frames).unsqueeze(1).to(enc.x_mask.dtype)
        # Hard monotonic alignment: frame f belongs to phone p when
        # cum[p-1] <= f < cum[p].  path [b, t, f].
        cum = torch.cumsum(w_ceil.squeeze(1), -1)  # [b, t]
        frame_idx = torch.arange(n_frames, device=w_ceil.device, dtype=cum.dtype)
        upper = frame_idx.view(1, 1, -1) < cum.unsqueeze(-1)
        lower = frame_idx.view(1, 1, -1) < (cum - w_ceil.squeeze(1)).unsqueeze(-1)
        path = (upper & ~lower).to(enc.m_p.dtype)
        path = path * enc.x_mask.transpose(1, 2) * y_mask
        m_p = torch.matmul(enc.m_p, path)  # [b, c, f]
        logs_p = torch.matmul(enc.logs_p, path)
        if z_noise is None:
            noise = torch.randn_like(m_p)
        else:
            noise = torch.cat([z_noise, torch.zeros_like(m_p)], dim=2)[:, :, : m_p.size(2)]
        z_p = m_p + noise * torch.exp(logs_p) * noise_scale
        z = self.flow.inverse(z_p, y_mask, g=enc.g)
        return z_p, z, y_mask

    # --- whole call ---------------------------------------------------------------------

    def infer(
        self,
        x: torch.Tensor,
        x_lengths: torch.Tensor,
        sid: torch.Tensor,
        tone: torch.Tensor,
        language: torch.Tensor,
        bert: torch.Tensor,
        style_vec: torch.Tensor,
        noise_scale: torch.Tensor | float,
        length_scale: torch.Tensor | float,
        noise_scale_w: torch.Tensor | float,
        sdp_ratio: torch.Tensor | float,
        sdp_noise: torch.Tensor | None = None,
        z_noise: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Full synthesis. Returns audio [b, 1, samples] and durations [b, t] (frames)."""
        enc = self.encode(x, x_lengths, sid, tone, language, bert, style_vec)
        logw = self.log_durations(enc, sdp_ratio, noise_scale_w, sdp_noise)
        w_ceil = self.frames(logw, enc.x_mask, length_scale)
        audio, _, _ = self.decode(enc, w_ceil, noise_scale, z_noise)
        return audio, w_ceil[:, 0]
