"""On a GPU: the timing loop counts the kernel, not the CPU time spent queueing it.

A launch preceded by 100 us of CPU work (as a Python launcher with many arguments, or a
torch.compile guard, can be) is timed with the loop's GPU hold and without it: without, the
events also measure the idle GPU waiting for the CPU; with it, only the tiny kernel remains."""

from __future__ import annotations

import time

import pytest

from kgen.sandbox.timing import percentile, time_interleaved

pytestmark = pytest.mark.gpu

CPU_GAP_S = 100e-6


def test_cpu_time_before_a_launch_is_not_counted() -> None:
    import torch

    x = torch.zeros(1, device="cuda")

    def slow_launch() -> None:
        start = time.perf_counter()
        while time.perf_counter() - start < CPU_GAP_S:  # busy, as a Python launcher is
            pass
        x.add_(1)

    # Without the hold the GPU sits idle inside the timed region for the whole CPU gap: this is
    # what makes the test able to fail. Where other processes share the GPU (pytest -n 8 on an
    # H100, 2026-12-05: the bare median was 3.5 us; alone, it passed), the bare timing did not
    # show the gap (the cause was not isolated), so the hold cannot be judged against it: a few
    # tries, then a skip that says so.
    for _ in range(5):
        (bare,) = time_interleaved([(slow_launch, None)], budget_s=0, min_reps=30,
                                   hold=lambda: None)
        if percentile(bare, 50) >= 0.9 * CPU_GAP_S * 1e3:
            break
    else:
        pytest.skip(f"the GPU is busy with other work (bare median {percentile(bare, 50):.4f} "
                    "ms, under the CPU gap): run this test alone")
    (held,) = time_interleaved([(slow_launch, None)], budget_s=0, min_reps=30)
    assert percentile(held, 50) < 0.3 * CPU_GAP_S * 1e3, (bare, held)
