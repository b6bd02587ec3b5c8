"""HiFi-GAN generator (decoder) of the JP-Extra model, speaker-conditioned.

Built with plain convolution weights; checkpoints store the upsampling and residual-block
convolutions with (legacy) weight normalisation, which the loader folds into `weight`
(see `checkpoint.py`).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .layers import LRELU_SLOPE, same_padding


class ResBlock1(nn.Module):
    """Three (dilated conv, conv) residual pairs."""

    def __init__(self, channels: int, kernel_size: int, dilations: list[int]) -> None:
        super().__init__()
        self.convs1 = nn.ModuleList(
            nn.Conv1d(
                channels, channels, kernel_size, dilation=d, padding=same_padding(kernel_size, d)
            )
            for d in dilations
        )
        self.convs2 = nn.ModuleList(
            nn.Conv1d(channels, channels, kernel_size, padding=same_padding(kernel_size))
            for _ in dilations
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for c1, c2 in zip(self.convs1, self.convs2):
            y = c1(F.leaky_relu(x, LRELU_SLOPE))
            y = c2(F.leaky_relu(y, LRELU_SLOPE))
            x = x + y
        return x


class ResBlock2(nn.Module):
    """Residual dilated convolutions, one per dilation."""

    def __init__(self, channels: int, kernel_size: int, dilations: list[int]) -> None:
        super().__init__()
        self.convs = nn.ModuleList(
            nn.Conv1d(
                channels, channels, kernel_size, dilation=d, padding=same_padding(kernel_size, d)
            )
            for d in dilations
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for c in self.convs:
            x = x + c(F.leaky_relu(x, LRELU_SLOPE))
        return x


class Generator(nn.Module):
    def __init__(
        self,
        initial_channel: int,
        resblock: str,
        resblock_kernel_sizes: list[int],
        resblock_dilation_sizes: list[list[int]],
        upsample_rates: list[int],
        upsample_initial_channel: int,
        upsample_kernel_sizes: list[int],
        gin_channels: int = 0,
    ) -> None:
        super().__init__()
        self.num_kernels = len(resblock_kernel_sizes)
        self.conv_pre = nn.Conv1d(initial_channel, upsample_initial_channel, 7, 1, padding=3)
        block = ResBlock1 if resblock == "1" else ResBlock2
        self.ups = nn.ModuleList()
        self.resblocks = nn.ModuleList()
        ch = upsample_initial_channel
        for i, (u, k) in enumerate(zip(upsample_rates, upsample_kernel_sizes)):
            cin = upsample_initial_channel // (2**i)
            ch = upsample_initial_channel // (2 ** (i + 1))
            self.ups.append(nn.ConvTranspose1d(cin, ch, k, u, padding=(k - u) // 2))
            for rk, rd in zip(resblock_kernel_sizes, resblock_dilation_sizes):
                self.resblocks.append(block(ch, rk, list(rd)))
        self.conv_post = nn.Conv1d(ch, 1, 7, 1, padding=3, bias=False)
        if gin_channels:
            self.cond = nn.Conv1d(gin_channels, upsample_initial_channel, 1)

    def forward(self, x: torch.Tensor, g: torch.Tensor | None = None) -> torch.Tensor:
        x = self.conv_pre(x)
        if g is not None:
            x = x + self.cond(g)
        for i, up in enumerate(self.ups):
            x = up(F.leaky_relu(x, LRELU_SLOPE))
            acc = self.resblocks[i * self.num_kernels](x)
            for j in range(1, self.num_kernels):
                acc = acc + self.resblocks[i * self.num_kernels + j](x)
            x = acc / self.num_kernels
        # The last activation uses PyTorch's default slope (0.01), as the reference does.
        x = self.conv_post(F.leaky_relu(x))
        return torch.tanh(x)
