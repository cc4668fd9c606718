"""The bit patterns the worker fills memory with, so that what a wrong output holds says where it
came from: the output poison (never written), an input's guard-band pattern (copied from outside
an input), or neither (a value the kernel computed). Both are NaN in every float dtype (float16,
bfloat16, float32, float64) with payloads no arithmetic produces: the GPU's own NaN results are
canonical (0x7FFFFFFF for float32).

Works on torch tensors on any device (the CPU tests use them directly).
"""

from __future__ import annotations

from typing import Any

# element size -> pattern. 2 bytes: 0x7FA5/0x7FC3 are NaN in float16 (exponent 0x1F) and in
# bfloat16 (exponent 0xFF) alike.
GUARD = {1: 0x5A, 2: 0x7FA5, 4: 0x7FA5A5A5, 8: 0x7FF5A5A5A5A5A5A5}
OUTPUT = {1: 0xA5, 2: 0x7FC3, 4: 0x7FC3C3C3, 8: 0x7FF8C3C3C3C3C3C3}


def bits(t: Any) -> Any:
    """The tensor's raw bits as a signed integer tensor of the same element size (a view)."""
    import torch

    kind = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.view(kind)


def signed(pattern: int, size: int) -> int:
    """`pattern` as the signed integer torch stores for `size` bytes (0xA5 -> -91)."""
    top = 1 << (8 * size)
    return pattern - top if pattern >= top >> 1 else pattern


def fill(t: Any, patterns: dict[int, int]) -> None:
    """Fill `t` (contiguous) with its element size's pattern, bit for bit."""
    size = t.element_size()
    bits(t).fill_(signed(patterns[size], size))


def holds(t: Any, patterns: dict[int, int]) -> Any:
    """Boolean mask: where `t` holds exactly its element size's pattern."""
    size = t.element_size()
    return bits(t.contiguous()) == signed(patterns[size], size)
