"""Level 1: the mean over the two spatial dims of an NCHW map, kept for broadcasting (global
average pooling), float32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = mean of X over dims 2 and 3, keepdim: one value per (batch, channel)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=(2, 3), keepdim=True)


batch_size = 6
channels = 5
height = 33
width = 31


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return []
