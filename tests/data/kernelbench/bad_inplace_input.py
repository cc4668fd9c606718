"""Must be REFUSED: forward modifies its input in place (x.clamp_ writes into the caller's tensor).

The reference would change the very tensor the kernel reads, and a second call would see
different inputs; kgen checks that a kernel leaves its inputs unchanged, so the problem cannot be
expressed as an op whose inputs are read-only.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = clamp(X, 0, 1), computed by clamping X itself."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.clamp_(0.0, 1.0)
        return x * 2


rows = 64
cols = 256


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
