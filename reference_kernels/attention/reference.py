"""attention reference: softmax(Q K^T / sqrt(D), causal mask if causal) V, in the reference dtype.

Explicit math rather than F.scaled_dot_product_attention, so the float64 reference does not
depend on which fused backend torch picks.
"""

import math

import torch


def reference(Q, K, V, *, B, H, S, D, causal):
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(D)
    if causal:
        future = torch.ones(S, S, dtype=torch.bool, device=Q.device).triu(1)  # key j > query i
        scores = scores.masked_fill(future, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), V)
