"""Timing inside the worker: candidate and baseline interleaved, L2 flushed before each launch.

napkin math: the flush buffer is 4x the L2 (60 MB on an H200 -> 240 MB memset, ~0.1 ms), so no
input line survives in L2 from the previous launch; both sides pay the same cold-cache start.
"""

from __future__ import annotations

import time
from typing import Any

from kgen.spec import OpSpec
from sandbox import reference, roofline
from sandbox.job import Rejected
from sandbox.launch import Runner, allocate, poison, wait
from sandbox.validate import check_after_run, compute_reference, label, load_inputs, make_inputs
from sandbox.verdict import Timing

MIN_REPS = 5
MAX_REPS = 200


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile of a non-empty list (q in 0..100)."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def flush_buffer() -> Any:
    import cupy
    import torch

    l2 = int(cupy.cuda.Device().attributes.get("L2CacheSize", 64 * 2**20))
    return torch.empty(max(4 * l2, 64 * 2**20), dtype=torch.uint8, device="cuda")


def measure_bandwidth() -> float:
    """Bytes/s of a 1 GiB device-to-device copy (read + write), best of 5."""
    import torch

    src = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end))
    return 2 * src.numel() / (best * 1e-3)


def measure_matmul_rate(dtype: str, n: int = 4096) -> float | None:
    """FLOP/s of torch.matmul (cuBLAS) on n^3 random data in the dtype, best of 5: the measured
    compute ceiling for the roofline fraction; None if it cannot be measured (it is only shown)."""
    import torch

    from sandbox.launch import torch_dtype

    try:
        a = (torch.rand(n, n, device="cuda") * 2 - 1).to(torch_dtype(dtype))
        b = (torch.rand(n, n, device="cuda") * 2 - 1).to(torch_dtype(dtype))
        torch.matmul(a, b)  # warm-up: cuBLAS heuristics and handles
        best = float("inf")
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.matmul(a, b)
            end.record()
            end.synchronize()
            best = min(best, start.elapsed_time(end))
        del a, b
        return 2 * n**3 / (best * 1e-3)
    except Exception:  # informational: never fail a candidate because the ceiling was not measured
        return None


def time_callable(fn: Any, budget_s: float = 2.0) -> float:
    """Median ms of fn, timed as candidates are (events, L2 flushed before each); for make bench."""
    import torch

    flush = flush_buffer()
    fn()
    torch.cuda.synchronize()
    times: list[float] = []
    deadline = time.monotonic() + budget_s
    while len(times) < MAX_REPS and (len(times) < MIN_REPS or time.monotonic() < deadline):
        start, end = _timed(fn, flush, lambda: None)
        end.synchronize()
        times.append(start.elapsed_time(end))
    return percentile(times, 50)


def _timed(fn: Any, flush: Any, before: Any) -> tuple[Any, Any]:
    import torch

    flush.zero_()
    before()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    return start, end


def baseline_name(spec: OpSpec) -> str:
    return "cuBLAS (torch.matmul)" if spec.name == "gemm" else f"torch ({spec.reference})"


def measure(runner: Runner, spec: OpSpec, dtype: str, sizes: dict[str, int], seed: int,
            budget_s: float, timeout_s: float, peaks: roofline.Peaks) -> Timing:
    """Validate at this size, time both sides over the budget, check the output again after."""
    where = f"{label(dtype, sizes)} (benchmark size)"
    inputs = make_inputs(spec, sizes, dtype, seed)
    buffers = allocate(spec, sizes, dtype)
    load_inputs(buffers, inputs)
    calls = runner.prepare(buffers, sizes)
    graph = runner.graph(calls)
    poison(buffers)
    runner.run(calls, graph)
    wait(f"the kernel at {label(dtype, sizes)}", timeout_s)
    refs = compute_reference(spec, dtype, inputs, sizes)
    check_after_run(spec, dtype, sizes, buffers, inputs, refs, where)
    own = {k: v.to("cuda") for k, v in inputs.items()}  # the baseline reads its own copies
    flush = flush_buffer()
    cand_ms, base_ms = _interleave(lambda: runner.run(calls, graph),
                                   lambda: reference.evaluate(spec.reference, own),
                                   lambda: poison(buffers), flush, budget_s, timeout_s, where)
    # The last timed launch must still be right: a kernel that changes when called repeatedly
    # (cached results, first-call-only writes) fails here.
    check_after_run(spec, dtype, sizes, buffers, inputs, refs,
                    f"{where}, after {len(cand_ms)} timed launches")
    return _timing(spec, dtype, sizes, cand_ms, base_ms, peaks)


def _interleave(cand: Any, base: Any, before: Any, flush: Any, budget_s: float,
                timeout_s: float, where: str) -> tuple[list[float], list[float]]:
    for _ in range(2):  # warm-up: module load, clocks, cuBLAS heuristics
        before()
        cand()
        base()
    wait(f"warm-up at {where}", timeout_s)
    cand_ms: list[float] = []
    base_ms: list[float] = []
    deadline = time.monotonic() + budget_s
    while len(cand_ms) < MAX_REPS and (len(cand_ms) < MIN_REPS or time.monotonic() < deadline):
        c = _timed(cand, flush, before)
        b = _timed(base, flush, lambda: None)
        wait(f"a timed launch at {where}", timeout_s)
        cand_ms.append(c[0].elapsed_time(c[1]))
        base_ms.append(b[0].elapsed_time(b[1]))
    return cand_ms, base_ms


def _timing(spec: OpSpec, dtype: str, sizes: dict[str, int], cand_ms: list[float],
            base_ms: list[float], peaks: roofline.Peaks) -> Timing:
    ms = percentile(cand_ms, 50)
    flops, nbytes = spec.flop_count(sizes), spec.byte_count(sizes, dtype)
    suspicious = roofline.too_fast(ms, flops, nbytes, peaks, dtype)
    if suspicious:
        raise Rejected("suspicious", f"{label(dtype, sizes)}: {suspicious}")
    return Timing(dict(sizes), ms, percentile(cand_ms, 20), percentile(cand_ms, 80),
                  baseline_name(spec), percentile(base_ms, 50),
                  flops / (ms * 1e-3) / 1e12 if flops else None,
                  nbytes / (ms * 1e-3) / 1e9,
                  roofline.fraction(ms, flops, nbytes, peaks, dtype))
