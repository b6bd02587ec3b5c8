"""Duration predictors of the JP-Extra model: the deterministic one (`dp`) and the
stochastic one (`sdp`, inference/reverse direction only).

The stochastic predictor's module list keeps the checkpoint's indices:
`flows = [ElementwiseAffine, ConvFlow, Flip, ConvFlow, Flip, ConvFlow, Flip, ConvFlow, Flip]`.
At inference the reference runs the list in reverse and leaves out `flows.1` (upstream:
"remove a useless vflow"), so `flows.1` is a parameter-free placeholder here and its
checkpoint keys are dropped by the loader. The `post_*` modules are used only in training
and are not built.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from .layers import ChannelLayerNorm, same_padding
from .spline import inverse_rq_spline


class DurationPredictor(nn.Module):
    """Two conv+ReLU+LayerNorm blocks and a 1x1 projection → log-durations [b, 1, t]."""

    def __init__(
        self, in_channels: int, filter_channels: int, kernel_size: int, gin_channels: int = 0
    ) -> None:
        super().__init__()
        pad = kernel_size // 2
        self.conv_1 = nn.Conv1d(in_channels, filter_channels, kernel_size, padding=pad)
        self.norm_1 = ChannelLayerNorm(filter_channels)
        self.conv_2 = nn.Conv1d(filter_channels, filter_channels, kernel_size, padding=pad)
        self.norm_2 = ChannelLayerNorm(filter_channels)
        self.proj = nn.Conv1d(filter_channels, 1, 1)
        if gin_channels:
            self.cond = nn.Conv1d(gin_channels, in_channels, 1)

    def forward(
        self, x: torch.Tensor, x_mask: torch.Tensor, g: torch.Tensor | None = None
    ) -> torch.Tensor:
        if g is not None:
            x = x + self.cond(g)
        x = self.norm_1(torch.relu(self.conv_1(x * x_mask)))
        x = self.norm_2(torch.relu(self.conv_2(x * x_mask)))
        return self.proj(x * x_mask) * x_mask


class DDSConv(nn.Module):
    """Dilated depth-separable convolutions with LayerNorm + GELU, residual."""

    def __init__(self, channels: int, kernel_size: int, n_layers: int) -> None:
        super().__init__()
        self.n_layers = n_layers
        self.convs_sep = nn.ModuleList()
        self.convs_1x1 = nn.ModuleList()
        self.norms_1 = nn.ModuleList()
        self.norms_2 = nn.ModuleList()
        for i in range(n_layers):
            dilation = kernel_size**i
            self.convs_sep.append(
                nn.Conv1d(
                    channels,
                    channels,
                    kernel_size,
                    groups=channels,
                    dilation=dilation,
                    padding=same_padding(kernel_size, dilation),
                )
            )
            self.convs_1x1.append(nn.Conv1d(channels, channels, 1))
            self.norms_1.append(ChannelLayerNorm(channels))
            self.norms_2.append(ChannelLayerNorm(channels))

    def forward(
        self, x: torch.Tensor, x_mask: torch.Tensor, g: torch.Tensor | None = None
    ) -> torch.Tensor:
        if g is not None:
            x = x + g
        for i in range(self.n_layers):
            y = F.gelu(self.norms_1[i](self.convs_sep[i](x * x_mask)))
            y = F.gelu(self.norms_2[i](self.convs_1x1[i](y)))
            x = x + y
        return x * x_mask


class ElementwiseAffine(nn.Module):
    """y = m + exp(logs) * x per channel; inverse only."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.m = nn.Parameter(torch.zeros(channels, 1))
        self.logs = nn.Parameter(torch.zeros(channels, 1))

    def inverse(self, x: torch.Tensor, x_mask: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return (x - self.m) * torch.exp(-self.logs) * x_mask


class ChannelFlip(nn.Module):
    """Reverses the channel order (its own inverse)."""

    def inverse(self, x: torch.Tensor, x_mask: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return torch.flip(x, [1])


class SkippedFlow(nn.Module):
    """Placeholder for a flow that inference leaves out (keeps checkpoint indices)."""

    def inverse(self, x: torch.Tensor, x_mask: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return x


class ConvFlow(nn.Module):
    """Coupling layer whose transform is a rational-quadratic spline predicted by DDSConv."""

    def __init__(
        self,
        in_channels: int,
        filter_channels: int,
        kernel_size: int,
        n_layers: int,
        num_bins: int = 10,
        tail_bound: float = 5.0,
    ) -> None:
        super().__init__()
        self.filter_channels = filter_channels
        self.num_bins = num_bins
        self.tail_bound = tail_bound
        self.half_channels = in_channels // 2
        self.pre = nn.Conv1d(self.half_channels, filter_channels, 1)
        self.convs = DDSConv(filter_channels, kernel_size, n_layers)
        self.proj = nn.Conv1d(filter_channels, self.half_channels * (num_bins * 3 - 1), 1)

    def inverse(self, x: torch.Tensor, x_mask: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        x0, x1 = torch.split(x, [self.half_channels, self.half_channels], 1)
        h = self.convs(self.pre(x0), x_mask, g=g)
        h = self.proj(h) * x_mask
        b, c, t = x0.shape
        h = h.reshape(b, c, -1, t).permute(0, 1, 3, 2)  # [b, c, t, 3K-1]
        k = self.num_bins
        scale = math.sqrt(self.filter_channels)
        x1 = inverse_rq_spline(
            x1, h[..., :k] / scale, h[..., k : 2 * k] / scale, h[..., 2 * k :], self.tail_bound
        )
        return torch.cat([x0, x1], 1) * x_mask


class StochasticDurationPredictor(nn.Module):
    """Flow-based duration predictor; `forward` samples log-durations from noise."""

    def __init__(
        self, in_channels: int, kernel_size: int = 3, n_flows: int = 4, gin_channels: int = 0
    ) -> None:
        super().__init__()
        filter_channels = in_channels  # upstream overrides the filter size with in_channels
        self.pre = nn.Conv1d(in_channels, filter_channels, 1)
        self.proj = nn.Conv1d(filter_channels, filter_channels, 1)
        self.convs = DDSConv(filter_channels, kernel_size, n_layers=3)
        if gin_channels:
            self.cond = nn.Conv1d(gin_channels, filter_channels, 1)
        flows: list[nn.Module] = [ElementwiseAffine(2)]
        for i in range(n_flows):
            flows.append(SkippedFlow() if i == 0 else ConvFlow(2, filter_channels, kernel_size, 3))
            flows.append(ChannelFlip())
        self.flows = nn.ModuleList(flows)

    def forward(
        self,
        x: torch.Tensor,
        x_mask: torch.Tensor,
        noise: torch.Tensor,
        g: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """`noise` [b, 2, t] already scaled by noise_scale_w. Returns log-durations [b, 1, t]."""
        h = self.pre(x)
        if g is not None:
            h = h + self.cond(g)
        h = self.proj(self.convs(h, x_mask)) * x_mask
        z = noise
        for flow in reversed(self.flows):
            z = flow.inverse(z, x_mask, h)
        return z[:, :1]
