"""Transformer coupling flow (VITS2) — inverse direction only.

`flows` keeps the checkpoint layout: coupling layers at even indices, parameter-free channel
flips at odd indices. Coupling layers are mean-only: x1 ← x1 − m(x0).
"""

from __future__ import annotations

import torch
from torch import nn

from .attention import TransformerEncoder
from .duration import ChannelFlip


class TransformerCouplingLayer(nn.Module):
    """Mean-only affine coupling whose shift is predicted by a transformer encoder."""

    def __init__(
        self,
        channels: int,
        hidden_channels: int,
        filter_channels: int,
        n_heads: int,
        n_layers: int,
        kernel_size: int,
        gin_channels: int = 0,
    ) -> None:
        super().__init__()
        self.half_channels = channels // 2
        self.pre = nn.Conv1d(self.half_channels, hidden_channels, 1)
        self.enc = TransformerEncoder(
            hidden_channels, filter_channels, n_heads, n_layers, kernel_size, gin_channels
        )
        self.post = nn.Conv1d(hidden_channels, self.half_channels, 1)

    def inverse(
        self, x: torch.Tensor, x_mask: torch.Tensor, g: torch.Tensor | None
    ) -> torch.Tensor:
        x0, x1 = torch.split(x, [self.half_channels, self.half_channels], 1)
        h = self.enc(self.pre(x0) * x_mask, x_mask, g=g)
        m = self.post(h) * x_mask
        # Mean-only coupling: logs == 0, so the inverse scale exp(-0) is 1.
        x1 = (x1 - m) * x_mask
        return torch.cat([x0, x1], 1)


class TransformerCouplingBlock(nn.Module):
    """n_flows × (coupling layer, flip)."""

    def __init__(
        self,
        channels: int,
        hidden_channels: int,
        filter_channels: int,
        n_heads: int,
        n_layers: int,
        kernel_size: int,
        n_flows: int = 4,
        gin_channels: int = 0,
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for _ in range(n_flows):
            layers.append(
                TransformerCouplingLayer(
                    channels,
                    hidden_channels,
                    filter_channels,
                    n_heads,
                    n_layers,
                    kernel_size,
                    gin_channels,
                )
            )
            layers.append(ChannelFlip())
        self.flows = nn.ModuleList(layers)

    def inverse(
        self, z: torch.Tensor, mask: torch.Tensor, g: torch.Tensor | None = None
    ) -> torch.Tensor:
        for flow in reversed(self.flows):
            z = flow.inverse(z, mask, g)
        return z
