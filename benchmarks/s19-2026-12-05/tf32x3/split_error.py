"""3xTF32's error for float32 gemm, in numbers, on the CPU: against a float64 reference, with the
spec's inputs (uniform [-1, 1)) and its float32 tolerance (|out - ref| <= 1e-3 + 1e-3 |ref|).

Nineteenth session: one TF32 product per term and the three-product split (small*big + big*small
+ big*big), each summed in float32 in k order (round to nearest). The split passed by a wide
margin; one product missed 11-13x.

Twentieth session, after the first GPU run failed (75 of 16.8M outputs off by up to 3.7e-3 at
4096^3 on an H100): the tensor cores round each mma's sum toward zero, so a model of mma.sync
m16n8k8 sums each instruction's products exactly and rounds the sum with the accumulator toward
zero (in two halves of four products, as the hardware adds them). Compared: one accumulator
chained through every mma (the first kernel), a fresh partial per BK = 32 slice added to the
accumulator rounded to nearest (the template), and a fresh partial per k8 step.

    python3 benchmarks/s19-2026-12-05/tf32x3/split_error.py
"""

from __future__ import annotations

import numpy as np


def tf32(x: np.ndarray) -> np.ndarray:
    """cvt.rna.tf32.f32: the float32 rounded to 10 mantissa bits, ties away from zero."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def toward_zero(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounded toward zero."""
    f = x.astype(np.float32)
    over = np.abs(f.astype(np.float64)) > np.abs(x)
    f[over] = np.nextafter(f[over], np.float32(0))
    return f


def split(a: np.ndarray, b: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The three products' operands, small terms first, in float64 (their products are exact)."""
    a_big, b_big = tf32(a), tf32(b)
    a_small, b_small = tf32(a - a_big), tf32(b - b_big)
    return [(x.astype(np.float64), y.astype(np.float64))
            for x, y in ((a_small, b_big), (a_big, b_small), (a_big, b_big))]


def round_to_nearest_sums(k: int, a, b) -> dict[str, np.ndarray]:
    a_big, b_big = tf32(a), tf32(b)
    one = np.zeros((a.shape[0], b.shape[1]), np.float32)
    three = one.copy()
    for i in range(k):  # float32 sums in k order, as a SIMT kernel accumulates
        one += np.outer(a_big[:, i], b_big[i])
        for x, y in split(a[:, i:i + 1], b[i:i + 1]):
            three += (x @ y).astype(np.float32)
    return {"TF32, one product (RN sums)": one, "3xTF32 (RN sums)": three}


def tensor_core_sums(k: int, a, b, slice_k: int = 32) -> dict[str, np.ndarray]:
    shape = (a.shape[0], b.shape[1])
    chained, per_slice, per_step = (np.zeros(shape, np.float32) for _ in range(3))
    partial = np.zeros(shape, np.float32)
    terms = split(a, b)
    for k0 in range(0, k, 8):
        step = np.zeros(shape, np.float32)
        for x, y in terms:
            for h in (k0, k0 + 4):  # one mma: two halves of four exact products each
                products = x[:, h:h + 4] @ y[h:h + 4]
                chained = toward_zero(chained.astype(np.float64) + products)
                partial = toward_zero(partial.astype(np.float64) + products)
                step = toward_zero(step.astype(np.float64) + products)
        per_step += step
        if (k0 + 8) % slice_k == 0 or k0 + 8 >= k:
            per_slice += partial  # float32 add, round to nearest
            partial[:] = 0
    return {"3xTF32, one mma chain": chained, f"3xTF32, partial per {slice_k}": per_slice,
            "3xTF32, partial per k8": per_step}


def run(k: int, rows: int = 128, cols: int = 128, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (rows, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, cols)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    simt = np.zeros((rows, cols), np.float32)
    for i in range(k):
        simt += np.outer(a[:, i], b[i])
    results = {"float32 mul + add": simt, **round_to_nearest_sums(k, a, b),
               **tensor_core_sums(k, a, b)}
    bound = 1e-3 + 1e-3 * np.abs(ref)
    for name, out in results.items():
        err = np.abs(out - ref)
        print(f"K={k:5d} {name:28s} max |err| {err.max():.2e}, worst err/bound "
              f"{(err / bound).max():.3f} ({'passes' if (err <= bound).all() else 'FAILS'})")


if __name__ == "__main__":
    for k in (2000, 4096, 8192):
        run(k)
