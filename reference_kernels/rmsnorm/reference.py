"""rmsnorm reference: Y = X * rsqrt(mean(X^2, last dim) + eps) * weight, in the reference dtype."""

import torch


def reference(X, weight, *, M, N, eps):
    return X * torch.rsqrt(torch.mean(X * X, dim=-1, keepdim=True) + eps) * weight
