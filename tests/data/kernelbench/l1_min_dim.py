"""Level 1: minimum over the last dimension of a 3-D tensor, the dim kept (float32)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = torch.min(X, dim=self.dim, keepdim=True)[0]: each row's smallest element."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.min(x, dim=self.dim, keepdim=True)[0]


batch_size = 32
channels = 64
length = 1027


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [-1]
