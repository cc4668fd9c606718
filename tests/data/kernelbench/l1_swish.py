"""Level 1: Swish, x * sigmoid(x), written out as two torch calls (float32)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = X * sigmoid(X), elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)


batch_size = 32
dim = 32768


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
