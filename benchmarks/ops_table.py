"""`make bench`, the ops table: every shipped op at each of its bench sizes — the reference naive
kernel, the builtin author's best (for every op the author can write: `can_write` decides, so a
row appears by itself when the author learns an op), torch eager, torch.compile — each with its
share of the roofline: of the measured copy bandwidth for memory-bound ops, of cuBLAS's matmul
rate for compute-bound ones.

Our kernels run in the sandboxed worker like any candidate (validated at every test size, then
timed with torch eager interleaved); torch.compile is timed in one process of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click

from kgen.compile import compile_source
from kgen.gpu.evaluate import EvalOptions, evaluate
from kgen.loop.candidate import parse_contract
from kgen.loop.task import Task
from kgen.models.builtin import can_write
from kgen.ops import available_ops, load_op
from kgen.spec import OpSpec
from kgen.verdict import Evaluation, Timing

IMPLS = ("reference naive", "builtin best", "torch eager", "torch.compile")
Builtin = Callable[[Task], Evaluation | None]


def naive_kernel(spec: OpSpec, dtype: str) -> Path | None:
    """The lowest-numbered reference kernel for the dtype."""
    for path in spec.reference_kernels():
        contract, _ = parse_contract(path.read_text(), spec)
        if contract is not None and contract.dtype == dtype:
            return path
    return None


def quick_options(spec: OpSpec, budget_s: float) -> EvalOptions:
    """Every test size with one fresh input set, then every bench size briefly."""
    return EvalOptions(bench_sizes=spec.bench_sizes, bench_budget_s=budget_s, input_sets=1,
                       kernel_timeout_s=30.0)


def run_kernel(source: str, task: Task, budget_s: float) -> Evaluation:
    assert task.spec is not None
    contract, problems = parse_contract(source, task.spec)
    compiled = compile_source(source, task.arch)
    if contract is None or not compiled.ok:
        return Evaluation("launch_error", (compiled.summary or str(problems))[:300])
    result = evaluate(compiled, contract, task.spec, task.arch,
                      options=quick_options(task.spec, budget_s))
    return result or Evaluation("crash", "no GPU")


def torch_times(dtype: str, names: list[str]) -> dict[str, dict]:
    done = subprocess.run([sys.executable, "-m", "benchmarks.torch_baselines", dtype, *names],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        click.echo(f"torch baselines failed: {done.stderr.strip()[-300:]}", err=True)
        return {}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_ops(arch, dtype: str, names: list[str], budget_s: float, builtin: Builtin,
                on_row: Callable[[list[dict], list[str]], None] | None = None
                ) -> tuple[list[dict], list[str]]:
    """One row per op and bench size: our kernels through the worker, torch's from its own
    process. `on_row` sees the rows and notes so far after each op (a long table cut short keeps
    its rows)."""
    rows, notes = [], []
    torch = torch_times(dtype, names)
    for name in names:
        spec = load_op(name)
        task = Task("generate", arch, spec, dtype)
        path = naive_kernel(spec, dtype)
        naive = run_kernel(path.read_text(), task, budget_s) if path else None
        best = builtin(task) if can_write(spec, dtype, arch) else None
        theirs = torch.get(name, {})
        rows += op_rows(name, spec, naive, best, theirs)
        for what, result in (("naive", naive), ("builtin", best)):
            if result is not None and not result.passed:
                notes.append(f"{name} {what}: {result.verdict} {result.message[:200]}")
        if theirs.get("note"):
            notes.append(f"{name}: {theirs['note']}")
        if on_row is not None:
            on_row(rows, notes)
    return rows, notes


def op_rows(name: str, spec: OpSpec, naive: Evaluation | None, best: Evaluation | None,
            theirs: dict) -> list[dict]:
    """Per bench size: milliseconds per implementation and the roofline's bound time (from the
    naive kernel's measured peaks, or the builtin's where the naive one failed), so every cell
    can show its share of the roofline."""
    rows = []
    for i, size in enumerate(spec.bench_sizes):
        timing, best_timing = _at(naive, i), _at(best, i)
        ours = timing or best_timing  # a timing of ours: the worker's peaks and eager with it
        bound_ms = ours.ms * ours.roofline_fraction if ours and ours.roofline_fraction else None
        rows.append({
            "op": name, "size": " ".join(f"{k}={v}" for k, v in size.items()),
            "bound": ours.bound if ours else "", "bound_ms": bound_ms,
            "ms": {"reference naive": timing.ms if timing else None,
                   "builtin best": best_timing.ms if best_timing else None,
                   "torch eager": ours.baseline_ms if ours else _nth(theirs, "eager_ms", i),
                   "torch.compile": _nth(theirs, "compiled_ms", i)}})
    return rows


def _at(result: Evaluation | None, i: int) -> Timing | None:
    """The timing at bench size i, when the result passed and got that far."""
    if result is None or not result.passed or len(result.timings) <= i:
        return None
    return result.timings[i]


def _nth(theirs: dict, key: str, i: int) -> float | None:
    values = theirs.get(key) or []
    return values[i] if i < len(values) else None


def _cell(ms: float | None, bound_ms: float | None) -> str:
    if not ms:
        return "-"
    share = f" ({bound_ms / ms:.0%})" if bound_ms else ""
    return f"{ms:.3f} ms{share}"


def table(rows: list[dict]) -> str:
    """Side by side: ms per implementation, in brackets the share of the roofline."""
    lines = ["| op | bench size | bound by | " + " | ".join(IMPLS) + " |",
             "| --- | --- | --- | " + " | ".join("---:" for _ in IMPLS) + " |"]
    words = {"memory": "copy BW", "compute": "matmul rate", "": "-"}
    for r in rows:
        cells = [_cell(r["ms"][impl], r["bound_ms"]) for impl in IMPLS]
        lines.append(f"| {r['op']} | {r['size']} | {words[r['bound']]} | " + " | ".join(cells)
                     + " |")
    return "\n".join(lines)


def all_ops(selected: str) -> list[str]:
    names = available_ops() if selected == "all" else [n for n in selected.split(",") if n]
    unknown = [n for n in names if n not in available_ops()]
    if unknown:
        raise click.UsageError(f"unknown op(s): {', '.join(unknown)}")
    return names
