"""Level 1: log-softmax over dimension 1 of a matrix (float32)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = torch.log_softmax(X, dim=self.dim)."""

    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=self.dim)


batch_size = 16
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim) * 4]


def get_init_inputs():
    return [1]
