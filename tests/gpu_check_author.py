"""Standalone GPU check of the builtin author's gemm templates and the reference kernels.

Not collected by pytest (no test_ prefix). Run from the repo root on a GPU machine:
    PYTHONPATH=. python3 tests/gpu_check_author.py [sm_90]
For each kernel: compile with nvcc for the arch, load the cubin with cupy.RawModule, launch per
its `// kgen:` contract, check against torch (float64 for float32, float32 for float16/bfloat16)
at odd and tiny sizes with outputs pre-filled with NaN, then time 4096^3 (and 8192^3 for the mma
template) with CUDA events, L2 flushed before each launch (warm-up, median of 20), next to
torch.matmul (cuBLAS, TF32 off). The float16 rows put the new mma default beside the old one
(128x128x64 2x4 warps 3 stages, "old default") and each of the new options on its own.
Prints a table last.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from kgen.arch import parse_arch
from kgen.author.mma import MmaParams
from kgen.author.simt import SimtParams
from kgen.author.space import OLD_MMA_DEFAULT, default, render
from kgen.candidate import parse_contract
from kgen.nvcc import compile_source
from kgen.spec import load_op

# Odd, tiny and ragged sizes; (2200, 1024, 520) has interior blocks on the unguarded cp.async path,
# a partial last k-tile, edge block rows, and 18 block rows (groups of 8, 8 and 2 in the raster).
SIZES = [(1, 1, 1), (7, 3, 5), (127, 129, 65), (64, 256, 128), (257, 511, 383), (1000, 1000, 1000),
         (2200, 1024, 520)]
BENCHES = (4096, 8192)
OLD = OLD_MMA_DEFAULT  # the default before group/pipe (296 TFLOP/s fp16 at 4096^3 on the H200)
# The old default beside each change on its own, then the new default's neighbours.
MMA_SWEEP = [OLD, replace(OLD, group=8), replace(OLD, pipe=2), replace(OLD, group=8, pipe=2),
             MmaParams(128, 256, 64, 2, 4, 3, 1, 1), MmaParams(128, 256, 64, 2, 4, 4, 1, 2),
             MmaParams(128, 256, 64, 2, 4, 3, 8, 2), MmaParams(128, 256, 32, 2, 4, 4, 8, 2),
             MmaParams(256, 128, 64, 4, 2, 4, 8, 2), MmaParams(128, 128, 32, 2, 2, 4, 8, 2),
             MmaParams(128, 128, 64, 2, 2, 3, 8, 2), MmaParams(128, 256, 64, 2, 4, 4, 16, 2)]
EXTRA = {
    "float32": [SimtParams(128, 128, 8, 8, 8, 1, 4), SimtParams(128, 128, 16, 8, 8, 1, 4),
                SimtParams(64, 128, 8, 8, 8, 2, 4), SimtParams(128, 128, 8, 8, 8, 2, 1),
                SimtParams(128, 256, 8, 8, 16, 2, 4), SimtParams(64, 64, 16, 4, 4, 2, 4)],
    "float16": [*MMA_SWEEP, SimtParams(128, 128, 8, 8, 8, 2, 1)],
    "bfloat16": [OLD, MmaParams(128, 256, 64, 2, 4, 3, 8, 2), SimtParams(64, 64, 16, 4, 4, 2, 1)],
}


def main() -> int:
    import torch

    arch = parse_arch(sys.argv[1] if len(sys.argv) > 1 else "sm_90")
    spec = load_op("gemm")
    torch.backends.cuda.matmul.allow_tf32 = False
    rows, failures = [], 0
    for dtype in ("float32", "float16", "bfloat16"):
        first = default(arch, dtype)
        kernels = [(label(p, first), render(p, dtype), p.template == "mma")
                   for p in dict.fromkeys([first, *EXTRA[dtype]])]
        for path in spec.reference_kernels():
            text = path.read_text()
            if f"dtype={dtype}" in text.splitlines()[0]:
                kernels.append((f"reference {path.name}", text, False))
        sizes = BENCHES if dtype != "float32" else BENCHES[:1]
        base = {n: baseline_ms(dtype, n) for n in sizes}
        rows.append((dtype, "torch.matmul (cuBLAS)", "-", base))
        for name, source, big in kernels:
            status, ms = check_one(source, arch, spec, dtype, sizes if big else BENCHES[:1])
            failures += status != "ok"
            rows.append((dtype, name, status, ms))
            print(f"{dtype:9} {name:72} {status:30} " + " ".join(
                f"{n}: {t:8.3f} ms" for n, t in ms.items()), flush=True)
    print_table(rows)
    print(f"\n{failures} kernel(s) failed")
    return 1 if failures else 0


def label(p, first) -> str:
    """The configuration, marked when it is the default now or the default before group/pipe."""
    mark = " (default)" if p == first else " (old default)" if p == OLD else ""
    return p.choices.removeprefix("template=") + mark


def print_table(rows) -> None:
    """ms and TFLOP/s per benchmark size, and the ratio to cuBLAS at the same size."""
    head = "".join(f" {f'ms@{n}':>9} {'TFLOP/s':>7} {'/cuBLAS':>7}" for n in BENCHES)
    print(f"\n{'dtype':9} {'kernel':72} {'check':10}{head}")
    bases = {r[0]: r[3] for r in rows if r[2] == "-"}
    for dtype, name, status, ms in rows:
        cells = ""
        for n in BENCHES:
            t, base = ms.get(n), bases[dtype].get(n)
            cells += (f" {t:9.3f} {tflops(t, n):7.1f} {base / t:6.2f}x" if t and base
                      else f" {'':9} {'':7} {'':7}")
        print(f"{dtype:9} {name[:72]:72} {status[:10]:10}{cells}")


def tflops(ms: float, n: int) -> float:
    return 2 * n**3 / (ms * 1e-3) / 1e12


def inputs(m: int, n: int, k: int, dtype: str):
    import torch

    dt = getattr(torch, dtype)
    a = (torch.rand(m, k, device="cuda") * 2 - 1).to(dt)
    b = (torch.rand(k, n, device="cuda") * 2 - 1).to(dt)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=dt)
    return a, b, c


def baseline_ms(dtype: str, n: int) -> float:
    a, b, _ = inputs(n, n, n, dtype)
    return time_ms(lambda: a @ b)


_FLUSH = []


def time_ms(fn, reps: int = 20) -> float:
    """Median of reps launches, each after writing 256 MiB so L2 (60 MB on an H200) starts cold."""
    import torch

    if not _FLUSH:
        _FLUSH.append(torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda"))
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        _FLUSH[0].zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def check_one(source: str, arch, spec, dtype: str,
              benches: tuple[int, ...] = BENCHES[:1]) -> tuple[str, dict[int, float]]:
    """('ok' | what went wrong, {n: median ms at n^3}); checked at odd sizes, then after timing."""
    import cupy
    import numpy as np
    import torch

    result = compile_source(source, arch)
    if not result.ok:
        return "compile error: " + result.summary.splitlines()[0][:60], {}
    contract, problems = parse_contract(source, spec)
    if contract is None:
        return "contract: " + problems[0].message[:60], {}
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
                        f"want {ref[idx[0], idx[1]].item():.4g}"), {}
        timed = {}
        for n in benches:
            a, b, c = inputs(n, n, n, dtype)
            timed[n] = time_ms(lambda a=a, b=b, c=c, n=n: run(a, b, c, n, n, n))
            ref = (a.float() @ b.float())
            if not torch.allclose(c.float(), ref, atol=tol.atol * 8, rtol=tol.rtol * 4):
                return f"WRONG after timing at {n}^3", timed
    return "ok", timed


if __name__ == "__main__":
    sys.exit(main())
