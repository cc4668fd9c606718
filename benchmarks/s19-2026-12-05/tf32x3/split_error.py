"""Why 3xTF32 and not TF32 for float32 gemm, in numbers, on the CPU: the error of one TF32
product per term and of the three-product split (small*big + big*small + big*big), each summed
in float32 in k order, against a float64 reference, at the K of gemm's bench sizes, with the
spec's inputs (uniform [-1, 1)) and its float32 tolerance (|out - ref| <= 1e-3 + 1e-3 |ref|).
The tensor cores' own accumulation order within an instruction is not modelled.

    python3 benchmarks/s19-2026-12-05/tf32x3/split_error.py
"""

from __future__ import annotations

import numpy as np


def tf32(x: np.ndarray) -> np.ndarray:
    """cvt.rna.tf32.f32: the float32 rounded to 10 mantissa bits, ties away from zero."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def run(k: int, rows: int = 32, cols: int = 32, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (rows, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, cols)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    a_big, b_big = tf32(a), tf32(b)
    a_small, b_small = tf32(a - a_big), tf32(b - b_big)
    one = np.zeros((rows, cols), np.float32)
    three = np.zeros((rows, cols), np.float32)
    simt = np.zeros((rows, cols), np.float32)
    for i in range(k):  # float32 sums in k order, as a kernel accumulates
        one += np.outer(a_big[:, i], b_big[i])
        three += np.outer(a_small[:, i], b_big[i])
        three += np.outer(a_big[:, i], b_small[i])
        three += np.outer(a_big[:, i], b_big[i])
        simt += np.outer(a[:, i], b[i])
    bound = 1e-3 + 1e-3 * np.abs(ref)
    for name, out in (("TF32, one product", one), ("3xTF32", three), ("float32 mul + add", simt)):
        err = np.abs(out - ref)
        print(f"K={k:5d} {name:18s} max |err| {err.max():.2e}, worst err/bound "
              f"{(err / bound).max():.3f} ({'passes' if (err <= bound).all() else 'FAILS'})")


if __name__ == "__main__":
    for k in (2000, 4096, 8192):
        run(k)
