"""Small building blocks shared by the JP-Extra network (own implementation).

Parameter names (`gamma`, `beta`, ...) follow the published checkpoints' keys.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

LRELU_SLOPE = 0.1


class ChannelLayerNorm(nn.Module):
    """LayerNorm over the channel axis of a [batch, channels, time] tensor."""

    def __init__(self, channels: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.channels = channels
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(channels))
        self.beta = nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.layer_norm(x.transpose(1, 2), (self.channels,), self.gamma, self.beta, self.eps)
        return y.transpose(1, 2)


def length_mask(lengths: torch.Tensor, max_len: int | torch.Tensor) -> torch.Tensor:
    """[batch, max_len] bool mask, True inside each sequence."""
    positions = torch.arange(max_len, dtype=lengths.dtype, device=lengths.device)
    return positions.unsqueeze(0) < lengths.unsqueeze(1)


def same_padding(kernel_size: int, dilation: int = 1) -> int:
    """Padding that keeps the length of a stride-1 convolution with odd kernel."""
    return (kernel_size * dilation - dilation) // 2
