"""Level 1: LayerNorm over the last three dims of a 4-D input (float32), its affine drawn at random
so a kernel that skips the weight or the bias fails."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = LayerNorm((features, dim1, dim2))(X) with a learnable elementwise affine, over inputs
    that are not centered (mean 3, std 2)."""

    def __init__(self, features: int, dim1: int, dim2: int):
        super().__init__()
        self.norm = nn.LayerNorm((features, dim1, dim2), eps=1e-6)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-1.0, 1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch_size = 5
features = 7
dim1 = 9
dim2 = 35


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2) * 2 + 3]


def get_init_inputs():
    return [features, dim1, dim2]
