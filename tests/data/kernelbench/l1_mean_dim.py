"""Level 1: mean over the middle dimension of a 3-D tensor, rows not a multiple of 4 (float32)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = X.mean(dim=1): the average over dim1 of each (batch, column)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=1)


batch_size = 16
dim1 = 300
dim2 = 257


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return []
