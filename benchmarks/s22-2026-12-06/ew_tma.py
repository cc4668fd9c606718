"""Twenty-second session: the copy and GELU (tanh form, float32) moved three ways, against torch's
copy and torch eager GELU, at the elementwise bench size (2^28 elements, 1 GiB each way) and a
quarter of it. Every kernel is validated first (GELU against float64 torch); then all are timed
interleaved (one launch of each per pass, CUDA events, median and p20-p80 over the passes), so a
drift of the card's clocks touches every row alike.

    python3 benchmarks/s22-2026-12-06/ew_tma.py [--passes 40] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path

import cupy as cp
import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
LDG = ["ldg_copy_128x2", "ldg_gelu_128x2", "ldg_copy_128x4", "ldg_gelu_128x4", "ldg_gelu_256x4",
       "ldg_gelu_128x8", "ldg_gelu_128x4h",
       "ldg_gelu_128x4p", "ldg_copy_128x4p"]
TMA = {"tma_copy_16k_8": (256, 16384, 8), "tma_gelu_16k_8": (256, 16384, 8),
       "tma_copy_32k_4": (256, 32768, 4), "tma_gelu_32k_4": (256, 32768, 4),
       "tma_gelu_32k_6": (512, 32768, 6), "tma_gelu_8k_12": (256, 8192, 12),
       "tma_gelu_16k_4": (256, 16384, 4)}


def build() -> cp.RawModule:
    cubin = Path(tempfile.mkdtemp()) / "ew.cubin"
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-O3", "-o", str(cubin),
                    str(HERE / "ew_tma.cu")], check=True)
    return cp.RawModule(path=str(cubin))


def time_size(mod: cp.RawModule, sms: int, n: int, passes: int) -> list[dict]:
    rows = []
    x = torch.randn(n, device="cuda") * 3
    y = torch.empty_like(x)
    want = F.gelu(x.double(), approximate="tanh").float()
    X, Y = cp.asarray(x), cp.asarray(y)
    runs = {"torch copy": (lambda: y.copy_(x), None),
            "torch gelu": (lambda: F.gelu(x, approximate="tanh"), None)}
    for name in LDG:
        f = mod.get_function(name)
        threads = int(name.split("_")[2].split("x")[0])
        ept = int(name.split("x")[1].rstrip("hp"))
        n4 = n // 4
        for gs in (0, 4):
            grid = -(-n4 // (threads * ept)) if gs == 0 else sms * gs * (2048 // threads) // 4
            runs[f"{name} {'once' if gs == 0 else f'stride {grid}'}"] = (
                lambda f=f, grid=grid, threads=threads, gs=gs, n4=n4: f(
                    (grid,), (threads,), (X, Y, cp.int64(n4), cp.int32(gs))), name)
    for name, (threads, chunk, stages) in TMA.items():
        f = mod.get_function(name)
        smem = chunk * stages
        f.max_dynamic_shared_size_bytes = smem
        per_sm = max(1, (227 * 1024) // (smem + 1024))
        runs[f"{name} x{per_sm}"] = (
            lambda f=f, threads=threads, smem=smem, per_sm=per_sm, chunk=chunk: f(
                (sms * per_sm,), (threads,), (X, Y, cp.int64(n * 4 // chunk)),
                shared_mem=smem), name)
    for label, (fn, _kname) in runs.items():  # validate each, output poisoned first
        y.fill_(float("nan"))
        out = fn()
        torch.cuda.synchronize()
        got = out if label == "torch gelu" else y
        ref = x if "copy" in label else want
        err = (got - ref).abs().max().item()
        tol = 0 if "copy" in label else 1e-5 + 1e-5 * ref.abs().max().item()
        assert err <= tol, f"{label}: max error {err} at n={n}"
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(3):
        for fn, _k in runs.values():
            fn()
    for _ in range(passes):
        for label, (fn, _k) in runs.items():
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times[label].append(a.elapsed_time(b))
    base = statistics.median(times["torch gelu"])
    print(f"\nn = {n} float32 ({n * 4 / 2**30:.2f} GiB each way), {passes} passes")
    for label, t in times.items():
        q = statistics.quantiles(t, n=10)
        med = statistics.median(t)
        bw = 2 * n * 4 / (med * 1e-3) / 1e12
        print(f"{label:32s} {med:8.4f} ms  p20-p80 {q[1]:.4f}-{q[7]:.4f}  {bw:5.2f} TB/s  "
              f"eager/this {base / med:.4f}")
        rows.append({"n": n, "kernel": label, "median_ms": med, "p20": q[1], "p80": q[7],
                     "tbps": bw, "samples": t})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passes", type=int, default=40)
    ap.add_argument("--json")
    args = ap.parse_args()
    mod = build()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = [r for n in (2**28, 2**26) for r in time_size(mod, sms, n, args.passes)]
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
