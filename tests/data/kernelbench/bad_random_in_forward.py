"""Must be REFUSED by a converter: forward draws fresh random numbers (torch.rand).

The output depends on the RNG state at call time, not only on the inputs and parameters, so there
is no fixed reference to validate a kernel against (two runs of the model itself disagree). A
converter has to reject it rather than turn it into an op spec.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = X + noise, with noise drawn anew in every forward call."""

    def __init__(self, noise_scale: float):
        super().__init__()
        self.noise_scale = noise_scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        noise = torch.rand(x.shape, device=x.device, dtype=x.dtype)  # random inside forward
        return x + self.noise_scale * noise


batch_size = 16
dim = 4096
noise_scale = 0.1


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [noise_scale]
