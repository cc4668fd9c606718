"""report.md: what was asked, every attempt in one table, the best, why the run stopped."""

from __future__ import annotations

from kgen.loop.attempt import Attempt
from kgen.loop.loop import Trajectory
from kgen.loop.task import Task


def attempt_row(a: Attempt) -> str:
    """One table row: number, choices, status, resources, verdict/time."""
    res = ""
    if a.compile is not None and a.compile.resources:
        r = max(a.compile.resources.values(), key=lambda r: r.registers)
        spill = f", {r.spill_stores} B spill" if r.spill_stores else ""
        # ptxas sees static shared memory only; dynamic shared memory is in the launch line.
        smem = f", {r.shared_bytes / 1024:.1f} KiB static smem" if r.shared_bytes else ""
        res = f"{r.registers} regs{smem}{spill}"
    time = ""
    if a.timing is not None:
        time = a.timing.short()
    choices = (a.choices or "-").replace("|", "/")
    found = a.findings.replace("|", "/")
    return (f"| {a.number} | {a.round} | {choices} | {a.status} | {res or '-'} | {time or '-'} "
            f"| {found} |")


def render(task: Task, trajectory: Trajectory, gpu_note: str, model: str,
           extra: list[str] | tuple[str, ...] = ()) -> str:
    best = trajectory.best
    lines = [f"# kgen {task.label}", "",
             f"- model: {model}",
             f"- GPU: {gpu_note}",
             f"- attempts: {len(trajectory.attempts)}; stopped: {trajectory.stop_reason}",
             f"- best: attempt {best.number} ({best.status})" if best else "- best: none", "",
             "| # | round | choices | status | resources | time | profile / sanitizer |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    lines += [attempt_row(a) for a in trajectory.attempts]
    if best is not None and best.evaluation is not None:
        lines += ["", "## Best candidate on the GPU", "", "```",
                  best.evaluation.describe(best.source or ""), "```"]
    if best is not None and best.compile is not None and best.compile.summary:
        lines += ["", "## Best candidate's compile summary", "", "```", best.compile.summary, "```"]
    if best is None and trajectory.attempts:
        last = trajectory.attempts[-1]
        lines += ["", f"## Last attempt ({last.number}) feedback", "", "```", last.feedback(),
                  "```"]
    if extra:
        lines += ["", *extra]
    return "\n".join(lines) + "\n"
