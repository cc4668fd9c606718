"""Suite metrics over cells, per prompt set and model (definitions in the README, "Experiments"):

- compile rate: cells whose first attempt compiled / whose any attempt compiled;
- correctness: cells with an attempt that passed validation on the GPU;
- fast_p (KernelBench): cells that are correct AND faster than the baseline by more than p
  (speedup > p), over all cells, for p = 0, 1, 1.5, 2; fast_0 is the correctness rate;
- geomean speedup over the baseline, over the correct cells (each cell's fastest passing attempt);
- attempts and tokens per cell, cost (when a price is given), wall time per solved cell;
- candidates to within 5% of the best: the first attempt whose time is within 5% of the fastest
  any cell found for the same op, dtype and arch.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from kgen.experiment.outcomes import Outcome

FAST_P = (0.0, 1.0, 1.5, 2.0)
WITHIN = 0.05


@dataclass(frozen=True)
class GroupMetrics:
    prompt_set: str
    model: str
    cells: int  # finished cells
    unfinished: int  # error, stopped or pending
    compile_first: float
    compile_any: float
    correct: float | None  # None when nothing was validated (compile only)
    fast_p: dict[str, float] | None
    geomean_speedup: float | None
    attempts_mean: float
    tokens: int
    tokens_mean: float
    cost: float | None
    wall_s: float
    wall_per_solved_s: float | None
    within_5pct_median: float | None  # candidates needed, over the cells that got there
    within_5pct_reached: float | None  # share of cells that got there

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def rate(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def geomean(values: Sequence[float]) -> float | None:
    positive = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in positive) / len(positive)) if positive else None


def fast_p(speedups: Sequence[float | None], p: float) -> float:
    """KernelBench's fast_p: share of all cells that are correct (a speedup) and speedup > p."""
    return rate([s is not None and s > p for s in speedups])


def judged(outcomes: Sequence[Outcome]) -> bool:
    """Did any candidate reach a GPU? Otherwise the experiment is compile-only."""
    return any(a.judged for o in outcomes for a in o.attempts)


def best_ms(outcomes: Sequence[Outcome]) -> dict[tuple[str, str, str], float]:
    """The fastest passing time any cell found, per op, dtype and arch."""
    found: dict[tuple[str, str, str], float] = {}
    for o in outcomes:
        for a in o.attempts:
            if a.passed and a.ms is not None:
                found[o.unit] = min(found.get(o.unit, a.ms), a.ms)
    return found


def within_at(outcome: Outcome, best: dict[tuple[str, str, str], float]) -> int | None:
    """The first attempt within 5% of the best known time for the cell's op, or None."""
    target = best.get(outcome.unit)
    if target is None:
        return None
    return next((a.number for a in outcome.attempts
                 if a.passed and a.ms is not None and a.ms <= target * (1 + WITHIN)), None)


def group(outcomes: Sequence[Outcome], all_outcomes: Sequence[Outcome]) -> GroupMetrics:
    """The metrics of one prompt set x model (outcomes of that group only)."""
    done = [o for o in outcomes if o.status == "finished"]
    validated = judged(all_outcomes)
    speedups = [(o.best.speedup if o.best is not None else None) for o in done]
    solved = [o for o in done if o.solved_at(validated) is not None]
    costs = [o.cost for o in done]
    best = best_ms(all_outcomes)
    within = [within_at(o, best) for o in done] if validated else []
    reached = [w for w in within if w is not None]
    wall = sum(o.wall_s or 0.0 for o in done)
    return GroupMetrics(
        outcomes[0].prompt_set, outcomes[0].model, len(done), len(outcomes) - len(done),
        rate([bool(o.attempts) and o.attempts[0].compiled for o in done]),
        rate([any(a.compiled for a in o.attempts) for o in done]),
        rate([any(a.passed for a in o.attempts) for o in done]) if validated else None,
        {f"{p:g}": fast_p(speedups, p) for p in FAST_P} if validated else None,
        geomean([s for s in speedups if s is not None]) if validated else None,
        statistics.fmean([len(o.attempts) for o in done]) if done else 0.0,
        sum(o.tokens for o in done), statistics.fmean([o.tokens for o in done]) if done else 0.0,
        sum(c for c in costs if c is not None) if any(c is not None for c in costs) else None,
        wall, wall / len(solved) if solved else None,
        statistics.median(reached) if reached else None,
        rate([w is not None for w in within]) if validated and done else None)


def groups(outcomes: Sequence[Outcome]) -> list[GroupMetrics]:
    """One GroupMetrics per prompt set x model, in the order they first appear."""
    keys: dict[tuple[str, str], list[Outcome]] = {}
    for o in outcomes:
        keys.setdefault((o.prompt_set, o.model), []).append(o)
    return [group(members, outcomes) for members in keys.values()]


def solved_curve(outcomes: Sequence[Outcome], validated: bool, most: int) -> list[float]:
    """Share of the (finished) cells solved within the first k attempts, k = 1..most."""
    done = [o for o in outcomes if o.status == "finished"]
    firsts = [o.solved_at(validated) for o in done]
    return [rate([f is not None and f <= k for f in firsts]) for k in range(1, most + 1)]


def within_curve(outcomes: Sequence[Outcome], best: dict[tuple[str, str, str], float],
                 most: int) -> list[float]:
    """Share of the cells within 5% of the best known time within the first k candidates."""
    done = [o for o in outcomes if o.status == "finished"]
    firsts = [within_at(o, best) for o in done]
    return [rate([f is not None and f <= k for f in firsts]) for k in range(1, most + 1)]
