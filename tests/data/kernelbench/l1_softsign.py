"""Level 1: Softsign written out in torch ops (float32)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = X / (1 + |X|)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / (1 + torch.abs(x))


batch_size = 16
dim = 16384


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
