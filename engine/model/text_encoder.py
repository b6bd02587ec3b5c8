"""JP-Extra text encoder: phone/tone/language embeddings + projected BERT features +
projected style vector → transformer → prior mean and log-sigma per phone."""

from __future__ import annotations

import math

import torch
from torch import nn

from .attention import TransformerEncoder
from .layers import length_mask


class TextEncoder(nn.Module):
    def __init__(
        self,
        n_vocab: int,
        n_tones: int,
        n_languages: int,
        out_channels: int,
        hidden_channels: int,
        filter_channels: int,
        n_heads: int,
        n_layers: int,
        kernel_size: int,
        gin_channels: int = 0,
        bert_channels: int = 1024,
        style_dim: int = 256,
    ) -> None:
        super().__init__()
        self.out_channels = out_channels
        self.hidden_channels = hidden_channels
        self.emb = nn.Embedding(n_vocab, hidden_channels)
        self.tone_emb = nn.Embedding(n_tones, hidden_channels)
        self.language_emb = nn.Embedding(n_languages, hidden_channels)
        self.bert_proj = nn.Conv1d(bert_channels, hidden_channels, 1)
        self.style_proj = nn.Linear(style_dim, hidden_channels)
        self.encoder = TransformerEncoder(
            hidden_channels, filter_channels, n_heads, n_layers, kernel_size, gin_channels
        )
        self.proj = nn.Conv1d(hidden_channels, out_channels * 2, 1)

    def forward(
        self,
        x: torch.Tensor,
        x_lengths: torch.Tensor,
        tone: torch.Tensor,
        language: torch.Tensor,
        bert: torch.Tensor,
        style_vec: torch.Tensor,
        g: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Returns hidden [b, h, t], m_p [b, c, t], logs_p [b, c, t], x_mask [b, 1, t]."""
        h = (
            self.emb(x)
            + self.tone_emb(tone)
            + self.language_emb(language)
            + self.bert_proj(bert).transpose(1, 2)
            + self.style_proj(style_vec.unsqueeze(1))
        ) * math.sqrt(self.hidden_channels)
        h = h.transpose(1, 2)
        x_mask = length_mask(x_lengths, h.size(2)).unsqueeze(1).to(h.dtype)
        h = self.encoder(h * x_mask, x_mask, g=g)
        stats = self.proj(h) * x_mask
        m, logs = torch.split(stats, [self.out_channels, self.out_channels], dim=1)
        return h, m, logs, x_mask
