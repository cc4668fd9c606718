"""Timing inside the worker: one timing loop (time_interleaved) for candidates, baselines and the
measured peaks; candidate and baseline interleaved, L2 flushed before each launch.

napkin math: the flush buffer is 4x the L2 (60 MB on an H200 -> 240 MB memset, ~0.1 ms), so no
input line survives in L2 from the previous launch; both sides pay the same cold-cache start.

Events measure GPU time between two points of the stream, so the GPU must not run dry between the
start event and the launch: if the CPU is still inside Python (building a launch's arguments, a
torch.compile guard) when the GPU reaches the start event, the idle gap is counted as the kernel's
time, and a 0.07 ms row reduction has no room for tens of microseconds of it. So each timed launch
is queued behind a GPU spin (HOLD_S) that outlasts the CPU's enqueueing; the spin lies outside the
events. (On the H200 the flush alone kept the GPU busy enough in an A/B of three launchers; the
spin makes that hold whatever the CPU does.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from kgen.dtypes import DTYPES
from kgen.sandbox import reference, roofline
from kgen.sandbox.launch import Runner, allocate, poison, torch_dtype, wait
from kgen.sandbox.rejected import Rejected
from kgen.sandbox.validate import (
    check_after_run,
    compute_reference,
    label,
    load_inputs,
    make_inputs,
    model_own_when_needed,
)
from kgen.spec import Entry, OpSpec
from kgen.verdict import Timing

MIN_REPS = 5
MAX_REPS = 200
HOLD_S = 300e-6  # GPU spin before each timed launch; far above the CPU cost of queueing one


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


Step = tuple[Callable[[], Any], Callable[[], Any] | None]  # (what to time, what to do before)


def gpu_hold(seconds: float = HOLD_S) -> Callable[[], None]:
    """A function that queues a GPU spin of about `seconds` on the current stream (nothing where
    torch has no spin kernel)."""
    import torch

    spin = getattr(torch.cuda, "_sleep", None)
    if spin is None or seconds <= 0:
        return lambda: None
    import cupy

    cycles = int(float(cupy.cuda.Device().attributes.get("ClockRate", 2_000_000)) * 1e3 * seconds)
    return lambda: spin(cycles)


def time_interleaved(steps: Sequence[Step], *, flush: Any = None, budget_s: float = 2.0,
                     min_reps: int = MIN_REPS, max_reps: int = MAX_REPS, warmup: int = 2,
                     settle: Callable[[], None] | None = None,
                     hold: Callable[[], None] | None = None) -> list[list[float]]:
    """The one timing loop: each round times every step in turn with CUDA events (its `before`,
    the L2 flush and a GPU spin outside the timed region), until the budget is spent; ms per step.

    `settle` runs after each round (the worker's watchdog wait, which turns a hang into a verdict).
    `hold` queues the spin (default gpu_hold(): see the module's docstring).
    """
    import torch

    hold = gpu_hold() if hold is None else hold

    for _ in range(warmup):  # module load, clocks, cuBLAS heuristics
        for fn, before in steps:
            if before is not None:
                before()
            fn()
    (settle or torch.cuda.synchronize)()
    samples: list[list[float]] = [[] for _ in steps]
    deadline = time.monotonic() + budget_s
    while len(samples[0]) < max_reps and (len(samples[0]) < min_reps
                                          or time.monotonic() < deadline):
        events = []
        for fn, before in steps:
            hold()
            if flush is not None:
                flush.zero_()
            if before is not None:
                before()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            events.append((start, end))
        (settle or torch.cuda.synchronize)()
        for k, (start, end) in enumerate(events):
            samples[k].append(start.elapsed_time(end))
    return samples


def measure_bandwidth() -> float:
    """Bytes/s of a 1 GiB device-to-device copy (read + write), best of 5."""
    import torch

    src = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    (ms,) = time_interleaved([(lambda: dst.copy_(src), None)], budget_s=0, min_reps=5,
                             warmup=1)
    return 2 * src.numel() / (min(ms) * 1e-3)


def measure_matmul_rate(dtype: str, n: int = 4096) -> float | None:
    """FLOP/s of torch.matmul (cuBLAS) on n^3 random data in the dtype, best of 5: the measured
    compute ceiling for the roofline fraction; None if it cannot be measured (it is only shown)."""
    import torch

    try:
        kind = getattr(torch, DTYPES[dtype].torch)
        a = (torch.rand(n, n, device="cuda") * 2 - 1).to(kind)
        b = (torch.rand(n, n, device="cuda") * 2 - 1).to(kind)
        (ms,) = time_interleaved([(lambda: torch.matmul(a, b), None)], budget_s=0, min_reps=5,
                                 warmup=1)
        return 2 * n**3 / (min(ms) * 1e-3)
    except Exception:  # informational: never fail a candidate because the ceiling was not measured
        return None


def time_callable(fn: Any, budget_s: float = 2.0) -> float:
    """Median ms of fn, timed as candidates are (events, L2 flushed before each); for make bench."""
    (ms,) = time_interleaved([(fn, None)], flush=flush_buffer(), budget_s=budget_s)
    return percentile(ms, 50)


def baseline_name(spec: OpSpec) -> str:
    return reference.baseline_label(spec)


class Stopwatch:
    """Wall seconds per named phase of a check, added up over its sizes: where a warm worker's
    time goes beyond the timing budget (the Evaluation's extra `phases_s`)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, phase: str) -> None:
        """The time since the last lap (or the start) belongs to `phase`."""
        now = time.monotonic()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + now - self._last
        self._last = now

    def rounded(self) -> dict[str, float]:
        return {phase: round(s, 3) for phase, s in self.seconds.items()}


def measure(runner: Runner, spec: OpSpec, dtype: str, sizes: Entry, seed: int,
            budget_s: float, timeout_s: float, peaks: roofline.Peaks,
            compile_baseline: bool, watch: Stopwatch) -> tuple[Timing, str]:
    """Validate at this size, time the candidate, the baseline (and torch.compile of it, when
    asked) interleaved over the budget, check the output again after; (timing, a note on
    torch.compile when it could not be timed). `watch` gets the phases' laps."""
    where = f"{label(dtype, sizes)} (benchmark size)"
    inputs = make_inputs(spec, sizes, dtype, seed, device="cuda")
    watch.lap("bench inputs drawn")
    buffers = allocate(spec, sizes, dtype)
    load_inputs(buffers, inputs)
    calls = runner.prepare(buffers, sizes)
    graph = runner.graph(calls)
    poison(buffers)
    runner.run(calls, graph)
    wait(f"the kernel at {label(dtype, sizes)}", timeout_s)
    watch.lap("bench buffers and first run")
    refs = compute_reference(spec, dtype, inputs, sizes)
    watch.lap("bench reference")
    model_own = model_own_when_needed(spec, dtype, inputs, sizes)
    check_after_run(spec, dtype, sizes, buffers, inputs, refs, where, model_own)
    watch.lap("bench checks")
    own = {k: v.clone() for k, v in inputs.items()}  # the baseline reads its own copies
    eager, make_compiled = reference.baseline(spec, own, sizes, torch_dtype(dtype))
    steps: list[Step] = [(lambda: runner.run(calls, graph), lambda: poison(buffers)),
                         (eager, None)]
    compiled, note = _compiled(make_compiled) if compile_baseline else (None, "")
    if compiled is not None:
        steps.append((compiled, None))
    watch.lap("bench baseline set-up")
    samples = time_interleaved(steps, flush=flush_buffer(), budget_s=budget_s,
                               settle=lambda: wait(f"a timed launch at {where}", timeout_s))
    watch.lap("bench timed")
    # The last timed launch must still be right: a kernel that changes when called repeatedly
    # (cached results, first-call-only writes) fails here.
    check_after_run(spec, dtype, sizes, buffers, inputs, refs,
                    f"{where}, after {len(samples[0])} timed launches", model_own)
    watch.lap("bench checks")
    compiled_ms = percentile(samples[2], 50) if compiled is not None else None
    return _timing(spec, dtype, sizes, samples[0], samples[1], peaks, compiled_ms), note


def _compiled(make: Callable[[], Callable[[], Any]]) -> tuple[Callable[[], Any] | None, str]:
    """torch.compile of the baseline, compiled by one call now; (None, why) where it fails."""
    import torch

    try:
        compiled = make()
        compiled()
        torch.cuda.synchronize()
        return compiled, ""
    except Exception as exc:  # torch.compile fails on some ops and setups: report, never fail
        return None, f"torch.compile of the baseline failed: {type(exc).__name__}: {exc}"[:300]


def _timing(spec: OpSpec, dtype: str, sizes: Entry, cand_ms: list[float],
            base_ms: list[float], peaks: roofline.Peaks,
            compiled_ms: float | None = None) -> Timing:
    ms = percentile(cand_ms, 50)
    flops, nbytes = spec.flop_count(sizes), spec.byte_count(sizes, dtype)
    suspicious = roofline.too_fast(ms, flops, nbytes, peaks, dtype)
    if suspicious:
        raise Rejected("suspicious", f"{label(dtype, sizes)}: {suspicious}")
    return Timing(spec.sizes_of(sizes), ms, percentile(cand_ms, 20), percentile(cand_ms, 80),
                  baseline_name(spec), percentile(base_ms, 50),
                  flops / (ms * 1e-3) / 1e12 if flops else None,
                  nbytes / (ms * 1e-3) / 1e9,
                  roofline.fraction(ms, flops, nbytes, peaks, dtype),
                  roofline.bound_by(flops, nbytes, peaks, dtype), compiled_ms,
                  {k: v for k, v in sizes.items() if k not in spec.sizes})
