"""Paired comparisons of two prompt sets (or two models) on the same ops: the mean per-op
difference with a bootstrap confidence interval, and an exact sign test. Standard library only;
the bootstrap is seeded, so a report is the same every time it is written."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from kgen.experiment.outcomes import Outcome

REPS = 10_000


def bootstrap_ci(diffs: Sequence[float], level: float = 0.95, reps: int = REPS,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile interval of the mean of `diffs`, resampled with replacement `reps` times."""
    if not diffs:
        raise ValueError("no paired differences")
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(diffs, k=len(diffs))) for _ in range(reps))
    tail = (1 - level) / 2
    return means[int(tail * reps)], means[min(reps - 1, math.ceil((1 - tail) * reps) - 1)]


def sign_test(diffs: Sequence[float]) -> tuple[int, int, int, float]:
    """(positive, negative, ties, two-sided exact p) for H0: either sign is equally likely."""
    plus = sum(d > 0 for d in diffs)
    minus = sum(d < 0 for d in diffs)
    n = plus + minus
    if n == 0:
        return plus, minus, len(diffs), 1.0
    tail = sum(math.comb(n, k) for k in range(min(plus, minus) + 1)) / 2**n
    return plus, minus, len(diffs) - n, min(1.0, 2 * tail)


@dataclass(frozen=True)
class Comparison:
    axis: str  # prompt_set or model
    a: str
    b: str
    fixed: str  # the other axis's value both sides share
    metric: str
    units: int  # ops (x dtype x arch) both sides ran
    mean_a: float
    mean_b: float
    mean_diff: float  # b - a
    ci95: tuple[float, float]
    b_better: int
    a_better: int
    ties: int
    sign_p: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


METRICS: dict[str, Callable[[Outcome, bool], float]] = {
    # 1 if the cell solved its op (passed; compile-only: compiled cleanly), else 0
    "solved": lambda o, judged: float(o.solved_at(judged) is not None),
    # the best speedup over the baseline, 0 when nothing passed
    "speedup": lambda o, judged: (o.best.speedup or 0.0) if o.best is not None else 0.0,
}


def per_unit(outcomes: Sequence[Outcome], metric: str, judged: bool) -> dict[tuple, float]:
    """The metric per op (x dtype x arch), averaged over the samples."""
    values: dict[tuple, list[float]] = {}
    for o in outcomes:
        if o.status == "finished":
            values.setdefault(o.unit, []).append(METRICS[metric](o, judged))
    return {unit: statistics.fmean(v) for unit, v in values.items()}


def compare(outcomes: Sequence[Outcome], axis: str, judged: bool) -> list[Comparison]:
    """Every other value of `axis` against its first, per value of the other axis and metric."""
    other = "model" if axis == "prompt_set" else "prompt_set"
    values = list(dict.fromkeys(getattr(o, axis) for o in outcomes))
    found = []
    for fixed in dict.fromkeys(getattr(o, other) for o in outcomes):
        side = {v: [o for o in outcomes if getattr(o, axis) == v and getattr(o, other) == fixed]
                for v in values}
        for b in values[1:]:
            for metric in METRICS if judged else ("solved",):
                ua, ub = (per_unit(side[v], metric, judged) for v in (values[0], b))
                units = sorted(set(ua) & set(ub))
                if units:
                    found.append(_compare(axis, values[0], b, fixed, metric, units, ua, ub))
    return found


def _compare(axis: str, a: str, b: str, fixed: str, metric: str, units: list[tuple],
             ua: dict[tuple, float], ub: dict[tuple, float]) -> Comparison:
    diffs = [ub[u] - ua[u] for u in units]
    plus, minus, ties, p = sign_test(diffs)
    mean_a = statistics.fmean(ua[u] for u in units)
    mean_b = statistics.fmean(ub[u] for u in units)
    return Comparison(axis, a, b, fixed, metric, len(units), mean_a, mean_b,
                      statistics.fmean(diffs), bootstrap_ci(diffs), plus, minus, ties, p)
