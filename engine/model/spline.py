"""Inverse of the monotone rational-quadratic spline (Durkan et al., Neural Spline Flows)
with identity ("linear") tails, as used by the stochastic duration predictor's ConvFlows.

Only the inverse direction is needed at inference. The computation is written without
boolean-mask scatter so it exports to ONNX as plain element-wise ops: every element is
evaluated on its input clamped into the interval, and elements outside the interval take
the identity via `torch.where`.
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F

MIN_BIN_WIDTH = 1e-3
MIN_BIN_HEIGHT = 1e-3
MIN_DERIVATIVE = 1e-3


def _knots(unnormalized: torch.Tensor, lo: float, hi: float, min_size: float) -> torch.Tensor:
    """Cumulative knot positions [..., bins+1] from unnormalised bin sizes."""
    bins = unnormalized.shape[-1]
    sizes = min_size + (1 - min_size * bins) * F.softmax(unnormalized, dim=-1)
    cum = F.pad(torch.cumsum(sizes, dim=-1), (1, 0), value=0.0)
    cum = (hi - lo) * cum + lo
    # Pin the end knots exactly to the bounds.
    first = torch.full_like(cum[..., :1], lo)
    last = torch.full_like(cum[..., :1], hi)
    return torch.cat([first, cum[..., 1:-1], last], dim=-1)


def inverse_rq_spline(
    y: torch.Tensor,
    unnormalized_widths: torch.Tensor,
    unnormalized_heights: torch.Tensor,
    unnormalized_derivatives: torch.Tensor,
    tail_bound: float = 5.0,
) -> torch.Tensor:
    """Map `y` back through the spline. Shapes: y [...], widths/heights [..., K],
    derivatives [..., K-1] (inner knots; the end knots get derivative 1)."""
    inside = (y >= -tail_bound) & (y <= tail_bound)
    yc = y.clamp(-tail_bound, tail_bound)

    edge = math.log(math.exp(1 - MIN_DERIVATIVE) - 1)
    ud = F.pad(unnormalized_derivatives, (1, 1), value=edge)
    derivs = MIN_DERIVATIVE + F.softplus(ud)

    cumw = _knots(unnormalized_widths, -tail_bound, tail_bound, MIN_BIN_WIDTH)
    cumh = _knots(unnormalized_heights, -tail_bound, tail_bound, MIN_BIN_HEIGHT)
    widths = cumw[..., 1:] - cumw[..., :-1]
    heights = cumh[..., 1:] - cumh[..., :-1]

    # Bin of each value by its height knots (the last knot nudged up so y == bound fits).
    nudge = F.pad(torch.zeros_like(cumh[..., 1:]), (0, 1), value=1e-6)
    idx = (torch.sum((yc.unsqueeze(-1) >= cumh + nudge).to(torch.int64), dim=-1) - 1).unsqueeze(-1)

    def pick(t: torch.Tensor) -> torch.Tensor:
        return t.gather(-1, idx).squeeze(-1)

    x_k = pick(cumw)
    w_k = pick(widths)
    y_k = pick(cumh)
    h_k = pick(heights)
    s_k = h_k / w_k
    d_k = pick(derivs)
    d_k1 = pick(derivs[..., 1:])

    dy = yc - y_k
    span = d_k + d_k1 - 2 * s_k
    a = dy * span + h_k * (s_k - d_k)
    b = h_k * d_k - dy * span
    c = -s_k * dy
    disc = b.pow(2) - 4 * a * c
    theta = (2 * c) / (-b - torch.sqrt(disc))
    x = theta * w_k + x_k
    return torch.where(inside, x, y)
