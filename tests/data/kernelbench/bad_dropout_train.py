"""Must be REFUSED: an nn.Dropout layer in train mode (the default for a fresh Model) draws a new
random mask in every forward call, with no random call written in forward itself."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = Dropout(p)(X @ W^T) with nn.Linear weights."""

    def __init__(self, features: int, p: float):
        super().__init__()
        self.linear = nn.Linear(features, features, bias=False)
        self.drop = nn.Dropout(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.linear(x))


batch = 32
features = 256
p = 0.25


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features, p]
