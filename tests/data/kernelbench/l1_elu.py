"""Level 1: ELU with alpha given at construction (float32)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Y = X where X > 0, else alpha * (exp(X) - 1)."""

    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.elu(x, alpha=self.alpha)


batch_size = 16
dim = 16384


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [0.7]
