"""An experiment's progress line: cells done (finished before, now, failed), ETA at this
session's pace, tokens, the best time so far per op."""

from __future__ import annotations

from kgen.experiment.cells import Cell, Listed, ModelEntry, OpSource
from kgen.experiment.progress import Tally
from kgen.loop.attempt import Attempt
from kgen.loop.loop import Trajectory
from kgen.verdict import Evaluation, Timing


def listed(op: str, name: str) -> Listed:
    return Listed(name, Cell("default", ModelEntry("m", "builtin"), OpSource("op", op),
                             "float32", "sm_90", 0, 0))


def passed(number: int, ms: float, base: float) -> Attempt:
    timing = Timing({"M": 1}, ms, ms, ms, "cuBLAS", base)
    return Attempt(number, number, "src", evaluation=Evaluation("pass", timings=(timing,)))


def test_the_progress_line():
    tally = Tally(5, started=0.0)
    assert tally.line() == "cells 0/5, ETA -, 0 tokens"
    tally.cell_done("finished", earlier=True)  # skipped: finished in an earlier session
    a, b = listed("gemm", "a"), listed("softmax", "b")
    tally.attempt(a, passed(1, 2.0, 1.0), Trajectory(tokens=1200))
    tally.attempt(a, passed(2, 1.0, 1.0), Trajectory(tokens=2500))
    tally.attempt(b, Attempt(1, 1, None), Trajectory(tokens=800))
    tally.attempt(listed("gemm", "c"), passed(1, 1.5, 1.0), Trajectory(tokens=100))
    tally.cell_done("finished")
    tally.cell_done("error")
    line = tally.line()
    assert line.startswith("cells 2/5 (1 failed), ETA ")
    assert "3,400 tokens" in line and "best: gemm 1.000 ms (1.00x)" in line
    assert "softmax" not in line  # nothing of it passed yet
    eta = tally.eta_s()
    assert eta is not None and eta > 0  # two cells left at the pace of the one finished now
