"""Suite metrics and paired statistics on hand-made cells with answers worked out by hand."""

from __future__ import annotations

import math

import pytest

from kgen.experiment import metrics
from kgen.experiment.outcomes import AttemptFacts, Outcome
from kgen.experiment.stats import bootstrap_ci, compare, sign_test


def attempt(number, compiled=True, passed=False, ms=None, speedup=None):
    return AttemptFacts(number, compiled, compiled, compiled, passed, ms, speedup)


def cell(op, attempts, prompt_set="default", model="m", sample=0, tokens=(0, 0), wall=10.0,
         status="finished"):
    return Outcome(f"{op}-{prompt_set}-{model}-{sample}", prompt_set, model, op, "float32",
                   "sm_90", sample, status, "", tuple(attempts), tokens[0], tokens[1], wall)


# Four ops: a at 2x (found on attempt 2), b at 0.5x, c at 1.2x then 1.6x, d never passes.
CELLS = [
    cell("a", [attempt(1, compiled=False), attempt(2, passed=True, ms=1.0, speedup=2.0)],
         tokens=(100, 50)),
    cell("b", [attempt(1, passed=True, ms=4.0, speedup=0.5)], tokens=(100, 50)),
    cell("c", [attempt(1, passed=True, ms=5.0, speedup=1.2),
               attempt(2, passed=True, ms=3.75, speedup=1.6)], tokens=(200, 100)),
    cell("d", [attempt(1), attempt(2)], tokens=(200, 100), wall=30.0),
]


def test_fast_p_is_kernelbench_s_definition():
    speedups = [2.0, 0.5, 1.6, None]
    assert metrics.fast_p(speedups, 0.0) == 0.75  # correct (and faster than nothing)
    assert metrics.fast_p(speedups, 1.0) == 0.5  # 2.0 and 1.6
    assert metrics.fast_p(speedups, 1.5) == 0.5
    assert metrics.fast_p(speedups, 2.0) == 0.0  # strictly faster than 2x


def test_group_metrics():
    g = metrics.group(CELLS, CELLS)
    assert g.cells == 4 and g.unfinished == 0
    assert g.compile_first == 0.75 and g.compile_any == 1.0 and g.correct == 0.75
    assert g.fast_p == {"0": 0.75, "1": 0.5, "1.5": 0.5, "2": 0.0}
    assert g.geomean_speedup == pytest.approx((2.0 * 0.5 * 1.6) ** (1 / 3))
    assert g.attempts_mean == 1.75 and g.tokens == 900 and g.tokens_mean == 225
    assert g.cost is None
    assert g.wall_per_solved_s == pytest.approx(60.0 / 3)
    # each op's own best is the best known: reached at attempts 2, 1, 2 -> median 2; d never
    assert g.within_5pct_median == 2 and g.within_5pct_reached == 0.75


def test_unfinished_cells_count_apart_and_compile_only_groups_say_so():
    compiled_only = [cell("a", [attempt(1, compiled=False), attempt(2)]), cell("b", [attempt(1)]),
                     cell("c", [], status="error")]
    compiled_only = [Outcome(**{**o.__dict__, "attempts": tuple(
        AttemptFacts(a.number, a.compiled, a.clean, False, False) for a in o.attempts)})
        for o in compiled_only]
    g = metrics.group(compiled_only, compiled_only)
    assert g.cells == 2 and g.unfinished == 1
    assert g.correct is None and g.fast_p is None and g.geomean_speedup is None
    assert g.compile_first == 0.5 and g.compile_any == 1.0
    assert metrics.solved_curve(compiled_only, False, 3) == [0.5, 1.0, 1.0]


def test_within_5_percent_of_the_best_known_time_over_all_groups():
    fast = cell("a", [attempt(1, passed=True, ms=1.0, speedup=2.0)], model="other")
    slow = cell("a", [attempt(1, passed=True, ms=1.2, speedup=1.6),
                      attempt(2, passed=True, ms=1.04, speedup=1.9)])
    best = metrics.best_ms([fast, slow])
    assert best == {("a", "float32", "sm_90"): 1.0}
    assert metrics.within_at(slow, best) == 2 and metrics.within_at(fast, best) == 1
    assert metrics.within_curve([slow], best, 3) == [0.0, 1.0, 1.0]


def test_solved_curve_counts_cells_solved_within_k_attempts():
    assert metrics.solved_curve(CELLS, True, 3) == [0.5, 0.75, 0.75]


def test_geomean():
    assert metrics.geomean([1.0, 4.0]) == 2.0 and metrics.geomean([]) is None


