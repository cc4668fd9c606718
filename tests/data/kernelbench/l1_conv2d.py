"""Level 1: a 3x3 2-D convolution, stride 1, padding 1, no bias, NCHW (float32)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = Conv2d(in_channels, out_channels, 3, padding=1, bias=False)(X)."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 8
in_channels = 32
out_channels = 64
height = 64
width = 64


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels]
