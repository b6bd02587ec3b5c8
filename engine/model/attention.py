"""Transformer encoder with windowed relative-position self-attention (VITS style).

Used by the text encoder and by every transformer coupling layer of the flow. Relative
position embeddings cover offsets -window..+window and are shared by all heads; positions
further apart get no relative term. The speaker embedding is added before layer
`cond_layer_idx` (VITS2 conditioning).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from .layers import ChannelLayerNorm


class RelativeSelfAttention(nn.Module):
    """Multi-head self-attention with shared relative key/value embeddings."""

    def __init__(self, channels: int, n_heads: int, window_size: int = 4) -> None:
        super().__init__()
        if channels % n_heads:
            raise ValueError("channels must be divisible by n_heads")
        self.n_heads = n_heads
        self.head_dim = channels // n_heads
        self.window_size = window_size
        self.conv_q = nn.Conv1d(channels, channels, 1)
        self.conv_k = nn.Conv1d(channels, channels, 1)
        self.conv_v = nn.Conv1d(channels, channels, 1)
        self.conv_o = nn.Conv1d(channels, channels, 1)
        scale = self.head_dim**-0.5
        self.emb_rel_k = nn.Parameter(torch.randn(1, 2 * window_size + 1, self.head_dim) * scale)
        self.emb_rel_v = nn.Parameter(torch.randn(1, 2 * window_size + 1, self.head_dim) * scale)

    def _offsets(self, length: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """Index (offset + window, clamped) and validity of every (query, key) pair."""
        pos = torch.arange(length, device=device)
        rel = pos.unsqueeze(0) - pos.unsqueeze(1)  # [q, k] = k - q
        valid = rel.abs() <= self.window_size
        index = rel.clamp(-self.window_size, self.window_size) + self.window_size
        return index, valid

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x [b, c, t]; mask [b, 1, t, t] (1 = attend)."""
        b, c, t = x.shape
        h, d = self.n_heads, self.head_dim
        q = self.conv_q(x).view(b, h, d, t).transpose(2, 3)  # [b, h, t, d]
        k = self.conv_k(x).view(b, h, d, t).transpose(2, 3)
        v = self.conv_v(x).view(b, h, d, t).transpose(2, 3)
        q = q / math.sqrt(d)

        scores = torch.matmul(q, k.transpose(-2, -1))  # [b, h, t, t]
        index, valid = self._offsets(t, x.device)
        # Query against every relative key embedding, then pick each pair's offset.
        rel_k = torch.matmul(q, self.emb_rel_k.transpose(-2, -1))  # [b, h, t, 2w+1]
        gathered = torch.gather(rel_k, 3, index.expand(b, h, t, t))
        scores = scores + gathered * valid.to(scores.dtype)
        scores = scores.masked_fill(mask == 0, -1e4)
        probs = F.softmax(scores, dim=-1)

        out = torch.matmul(probs, v)
        # Weight of each relative offset r for query i: probs[i, i + r - w] (0 outside).
        w = self.window_size
        pos = torch.arange(t, device=x.device)
        offs = torch.arange(-w, w + 1, device=x.device)
        key_of = pos.unsqueeze(1) + offs.unsqueeze(0)  # [t, 2w+1]
        inside = (key_of >= 0) & (key_of < t)
        key_of = key_of.clamp(0, t - 1)
        rel_probs = torch.gather(probs, 3, key_of.expand(b, h, t, 2 * w + 1))
        rel_probs = rel_probs * inside.to(probs.dtype)
        out = out + torch.matmul(rel_probs, self.emb_rel_v)
        out = out.transpose(2, 3).reshape(b, c, t)
        return self.conv_o(out)


class FeedForward(nn.Module):
    """Two 'same'-padded convolutions with ReLU, masked."""

    def __init__(self, channels: int, filter_channels: int, kernel_size: int) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.conv_1 = nn.Conv1d(channels, filter_channels, kernel_size)
        self.conv_2 = nn.Conv1d(filter_channels, channels, kernel_size)

    def _pad(self, x: torch.Tensor) -> torch.Tensor:
        if self.kernel_size == 1:
            return x
        return F.pad(x, ((self.kernel_size - 1) // 2, self.kernel_size // 2))

    def forward(self, x: torch.Tensor, x_mask: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv_1(self._pad(x * x_mask)))
        y = self.conv_2(self._pad(y * x_mask))
        return y * x_mask


class TransformerEncoder(nn.Module):
    """Post-norm transformer stack; speaker conditioning before layer `cond_layer_idx`."""

    def __init__(
        self,
        hidden_channels: int,
        filter_channels: int,
        n_heads: int,
        n_layers: int,
        kernel_size: int,
        gin_channels: int = 0,
        cond_layer_idx: int = 2,
        window_size: int = 4,
    ) -> None:
        super().__init__()
        self.n_layers = n_layers
        self.cond_layer_idx = n_layers
        if gin_channels:
            if cond_layer_idx >= n_layers:
                raise ValueError("cond_layer_idx must be less than n_layers")
            self.spk_emb_linear = nn.Linear(gin_channels, hidden_channels)
            self.cond_layer_idx = cond_layer_idx
        self.attn_layers = nn.ModuleList(
            RelativeSelfAttention(hidden_channels, n_heads, window_size) for _ in range(n_layers)
        )
        self.norm_layers_1 = nn.ModuleList(
            ChannelLayerNorm(hidden_channels) for _ in range(n_layers)
        )
        self.ffn_layers = nn.ModuleList(
            FeedForward(hidden_channels, filter_channels, kernel_size) for _ in range(n_layers)
        )
        self.norm_layers_2 = nn.ModuleList(
            ChannelLayerNorm(hidden_channels) for _ in range(n_layers)
        )

    def forward(
        self, x: torch.Tensor, x_mask: torch.Tensor, g: torch.Tensor | None = None
    ) -> torch.Tensor:
        attn_mask = x_mask.unsqueeze(2) * x_mask.unsqueeze(-1)
        x = x * x_mask
        for i in range(self.n_layers):
            if i == self.cond_layer_idx and g is not None:
                x = (x + self.spk_emb_linear(g.transpose(1, 2)).transpose(1, 2)) * x_mask
            x = self.norm_layers_1[i](x + self.attn_layers[i](x, attn_mask))
            x = self.norm_layers_2[i](x + self.ffn_layers[i](x, x_mask))
        return x * x_mask
