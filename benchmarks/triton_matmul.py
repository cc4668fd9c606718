"""A plain autotuned Triton matmul, a second yardstick beside cuBLAS in `make bench`.

Run as `python benchmarks/triton_matmul.py DTYPE M N K ...` in its own process; prints one JSON
line of median milliseconds per size (timed by the worker's timing loop, L2 flushed before each
launch).
"""

from __future__ import annotations

import json
import sys


def _kernel():
    import triton
    import triton.language as tl

    configs = [triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP": 8}, num_warps=w, num_stages=s)
               for bm, bn, bk, w, s in [(128, 256, 64, 8, 3), (128, 128, 64, 4, 4),
                                        (128, 128, 32, 4, 4), (64, 128, 32, 4, 4),
                                        (128, 64, 32, 4, 4), (256, 128, 64, 8, 3)]]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               GROUP: tl.constexpr, PRECISION: tl.constexpr):
        pid = tl.program_id(0)
        tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        # Grouped ordering: neighbouring programs share A rows, for L2 reuse.
        group = pid // (GROUP * tiles_n)
        first_m = group * GROUP
        rows = min(tiles_m - first_m, GROUP)
        pm = first_m + (pid % (GROUP * tiles_n)) % rows
        pn = (pid % (GROUP * tiles_n)) // rows
        offs_m = pm * BM + tl.arange(0, BM)
        offs_n = pn * BN + tl.arange(0, BN)
        offs_k = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            ka = k0 + offs_k
            ta = tl.load(a + offs_m[:, None] * K + ka[None, :],
                         mask=(offs_m[:, None] < M) & (ka[None, :] < K), other=0.0)
            tb = tl.load(b + ka[:, None] * N + offs_n[None, :],
                         mask=(ka[:, None] < K) & (offs_n[None, :] < N), other=0.0)
            acc = tl.dot(ta, tb, acc, input_precision=PRECISION)
        mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        tl.store(c + offs_m[:, None] * N + offs_n[None, :], acc.to(c.dtype.element_ty), mask=mask)

    return matmul


def run(dtype: str, sizes: list[tuple[int, int, int]]) -> dict[str, float]:
    import torch
    import triton

    from kgen.sandbox.timing import time_callable

    kernel = _kernel()
    tdtype = getattr(torch, dtype)
    out = {}
    for m, n, k in sizes:
        a = torch.rand(m, k, device="cuda", dtype=tdtype) * 2 - 1
        b = torch.rand(k, n, device="cuda", dtype=tdtype) * 2 - 1
        c = torch.empty(m, n, device="cuda", dtype=tdtype)

        def launch(a=a, b=b, c=c, m=m, n=n, k=k):
            grid = lambda meta: (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)  # noqa: E731
            # float32 stays IEEE (no TF32), like the cuBLAS baseline.
            kernel[grid](a, b, c, m, n, k, PRECISION="ieee")

        launch()  # autotune outside the timed region
        ref = a.double() @ b.double()
        err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
        if err > 5e-2:
            raise SystemExit(f"triton matmul is wrong at {m}x{n}x{k}: max rel error {err:.3g}")
        out[f"{m}x{n}x{k}"] = time_callable(launch)
    return out


if __name__ == "__main__":
    dims = [int(x) for x in sys.argv[2:]]
    triples = [(dims[i], dims[i + 1], dims[i + 2]) for i in range(0, len(dims), 3)]
    print(json.dumps(run(sys.argv[1], triples)))
