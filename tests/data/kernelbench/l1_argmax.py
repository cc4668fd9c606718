"""Level 1: argmax over dimension 1 of a 3-D tensor (float32 in, int64 out)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """I = torch.argmax(X, dim=1); ties go to the first index, as torch does."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=1)


batch_size = 16
dim1 = 512
dim2 = 1024


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return []
