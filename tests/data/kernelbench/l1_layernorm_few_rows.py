"""Level 1: LayerNorm over the last three dims of a 4-D input with only 3 rows, each of 169855
elements (odd: no 16-byte accesses), float32; the affine drawn at random."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = LayerNorm((features, dim1, dim2))(X), few long rows, inputs not centered."""

    def __init__(self, features: int, dim1: int, dim2: int):
        super().__init__()
        self.norm = nn.LayerNorm((features, dim1, dim2))
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-1.0, 1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch_size = 3
features = 5
dim1 = 161
dim2 = 211


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2) * 2 + 3]


def get_init_inputs():
    return [features, dim1, dim2]
