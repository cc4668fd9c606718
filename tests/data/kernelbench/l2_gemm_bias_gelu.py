"""Level 2: a fused chain, Linear (gemm + bias), then GELU, then a constant scale (float32)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Y = gelu(X @ W^T + b) * scale, with W, b from nn.Linear(in_features, out_features)."""

    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = F.gelu(x)
        return x * self.scale


batch_size = 512
in_features = 1024
out_features = 2048
scale = 0.5


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, scale]
