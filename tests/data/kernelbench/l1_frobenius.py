"""Level 1: X divided by its Frobenius norm over the whole tensor (float32)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = X / ||X||_F: one norm of every element, so one reduction over the whole tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        norm = torch.norm(x, p="fro")
        return x / norm


batch_size = 4
features = 16
dim1 = 64
dim2 = 65


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return []
