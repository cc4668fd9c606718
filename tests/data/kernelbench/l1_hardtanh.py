"""Level 1: HardTanh at a size that is no multiple of a vector or a tile (float32)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Y = X clamped to [-1, 1]."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardtanh(x, min_val=-1.0, max_val=1.0)


batch_size = 15
dim = 10003


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