def test_sign_test_exact_values():
    assert sign_test([1.0] * 8) == (8, 0, 0, 2 / 256)
    plus, minus, ties, p = sign_test([1, 1, 1, -1, 0, 0])
    assert (plus, minus, ties) == (3, 1, 2) and p == pytest.approx(2 * 5 / 16)  # n=4, k<=1
    assert sign_test([0.0, 0.0]) == (0, 0, 2, 1.0)
    assert sign_test([1, -1])[3] == 1.0


def test_bootstrap_interval():
    assert bootstrap_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)
    diffs = [0.1, 0.3, 0.2, 0.4, 0.0, 0.25, 0.15, 0.35]
    lo, hi = bootstrap_ci(diffs)
    mean = sum(diffs) / len(diffs)
    assert lo < mean < hi and 0.0 < lo and hi < 0.4
    assert bootstrap_ci(diffs) == (lo, hi)  # seeded: the same every time
    # normal approximation: mean 0.219, standard error 0.128 / sqrt(8) = 0.045 -> +-0.089
    assert lo == pytest.approx(0.219 - 0.089, abs=0.015)
    assert hi == pytest.approx(0.219 + 0.089, abs=0.015)
    wide = bootstrap_ci([-1.0, 1.0] * 4)
    assert wide[0] < 0 < wide[1]
    with pytest.raises(ValueError):
        bootstrap_ci([])


def test_paired_comparison_of_two_prompt_sets():
    # compact solves c and d where default did not, and is faster on a; b is the same.
    default = [cell("a", [attempt(1, passed=True, ms=2.0, speedup=1.0)]),
               cell("b", [attempt(1, passed=True, ms=1.0, speedup=1.0)]),
               cell("c", [attempt(1)]), cell("d", [attempt(1)])]
    compact = [cell(o.op, a, prompt_set="compact") for o, a in zip(default, [
        [attempt(1, passed=True, ms=1.0, speedup=2.0)],
        [attempt(1, passed=True, ms=1.0, speedup=1.0)],
        [attempt(1, passed=True, ms=1.0, speedup=1.0)],
        [attempt(1, passed=True, ms=1.0, speedup=1.0)]], strict=True)]
    solved, speed = compare(default + compact, "prompt_set", judged=True)
    assert (solved.a, solved.b, solved.fixed, solved.metric) == ("default", "compact", "m",
                                                                 "solved")
    assert solved.units == 4 and solved.mean_a == 0.5 and solved.mean_b == 1.0
    assert solved.mean_diff == 0.5 and (solved.b_better, solved.a_better, solved.ties) == (2, 0, 2)
    assert solved.sign_p == 0.5  # two wins of two untied: 2 * (1/4)
    assert speed.metric == "speedup" and speed.mean_diff == pytest.approx((1 + 0 + 1 + 1) / 4)
    assert speed.ci95[0] <= speed.mean_diff <= speed.ci95[1]
    assert not math.isnan(speed.sign_p)


def test_samples_are_averaged_per_op_before_pairing():
    a = [cell("x", [attempt(1, passed=True, ms=1, speedup=1.0)], sample=s) for s in (0, 1)]
    b = [cell("x", [attempt(1, passed=True, ms=1, speedup=1.0)], prompt_set="p2", sample=0),
         cell("x", [attempt(1)], prompt_set="p2", sample=1)]
    (solved, _) = compare(a + b, "prompt_set", judged=True)
    assert solved.units == 1 and solved.mean_b == 0.5 and solved.mean_diff == -0.5


def test_the_workers_table_says_why_a_worker_was_restarted():
    from kgen.experiment.report import render

    workers = [{"worker": "gpu0.w0", "candidates": 9, "busy_s": 30.0, "busy_fraction": 0.5,
                "restarts": 2, "restarted_for": {"crash verdict": 1, "max jobs": 1}},
               {"worker": "gpu0.w1", "candidates": 8, "busy_s": 28.0, "busy_fraction": 0.47,
                "restarts": 0, "restarted_for": {}},
               {"worker": "gpu1.w0", "candidates": 7, "busy_s": 20.0, "busy_fraction": 0.33,
                "restarts": 1}]  # a session recorded before the reasons were kept
    text = render({"name": "x"}, [], [], [], {"validated": True, "plots": [], "plots_skipped": "",
                                              "sessions": [{"wall_s": 60, "workers": workers}]})
    rows = [line for line in text.splitlines() if "gpu" in line]
    assert rows[0].endswith("| 2 (1 crash verdict, 1 max jobs) |")
    assert rows[1].endswith("| 0 |") and rows[2].endswith("| 1 |")
