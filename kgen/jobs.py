"""`generate` and `fix` as jobs: build the task, model and checker, run the loop, keep the results.

The CLI only parses and prints; this module wires the stages for one run and resumes a saved one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgen import models, nvcc, report
from kgen.arch import Arch, local_gpu, parse_arch
from kgen.attempt import Attempt
from kgen.candidate import parse_contract
from kgen.diagnostics import Diagnostic
from kgen.errors import UsageError
from kgen.evaluate import EvalOptions, evaluate, plan
from kgen.loop import Budget, Checker, Outcome
from kgen.models.base import Model
from kgen.models.openai_backend import safe_url
from kgen.prompts import list_prompt_sets
from kgen.runs import RunDir, default_run_dir
from kgen.spec import available_ops, load_op
from kgen.task import Task
from sandbox.verdict import RunResult


@dataclass(frozen=True)
class JobConfig:
    """Everything needed to repeat or resume a run; never holds an API key."""

    mode: str  # "generate" or "fix"
    arch: str | None
    op: str | None = None
    op_file: str | None = None
    dtype: str | None = None
    input_path: str | None = None  # fix: the file to mend
    backend: str | None = None  # builtin | openai | scripted | a plugin; None = choose
    model: str | None = None
    base_url: str | None = None
    prompt_set: str = "default"
    rounds: int = 8
    candidates: int = 1
    patience: int = 3
    wall_seconds: float | None = None
    tokens: int | None = None
    no_gpu: bool = False
    unsafe_no_sandbox: bool = False

    def budget(self) -> Budget:
        return Budget(self.rounds, self.candidates, self.patience, self.wall_seconds, self.tokens)


@dataclass(frozen=True)
class Summary:
    ok: bool
    best: str | None
    attempts: int
    validated: bool
    run_dir: str
    stop_reason: str
    gpu_note: str
    best_ms: float | None = None
    speedup: float | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def resolve_arch(arch: str | None) -> str:
    """--arch as given, else the local GPU's; with neither, one clear error."""
    if arch:
        return arch
    gpu = local_gpu()
    if gpu is None:
        raise UsageError("no GPU found to take the architecture from; pass --arch (e.g. "
                         "--arch sm_89)")
    return gpu[1].name


def build_task(config: JobConfig) -> Task:
    arch = parse_arch(resolve_arch(config.arch))
    if config.mode == "fix":
        return _fix_task(config, arch)
    spec = load_op(config.op, Path(config.op_file) if config.op_file else None)
    dtype = config.dtype or next(iter(spec.dtypes))
    spec.check_dtype(dtype)
    return Task("generate", arch, spec, dtype)


def _fix_task(config: JobConfig, arch: Arch) -> Task:
    path = Path(str(config.input_path))
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    source = path.read_bytes().decode("utf-8", errors="replace")
    contract, _ = parse_contract(source, None)
    op = config.op or (contract.op if contract else None)
    spec = None
    if config.op_file or (op and op in available_ops()):
        spec = load_op(op, Path(config.op_file) if config.op_file else None)
    dtype = config.dtype or (contract.dtype if contract else None)
    if spec is not None and dtype not in spec.dtypes:
        dtype = next(iter(spec.dtypes))
    return Task("fix", arch, spec, dtype, source, path)


def build_checker(task: Task, config: JobConfig) -> Checker:
    """Compile settings and the GPU evaluator, with a plain note on what the GPU can do here."""
    if task.spec is None:
        return Checker(gpu_note="the file's op is unknown: it is compiled, not validated")
    if config.no_gpu:
        return Checker(gpu_note="--no-gpu given: candidates are compiled, not validated or timed")
    how = plan(task.arch)
    if not how.runnable:
        return Checker(gpu_note=how.message)
    options = EvalOptions.quick(task.spec, unsafe_no_sandbox=config.unsafe_no_sandbox)

    def evaluator(compiled: nvcc.CompileResult, contract, task: Task) -> RunResult:
        result = evaluate(compiled, contract, task, options=options)
        return result if result is not None else RunResult("crash", "the GPU could not run it")

    return Checker(evaluator, embed_ptx=how.embed_ptx,
                   gpu_note=how.message or f"validated and timed on {how.local}")


def start(config: JobConfig, out: Path | None, model: Model) -> tuple[Task, Checker, RunDir]:
    task = build_task(config)
    label = f"{task.spec.name if task.spec and task.mode == 'generate' else 'fix'}-{task.arch.name}"
    saved = dataclasses.asdict(_for_resume(config)) | {
        "arch": task.arch.name, "dtype": task.dtype, "model_description": model.describe()}
    run_dir = RunDir.create(out or default_run_dir(label), saved)
    return task, build_checker(task, config), run_dir


