"""`kgen experiment report DIR`: report.md and report.json from the cells' run directories (so a
report can be written again at any time, also while the experiment runs), and the plots."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kgen.experiment import metrics, plots
from kgen.experiment.metrics import GroupMetrics
from kgen.experiment.outcomes import Outcome, read_attempts, read_tokens
from kgen.experiment.runner import ExperimentDir
from kgen.experiment.stats import Comparison, compare
from kgen.loop.rundir import write_atomic


def collect(exp: ExperimentDir) -> list[Outcome]:
    """Every cell of the grid as last run, from its record and its run directory."""
    meta = exp.meta()
    records = exp.records()
    prices = meta.get("prices", {})
    found = []
    for cell in meta.get("cells", []):
        record = records.get(cell["id"], {})
        folder = exp.cell_dir(cell["id"])
        status = record.get("status") or ("stopped" if folder.exists() else "pending")
        prompt, completion = read_tokens(folder)
        price = prices.get(cell["model"])
        cost = (prompt * price[0] + completion * price[1]) / 1e6 if price else None
        found.append(Outcome(cell["id"], cell["prompt_set"], cell["model"], cell["op"],
                             cell.get("dtype"), cell.get("arch"), cell.get("sample", 0), status,
                             record.get("message", ""), read_attempts(folder), prompt,
                             completion, record.get("wall_s"), cost))
    return found


def write(exp: ExperimentDir) -> dict[str, Any]:
    """Write report.md, report.json and plots/; the JSON report."""
    outcomes = collect(exp)
    validated = metrics.judged(outcomes)
    groups = metrics.groups(outcomes)
    comparisons = [c for axis in ("prompt_set", "model")
                   if len({getattr(o, axis) for o in outcomes}) > 1
                   for c in compare(outcomes, axis, validated)]
    why_not = plots.missing()
    drawn = [] if why_not else plots.write(outcomes, exp.path / "plots")
    meta = exp.meta()
    data = {"experiment": meta.get("name"), "folder": str(exp.path), "validated": validated,
            "groups": [g.to_json() for g in groups],
            "comparisons": [c.to_json() for c in comparisons],
            "cells": [o.to_json() for o in outcomes], "sessions": meta.get("sessions", []),
            "plots": [str(p.relative_to(exp.path)) for p in drawn],
            "plots_skipped": why_not}
    write_atomic(exp.path / "report.json", json.dumps(data, indent=2, default=str))
    write_atomic(exp.path / "report.md", render(meta, outcomes, groups, comparisons, data))
    return data


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _num(value: float | None, fmt: str = ".2f") -> str:
    return "-" if value is None else format(value, fmt)


def render(meta: dict[str, Any], outcomes: Sequence[Outcome], groups: Sequence[GroupMetrics],
           comparisons: Sequence[Comparison], data: dict[str, Any]) -> str:
    counts = {s: sum(o.status == s for o in outcomes)
              for s in ("finished", "error", "stopped", "pending")}
    lines = [f"# Experiment {meta.get('name')}", "",
             f"- file: {meta.get('file')}",
             "- cells: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n),
             "- " + ("validated and timed on a GPU: speedup = baseline time / candidate time, "
                     "the geometric mean over the op's bench sizes" if data["validated"] else
                     "compile only (no candidate reached a GPU): solved = compiled cleanly"), ""]
    lines += _group_table(groups, data["validated"])
    lines += _comparison_table(comparisons)
    lines += _per_op_table(outcomes, data["validated"])
    lines += _sessions(data["sessions"])
    failed = [o for o in outcomes if o.status in ("error", "stopped")]
    if failed:
        lines += ["", "## Cells that did not finish", ""]
        lines += [f"- `{o.id}`: {o.status}: {o.message or '(interrupted)'}" for o in failed]
    lines += ["", "## Plots", ""]
    lines += ([f"![{p}]({p})" for p in data["plots"]] if data["plots"] else
              [f"Plots skipped: {data['plots_skipped'] or 'nothing to plot yet'}."])
    return "\n".join(lines) + "\n"


def _group_table(groups: Sequence[GroupMetrics], validated: bool) -> list[str]:
    head = ("| prompt set | model | cells | compiled 1st | compiled any | correct | fast_0 | "
            "fast_1 | fast_1.5 | fast_2 | geomean speedup | attempts | tokens | cost (USD) | "
            "wall s / solved | to within 5% (median; reached) |")
    lines = ["## Per prompt set and model", "", head, "|" + " --- |" * (head.count("|") - 1)]
    for g in groups:
        fp = g.fast_p or {}
        within = ("-" if g.within_5pct_reached is None else
                  f"{_num(g.within_5pct_median, 'g')}; {_pct(g.within_5pct_reached)}")
        lines.append(
            f"| {g.prompt_set} | {g.model} | {g.cells}" + (f" (+{g.unfinished} unfinished)"
                                                          if g.unfinished else "") +
            f" | {_pct(g.compile_first)} | {_pct(g.compile_any)} | {_pct(g.correct)} | "
            + " | ".join(_pct(fp.get(p)) if validated else "-" for p in ("0", "1", "1.5", "2"))
            + f" | {_num(g.geomean_speedup)} | {g.attempts_mean:.1f} | {g.tokens:,} | "
            f"{_num(g.cost, '.4f')} | {_num(g.wall_per_solved_s, '.1f')} | {within} |")
    return lines


def _comparison_table(comparisons: Sequence[Comparison]) -> list[str]:
    if not comparisons:
        return []
    lines = ["", "## Paired comparisons (per op, averaged over samples)", "",
             "b - a on the ops both ran; 95% bootstrap interval of the mean difference (10,000 "
             "resamples, seeded); exact two-sided sign test.", "",
             "| a | b | with | metric | ops | mean a | mean b | b - a | 95% CI | b better / a "
             "better / ties | sign test p |", "|" + " --- |" * 11]
    for c in comparisons:
        lines.append(f"| {c.a} | {c.b} | {c.fixed} | {c.metric} | {c.units} | {c.mean_a:.3f} | "
                     f"{c.mean_b:.3f} | {c.mean_diff:+.3f} | [{c.ci95[0]:+.3f}, "
                     f"{c.ci95[1]:+.3f}] | {c.b_better} / {c.a_better} / {c.ties} | "
                     f"{c.sign_p:.3g} |")
    return lines


def _per_op_table(outcomes: Sequence[Outcome], validated: bool) -> list[str]:
    lines = ["", "## Per cell", "", "| op | dtype | arch | prompt set | model | sample | status | "
             "attempts | solved at | best ms | speedup | tokens |", "|" + " --- |" * 12]
    for o in outcomes:
        best = o.best
        # No dtype/arch in the grid: the op's first dtype and the local GPU (as in the cell ids).
        lines.append(f"| {o.op} | {o.dtype or 'first'} | {o.arch or 'local'} | {o.prompt_set} | "
                     f"{o.model} | {o.sample} | {o.status} | {len(o.attempts)} | "
                     f"{o.solved_at(validated) or '-'} | "
                     f"{_num(best.ms if best else None, '.4f')} | "
                     f"{_num(best.speedup if best else None)} | {o.tokens:,} |")
    return lines


def _sessions(sessions: Sequence[dict[str, Any]]) -> list[str]:
    rows = [(i, s, w) for i, s in enumerate(sessions, 1) for w in s.get("workers", [])]
    if not rows:
        return []
    lines = ["", "## GPU workers (busy = judging candidates)", "",
             "| session | where | worker | candidates | busy s | busy share | restarts |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for i, s, w in rows:
        lines.append(f"| {i} | {s.get('where', 'local')} | {w['worker']} | {w['candidates']} | "
                     f"{w['busy_s']:.1f} | {w['busy_fraction']:.0%} of {s.get('wall_s', 0):.0f}"
                     f" s | {_restarts(w)} |")
    return lines


def _restarts(worker: dict[str, Any]) -> str:
    """The count, and why where the pool said (`restarted_for`; sessions before it have none)."""
    why = worker.get("restarted_for") or {}
    reasons = ", ".join(f"{n} {reason}" for reason, n in why.items())
    return f"{worker['restarts']} ({reasons})" if reasons else str(worker["restarts"])
