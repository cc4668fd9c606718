"""Where gemm float32's "bench reference" phase goes (0.42 s a check on an H200, summed over the
three bench sizes): the float64 copies, the float64 matmul, the first call against later ones,
and after the torch cache is emptied, as the warm worker empties it between candidates.

    python3 benchmarks/s19-2026-12-05/reference_cost.py
"""

from __future__ import annotations

import time

import torch

from kgen.ops import load_op
from kgen.sandbox import reference
from kgen.sandbox.validate import compute_reference, make_inputs

SPEC = load_op("gemm")


def lap(what: str, start: float) -> float:
    torch.cuda.synchronize()
    now = time.monotonic()
    print(f"  {what}: {now - start:.3f} s")
    return now


for round_ in ("first", "second", "after empty_cache"):
    print(round_)
    if round_ == "after empty_cache":
        torch.cuda.empty_cache()
    for sizes in SPEC.bench_sizes:
        start = time.monotonic()
        inputs = make_inputs(SPEC, sizes, "float32", 1, device="cuda")
        start = lap(f"{sizes}: inputs drawn", start)
        bound = reference.bind(inputs, "cuda", torch.float64)
        start = lap(f"{sizes}: float64 copies", start)
        with torch.no_grad():
            reference.evaluate(SPEC, bound, sizes, device="cuda", dtype=torch.float64)
        start = lap(f"{sizes}: float64 matmul", start)
        compute_reference(SPEC, "float32", inputs, sizes)
        lap(f"{sizes}: compute_reference whole", start)
