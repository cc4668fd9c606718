"""PNG plots of an experiment with matplotlib (`pip install 'kgen[plots]'`; imported only here):
speedup per op per group, the share of cells solved against attempts, and (when timed) the share
within 5% of the best against candidates. Without matplotlib the report says the plots were
skipped."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from kgen.experiment import metrics
from kgen.experiment.outcomes import Outcome
from kgen.experiment.stats import per_unit


def missing() -> str | None:
    """Why plots cannot be drawn here, or None."""
    if importlib.util.find_spec("matplotlib") is None:
        return "matplotlib is not installed (pip install 'kgen[plots]')"
    return None


def _groups(outcomes: Sequence[Outcome]) -> dict[str, list[Outcome]]:
    found: dict[str, list[Outcome]] = {}
    for o in outcomes:
        found.setdefault(f"{o.prompt_set} / {o.model}", []).append(o)
    return found


def write(outcomes: Sequence[Outcome], folder: Path) -> list[Path]:
    """Draw every plot that the data supports into folder; the files written."""
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    validated = metrics.judged(outcomes)
    groups = _groups(outcomes)
    most = max((len(o.attempts) for o in outcomes), default=0)
    written = []
    if validated:
        written.append(_speedups(plt, groups, folder / "speedup_per_op.png"))
    if most:
        what = "passed" if validated else "compiled cleanly"
        curves = {g: metrics.solved_curve(members, validated, most)
                  for g, members in groups.items()}
        written.append(_curves(plt, curves, f"share of cells with a candidate that {what}",
                               "attempts", folder / "solved_vs_attempts.png"))
    if validated and most:
        best = metrics.best_ms(outcomes)
        curves = {g: metrics.within_curve(members, best, most) for g, members in groups.items()}
        written.append(_curves(plt, curves, "share of cells within 5% of the best time found",
                               "candidates", folder / "within_5pct_vs_candidates.png"))
    return written


def _speedups(plt, groups: dict[str, list[Outcome]], path: Path) -> Path:
    values = {g: per_unit(members, "speedup", True) for g, members in groups.items()}
    units = sorted({u for v in values.values() for u in v})
    width = 0.8 / max(1, len(values))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(units) + 2), 4.5))
    for i, (name, by_unit) in enumerate(values.items()):
        xs = [k + i * width - 0.4 + width / 2 for k in range(len(units))]
        ax.bar(xs, [by_unit.get(u, 0.0) for u in units], width, label=name)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(units)), [" ".join(u[:2]) for u in units], rotation=30, ha="right")
    ax.set_ylabel("speedup over the baseline (0: none passed)")
    ax.set_title("Best speedup per op (mean over samples)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _curves(plt, curves: dict[str, list[float]], ylabel: str, xlabel: str, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for name, ys in curves.items():
        ax.step(range(1, len(ys) + 1), ys, where="post", label=name, marker="o", markersize=3)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
