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

    (bare,) = time_interleaved([(slow_launch, None)], budget_s=0, min_reps=30,
                               hold=lambda: None)
    (held,) = time_interleaved([(slow_launch, None)], budget_s=0, min_reps=30)
    # Without the hold the GPU sits idle inside the timed region for the whole CPU gap: this is
    # what makes the test able to fail.
    assert percentile(bare, 50) >= 0.9 * CPU_GAP_S * 1e3
    assert percentile(held, 50) < 0.3 * CPU_GAP_S * 1e3, (bare, held)
