"""What a KernelBench run leaves besides best.cu: model_new.py (ModelNew launching the best
kernel, for KernelBench's own evaluator), and, where the best kernel passed on a GPU, one more
timing of it against torch eager and torch.compile of the Model (compiling takes a while, so the
loop's rounds time eager only)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kgen.loop.attempt import Attempt
from kgen.loop.modelnew import render
from kgen.loop.rundir import RunDir, write_atomic
from kgen.loop.task import Task
from kgen.verdict import Evaluation

MODEL_NEW = "model_new.py"
FinalTiming = Callable[[Attempt], Evaluation | None]


def is_kernelbench(task: Task) -> bool:
    return task.spec is not None and task.spec.reference.kind == "kernelbench"


def origin(run_dir: RunDir, best: Attempt) -> str:
    """Where the kernel comes from and what kgen checked, for model_new.py's docstring."""
    where = f"The kernel is attempt {best.number} of the kgen run {run_dir.path}"
    evaluation = best.evaluation
    if evaluation is not None and evaluation.passed:
        return (f"{where}.\nkgen validated it on {evaluation.device}: "
                f"{evaluation.message}.")
    return (f"{where}.\nIt compiled cleanly, but kgen could NOT validate it (no GPU where the "
            "run happened):\ncheck it before trusting it.")


def write_outputs(run_dir: RunDir, task: Task, best: Attempt | None,
                  final_timing: FinalTiming) -> list[str]:
    """Write model_new.py (when the best attempt has a binary); report lines about both."""
    if not is_kernelbench(task) or task.spec is None:
        return []
    if best is None or best.compile is None or best.compile.cubin is None or best.source is None:
        return ["## KernelBench", "", "No candidate compiled, so no model_new.py was written."]
    from kgen.loop.candidate import parse_contract

    contract, _ = parse_contract(best.source, task.spec)
    if contract is None:
        return ["## KernelBench", "", "The best candidate's contract does not parse: no "
                "model_new.py."]
    text = render(task.spec, contract, best.compile.cubin, task.arch.name, best.source,
                  origin(run_dir, best))
    path = run_dir.path / MODEL_NEW
    write_atomic(path, text)
    lines = ["## KernelBench", "",
             f"- `{MODEL_NEW}`: `ModelNew` launching attempt {best.number} "
             f"({Path(task.spec.reference.file).name}); KernelBench's evaluator can load it as "
             "it is."]
    final = final_timing(best) if best.passed else None
    if final is not None:
        against = ("torch eager and torch.compile" if any(t.compiled_ms for t in final.timings)
                   else "torch eager (torch.compile not timed, or it failed)")
        lines += [f"- the best kernel timed once more, against {against}:",
                  "", "```", final.describe(), *[f"check  {c}" for c in final.checks], "```"]
    return lines
