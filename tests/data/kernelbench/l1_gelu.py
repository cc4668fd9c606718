"""Level 1: GELU, exact (erf) form (float32)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = X * Phi(X), Phi the standard normal CDF."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x)


batch_size = 16
dim = 16384


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
