"""Level 1: Softplus (float32)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Y = log(1 + exp(X)), and X itself above the threshold (20)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softplus(x)


batch_size = 16
dim = 16384


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