def _for_resume(config: JobConfig) -> JobConfig:
    """What run.json keeps: absolute paths (resume from anywhere), no credentials in the URL."""
    def absolute(path: str | None) -> str | None:
        return str(Path(path).resolve()) if path and Path(path).exists() else path

    return dataclasses.replace(config, input_path=absolute(config.input_path),
                               op_file=absolute(config.op_file),
                               prompt_set=config.prompt_set if config.prompt_set in
                               list_prompt_sets() else absolute(config.prompt_set) or "default",
                               base_url=safe_url(config.base_url) if config.base_url else None)


def prepare(config: JobConfig, out: Path | None, resume: Path | None
            ) -> tuple[JobConfig, Model, Task, Checker, RunDir, list[Attempt]]:
    """Start a run directory, or reopen one to resume it (its saved configuration wins)."""
    if resume is not None:
        run_dir = RunDir.open(resume)
        # The saved configuration wins, except the model options given now (another model may
        # carry on; credentials kept out of run.json come back this way).
        saved = load_config(run_dir)
        config = dataclasses.replace(saved, backend=config.backend or saved.backend,
                                     model=config.model or saved.model,
                                     base_url=config.base_url or saved.base_url)
        model = models.resolve_model(config.backend, config.model, config.base_url)
        task = build_task(config)
        checker = build_checker(task, config)
        return config, model, task, checker, run_dir, load_history(run_dir, task, checker)
    model = models.resolve_model(config.backend, config.model, config.base_url)
    task, checker, run_dir = start(config, out, model)
    history = [seed_fix(task, checker, run_dir)] if task.mode == "fix" else []
    return config, model, task, checker, run_dir, history


def load_config(run_dir: RunDir) -> JobConfig:
    saved = run_dir.meta()["config"]
    fields = {f.name for f in dataclasses.fields(JobConfig)}
    return JobConfig(**{k: v for k, v in saved.items() if k in fields})


def load_history(run_dir: RunDir, task: Task, checker: Checker) -> list[Attempt]:
    """Finished attempts back from the run directory (compiles come from the cache)."""
    history = []
    for rec in run_dir.finished_records():
        kernel = run_dir.attempt_dir(rec["attempt"]) / "kernel.cu"
        source = kernel.read_text() if kernel.exists() else None
        compiled = None
        if source is not None and rec.get("compile") is not None:
            include_dir = task.path.resolve().parent if task.path else None
            compiled = nvcc.compile_source(source, task.arch, flags=checker.flags,
                                           include_dir=include_dir, embed_ptx=checker.embed_ptx)
        problems = tuple(Diagnostic(**{**p, "notes": tuple(p["notes"])}, category="contract")
                         for p in rec.get("problems", ()))
        run = RunResult.from_json(rec["run"]) if rec.get("run") else None
        history.append(Attempt(rec["attempt"], rec["round"], source, rec.get("choices", ""),
                               rec.get("notes", ""), problems, compiled, run))
    return history


def seed_fix(task: Task, checker: Checker, run_dir: RunDir) -> Attempt:
    """Attempt 1 of a fix is the file as given, so the model starts from its real errors."""
    attempt = checker.check(task, task.source or "", 1, 0, notes="the input file as given")
    run_dir.save_attempt(attempt, "(the input file, not a model reply)")
    return attempt


def finish(task: Task, checker: Checker, run_dir: RunDir, outcome: Outcome,
           model: Model, status: str = "finished") -> Summary:
    """Write best.cu, report.md and the final status; the summary the CLI prints."""
    best = outcome.best
    validated = best is not None and best.passed
    ok = validated if checker.evaluator is not None and task.spec is not None else best is not None
    if task.mode == "fix" and best is not None and best.number == 1:
        outcome.stop_reason = "the file already " + ("passes" if validated else "compiles")
    best_path = str(run_dir.write_best(best.source)) if best and best.source else None
    run_dir.write_report(report.render(task, outcome, checker.gpu_note, model.describe()))
    timing = best.run.timings[0] if best and best.run and best.run.timings else None
    run_dir.update_meta(status=status, stop_reason=outcome.stop_reason,
                        best_attempt=best.number if best else None)
    return Summary(ok, best_path, len(outcome.attempts), validated, str(run_dir.path),
                   outcome.stop_reason, checker.gpu_note, timing.ms if timing else None,
                   timing.speedup if timing else None)


def close_early(task: Task, checker: Checker, run_dir: RunDir, model: Model, status: str) -> None:
    """After Ctrl-C or a fatal error: report and best.cu from the finished attempts on disk."""
    outcome = Outcome(load_history(run_dir, task, checker), stop_reason=status)
    finish(task, checker, run_dir, outcome, model, status=status)
