"""Must be REFUSED by a converter: the output's shape depends on the input values.

torch.masked_select returns as many elements as there are positive entries, which differs for
every random input set; an op spec needs output shapes that are expressions of the sizes alone
(the output buffer is allocated before the kernel runs), so this cannot be expressed as one.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Y = the positive entries of X, flattened (length depends on the data)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.masked_select(x, x > 0)


batch_size = 16
dim = 4096


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
