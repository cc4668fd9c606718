"""On a GPU: one warm worker judges candidate after candidate, through a crash (illegal address)
and a hung kernel in the middle: each gets its verdict, its worker is replaced, and the next
candidate is still judged correctly; a warm candidate's check is served by the same worker."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

from kgen.arch import local_gpu
from kgen.compile import compile_source
from kgen.gpu.evaluate import EvalOptions, evaluate
from kgen.gpu.pool import WorkerPool
from kgen.loop.candidate import parse_contract
from kgen.ops import load_op

pytestmark = pytest.mark.gpu

CHEATS = Path(__file__).parent / "data" / "cheats"
SPEC = load_op("gemm")
FAST = EvalOptions(bench_sizes=(), kernel_timeout_s=3.0, timeout_s=120.0)
SEQUENCE = ["correct_tiled.cu", "correct_two_launch.cu", "illegal_address.cu",
            "correct_tiled.cu", "edge_bug.cu", "endless_loop.cu", "correct_f16_naive.cu"]


def judge(pool: WorkerPool, name: str, options: EvalOptions = FAST):
    arch = local_gpu()[1]
    source = (CHEATS / name).read_text()
    contract, problems = parse_contract(source, SPEC)
    assert contract is not None, problems
    compiled = compile_source(source, arch)
    assert compiled.ok, compiled.summary
    result = evaluate(compiled, contract, SPEC, arch, options=options, workers=pool)
    assert result is not None
    return result


def expected(name: str) -> str:
    return re.search(r"^// expect-verdict: (\w+)", (CHEATS / name).read_text(), re.M).group(1)


def test_a_warm_worker_serves_candidates_through_a_crash_and_a_hang():
    with WorkerPool.local() as pool:
        results = [judge(pool, name) for name in SEQUENCE]
        for name, result in zip(SEQUENCE, results, strict=True):
            print(f"{name}: {result.verdict} ({result.extra.get('wall_s')} s, worker "
                  f"{result.extra.get('worker')}, warm {result.extra.get('warm')})")
        assert [r.verdict for r in results] == [expected(n) for n in SEQUENCE]
        first, second, crash, after, wrong, hung, last = results
        assert second.extra["warm"] is True  # the same worker served both
        assert "GPU healthy" in crash.extra["canary"] and "GPU healthy" in hung.extra["canary"]
        assert after.extra["warm"] is False and wrong.extra["warm"] is True  # replaced once
        assert "did not finish within 3 s" in hung.message
        assert last.passed and last.device == first.device
        (stats,) = pool.busy()
        assert stats["restarts"] == 2 and stats["candidates"] == len(SEQUENCE)


def test_warm_checks_are_served_by_one_worker_and_spend_the_timing_budget():
    """How much a warm check costs beyond its timing is a benchmark figure (`beyond timing s` in
    benchmarks/throughput.py, target < 1.5 s), not a bound here: under the eight test workers of
    the GPU suite it ran 2.7 s on an H100 (2026-12-05); the benchmark, alone on an H200, measured
    1.0-1.1 s (2026-12-03). Here: every check after the first is served warm by the same worker,
    passes, and spends the timing budget."""
    quick = EvalOptions.quick(SPEC, bench_sizes=SPEC.bench_sizes[:1])  # one size, one budget
    with WorkerPool.local() as pool:
        judge(pool, "correct_tiled.cu", quick)  # start-up and the peaks, once
        results = [judge(pool, "correct_tiled.cu", quick) for _ in range(4)]
        (stats,) = pool.busy()
    walls = [r.extra["wall_s"] for r in results]
    print(f"warm checks: {walls} s; beyond the {quick.bench_budget_s} s timing budget: "
          f"{statistics.median(walls) - quick.bench_budget_s:.2f} s")
    assert all(r.passed and r.extra["warm"] is True for r in results)
    phases = results[-1].extra["phases_s"]  # where the worker's time went, phase by phase
    print(f"phases of the last check: {phases}")
    assert {"validate", "bench inputs drawn", "bench timed"} <= set(phases)
    assert sum(phases.values()) <= walls[-1]
    assert stats["restarts"] == 0 and stats["candidates"] == 5
    assert min(walls) >= quick.bench_budget_s
