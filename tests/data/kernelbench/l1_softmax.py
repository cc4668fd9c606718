"""Level 1: softmax over the last dimension of a (batch, dim) tensor (float32)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = softmax(X, dim=-1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


batch_size = 16
dim = 16384


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
