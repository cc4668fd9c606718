"""Level 1: LeakyReLU with a slope given at construction (float32)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = X where X > 0, else slope * X."""

    def __init__(self, negative_slope: float):
        super().__init__()
        self.act = nn.LeakyReLU(negative_slope)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(x)


batch_size = 16
dim = 16384


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [0.05]
