"""Level 1: sum over one dimension, the dimension dropped from the result (float32)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = torch.sum(X, dim=self.dim) with keepdim=False."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=False)


batch_size = 16
rows = 256
cols = 1024
reduce_dim = 1


def get_inputs():
    x = torch.randn(batch_size, rows, cols)
    return [x]


def get_init_inputs():
    return [reduce_dim]
