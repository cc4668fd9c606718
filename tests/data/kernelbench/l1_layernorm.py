"""Level 1: LayerNorm with a learnable elementwise affine over the trailing dims (float32)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = LayerNorm(normalized_shape)(X), weight and bias learnable (elementwise_affine=True)."""

    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape, elementwise_affine=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 32
features = 4096


def get_inputs():
    x = torch.randn(batch_size, features)
    return [x]


def get_init_inputs():
    return [(features,)]
