"""Standalone GPU check of the builtin author's gemm templates and the reference kernels.

Not collected by pytest (no test_ prefix). Run from the repo root on a GPU machine:
    PYTHONPATH=. python3 tests/gpu_check_author.py [sm_90]
For each kernel: compile with nvcc for the arch, load the cubin with cupy.RawModule, launch per
its `// kgen:` contract, check against torch (float64 for float32, float32 for float16/bfloat16)
at odd and tiny sizes with outputs pre-filled with NaN, then time 4096^3 with CUDA events
(warm-up, median of 20) next to torch.matmul (cuBLAS, TF32 off). Prints a table last.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

from kgen.arch import parse_arch
from kgen.author.mma import MmaParams
from kgen.author.simt import SimtParams
from kgen.author.space import default, render
from kgen.candidate import parse_contract
from kgen.nvcc import compile_source
from kgen.spec import load_op

SIZES = [(1, 1, 1), (7, 3, 5), (127, 129, 65), (64, 256, 128), (257, 511, 383), (1000, 1000, 1000)]
BENCH = 4096
EXTRA = {
    "float32": [SimtParams(128, 128, 8, 8, 8, 1, 4), SimtParams(128, 128, 16, 8, 8, 1, 4),
                SimtParams(64, 128, 8, 8, 8, 2, 4), SimtParams(128, 64, 8, 8, 8, 2, 4),
                SimtParams(128, 128, 8, 8, 8, 2, 1), SimtParams(128, 128, 8, 8, 16, 2, 4),
                SimtParams(128, 256, 8, 8, 16, 2, 4), SimtParams(64, 64, 16, 4, 4, 2, 4),
                SimtParams(128, 128, 16, 8, 8, 2, 4)],
    "float16": [MmaParams(128, 256, 32, 2, 4, 3), MmaParams(128, 256, 32, 2, 4, 4),
                MmaParams(256, 128, 32, 4, 2, 3), MmaParams(128, 128, 64, 2, 4, 3),
                MmaParams(128, 128, 32, 2, 2, 4), MmaParams(64, 64, 32, 2, 2, 4),
                MmaParams(64, 128, 32, 2, 2, 3), MmaParams(128, 256, 64, 2, 4, 3),
                MmaParams(256, 128, 32, 4, 2, 4), MmaParams(128, 128, 32, 2, 4, 4),
                MmaParams(128, 256, 32, 4, 2, 3), SimtParams(128, 128, 8, 8, 8, 2, 1)],
    "bfloat16": [MmaParams(128, 256, 32, 2, 4, 3), SimtParams(64, 64, 16, 4, 4, 2, 1)],
}


def main() -> int:
    import torch

    arch = parse_arch(sys.argv[1] if len(sys.argv) > 1 else "sm_90")
    spec = load_op("gemm")
    torch.backends.cuda.matmul.allow_tf32 = False
    rows, failures = [], 0
    for dtype in ("float32", "float16", "bfloat16"):
        first = default(arch, dtype)
        kernels = [(p.choices + (" (default)" if p == first else ""), render(p, dtype))
                   for p in [first, *EXTRA[dtype]]]
        for path in spec.reference_kernels():
            text = path.read_text()
            if f"dtype={dtype}" in text.splitlines()[0]:
                kernels.append((f"reference {path.name}", text))
        base = baseline_ms(dtype)
        rows.append((dtype, "torch.matmul (cuBLAS)", "-", base, tflops(base)))
        for label, source in kernels:
            status, ms = check_one(source, arch, spec, dtype)
            failures += status != "ok"
            rows.append((dtype, label, status, ms, tflops(ms) if ms else None))
            print(f"{dtype:9} {label:60} {status:30} {ms or float('nan'):8.3f} ms", flush=True)
    print(f"\n{'dtype':9} {'kernel':60} {'check':10} {'ms':>8} {'TFLOP/s':>8} {'vs cuBLAS':>9}")
    bases = {r[0]: r[3] for r in rows if r[2] == "-"}
    for dtype, label, status, ms, tf in rows:
        ratio = f"{bases[dtype] / ms:8.2f}x" if ms else ""
        print(f"{dtype:9} {label[:60]:60} {status[:10]:10} {ms or float('nan'):8.3f} "
              f"{tf or float('nan'):8.1f} {ratio:>9}")
    print(f"\n{failures} kernel(s) failed")
    return 1 if failures else 0


def tflops(ms: float | None) -> float | None:
    return 2 * BENCH**3 / (ms * 1e-3) / 1e12 if ms else None


def inputs(m: int, n: int, k: int, dtype: str):
    import torch

    dt = getattr(torch, dtype)
    a = (torch.rand(m, k, device="cuda") * 2 - 1).to(dt)
    b = (torch.rand(k, n, device="cuda") * 2 - 1).to(dt)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=dt)
    return a, b, c


def baseline_ms(dtype: str) -> float:
    a, b, _ = inputs(BENCH, BENCH, BENCH, dtype)
    return time_ms(lambda: a @ b)


def time_ms(fn, reps: int = 20) -> float:
    import torch

    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def check_one(source: str, arch, spec, dtype: str) -> tuple[str, float | None]:
    """('ok' | what went wrong, median ms at 4096^3 or None)."""
    import cupy
    import numpy as np
    import torch

    result = compile_source(source, arch)
    if not result.ok:
        return "compile error: " + result.summary.splitlines()[0][:60], None
    contract, problems = parse_contract(source, spec)
    if contract is None:
        return "contract: " + problems[0].message[:60], None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(result.cubin)
        module = cupy.RawModule(path=str(path))
        launch = contract.launches[0]
        fn = module.get_function(launch.kernel)

        def run(a, b, c, m, n, k):
            sizes = {"M": m, "N": n, "K": k}
            grid, block, smem = launch.dims(sizes)
            if smem > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = smem
            ptrs = {"A": a, "B": b, "C": c}
            args = tuple(np.uint64(ptrs[x].data_ptr()) if x in ptrs else np.int32(sizes[x])
                         for x in launch.args)
            fn(grid, block, args, shared_mem=smem)

        tol = spec.dtypes[dtype]
        for m, n, k in SIZES:
            a, b, c = inputs(m, n, k, dtype)
            run(a, b, c, m, n, k)
            torch.cuda.synchronize()
            ref_dt = getattr(torch, tol.reference)
            ref = a.to(ref_dt) @ b.to(ref_dt)
            out = c.to(ref_dt)
            bad = ~((out - ref).abs() <= tol.atol + tol.rtol * ref.abs())
            if bad.any():
                idx = bad.nonzero()[0].tolist()
                return (f"WRONG {m}x{n}x{k}: {int(bad.sum())} off, first at {idx} "
                        f"got {out[idx[0], idx[1]].item():.4g} "
                        f"want {ref[idx[0], idx[1]].item():.4g}"), None
        a, b, c = inputs(BENCH, BENCH, BENCH, dtype)
        ms = time_ms(lambda: run(a, b, c, BENCH, BENCH, BENCH))
        ref = (a.float() @ b.float())
        if not torch.allclose(c.float(), ref, atol=tol.atol * 8, rtol=tol.rtol * 4):
            return "WRONG after timing at 4096^3", ms
    return "ok", ms


if __name__ == "__main__":
    sys.exit(main())
