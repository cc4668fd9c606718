"""A run (`kgen generate` or `kgen fix`) as one object: start it or resume it from its run
directory, drive the loop, close it properly after Ctrl-C or a fatal error, return a summary.

The CLI parses options into a RunConfig, calls Run.start or Run.resume, then run.execute, and
prints; it knows nothing of the stages.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgen import models
from kgen.arch import Arch, local_gpu, parse_arch
from kgen.compile import CompileResult, Diagnostic, compile_source
from kgen.contract import Contract
from kgen.errors import KgenError, UsageError
from kgen.gpu.client import FreshWorkers, Workers
from kgen.gpu.evaluate import EvalOptions, evaluate, plan
from kgen.gpu.pool import WorkerPool
from kgen.loop import kbout, report
from kgen.loop.attempt import Attempt
from kgen.loop.candidate import parse_contract
from kgen.loop.loop import Budget, Checker, Trajectory, run_loop
from kgen.loop.prompts import list_prompt_sets
from kgen.loop.rundir import RunDir, default_run_dir
from kgen.loop.task import Task
from kgen.models.base import Model
from kgen.models.openai_backend import safe_url
from kgen.ops import available_ops, load_op
from kgen.ops.kernelbench import load_problem
from kgen.spec import OpSpec
from kgen.verdict import Evaluation


@dataclass(frozen=True)
class RunConfig:
    """Everything needed to repeat or resume a run; never holds an API key."""

    mode: str  # "generate" or "fix"
    arch: str | None
    op: str | None = None
    op_file: str | None = None
    kernelbench: str | None = None  # a KernelBench problem file instead of --op/--op-file
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
    fresh_workers: bool = False  # a new GPU worker per candidate instead of the warm pool
    profile: bool = True  # a passing candidate: profiled with Nsight Compute where ncu works
    sanitize: bool = True  # a failing one: re-run under compute-sanitizer where it is installed

    def budget(self) -> Budget:
        return Budget(self.rounds, self.candidates, self.patience, self.wall_seconds, self.tokens)


@dataclass(frozen=True)
class RunSummary:
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


OnAttempt = Callable[[Attempt, Trajectory], None]


class Run:
    """One run: its task, model, checker, run directory and the attempts finished so far."""

    def __init__(self, config: RunConfig, model: Model, task: Task, checker: Checker,
                 run_dir: RunDir, history: list[Attempt], resumed: bool = False,
                 owned: WorkerPool | None = None):
        self.config = config
        self.model = model
        self.task = task
        self.checker = checker
        self.run_dir = run_dir
        self.history = history
        self.resumed = resumed
        self.owned = owned  # a pool this run started for itself, closed when it ends

    @classmethod
    def start(cls, config: RunConfig, out: Path | None = None, model: Model | None = None,
              workers: Workers | None = None) -> Run:
        """A new run directory (default runs/<UTC time>-<op>-<arch>/); a fix starts from FILE.
        `workers`: where candidates are judged (an experiment's shared pool); default: a warm
        pool of this run's own over the visible GPUs (fresh workers with fresh_workers)."""
        model = model or models.resolve_model(config.backend, config.model, config.base_url)
        task = build_task(config)
        label = f"{task.spec.name if task.spec and task.mode == 'generate' else 'fix'}-" \
                f"{task.arch.name}"
        saved = dataclasses.asdict(_for_resume(config)) | {
            "arch": task.arch.name, "dtype": task.dtype, "model_description": model.describe()}
        run_dir = RunDir.create(out or default_run_dir(label), saved)
        checker, owned = _checker_and_pool(task, config, workers)
        run = cls(config, model, task, checker, run_dir, [], owned=owned)
        if task.mode == "fix":
            run.history.append(run._seed_fix())
        return run

    @classmethod
    def resume(cls, path: Path, backend: str | None = None, model_name: str | None = None,
               base_url: str | None = None, *, model: Model | None = None,
               workers: Workers | None = None) -> Run:
        """Reopen a run directory; its saved configuration wins, except the model options given
        now (another model may carry on; credentials kept out of run.json come back this way)."""
        run_dir = RunDir.open(path)
        saved = load_config(run_dir)
        config = dataclasses.replace(saved, backend=backend or saved.backend,
                                     model=model_name or saved.model,
                                     base_url=base_url or saved.base_url)
        model = model or models.resolve_model(config.backend, config.model, config.base_url)
        task = build_task(config)
        checker, owned = _checker_and_pool(task, config, workers)
        return cls(config, model, task, checker, run_dir, load_history(run_dir, task, checker),
                   resumed=True, owned=owned)

    @property
    def resume_command(self) -> str:
        return f"kgen {self.task.mode} --resume {self.run_dir.path}"

    def execute(self, on_attempt: OnAttempt = lambda a, t: None) -> RunSummary:
        """Drive the loop to its end. After Ctrl-C or a fatal error the run directory is closed
        (status, report.md and best.cu from the finished attempts) and the exception goes on."""
        try:
            trajectory = run_loop(self.task, self.model, self.checker, self.run_dir,
                                  self.config.budget(), list(self.history),
                                  self.config.prompt_set, on_attempt)
        except KeyboardInterrupt:
            self.close("interrupted")
            raise
        except KgenError as exc:
            self.close(f"stopped: {exc}")
            raise
        finally:
            if self.owned is not None:
                self.owned.close()
        return self.finish(trajectory)

    def finish(self, trajectory: Trajectory, status: str = "finished") -> RunSummary:
        """Write best.cu, report.md and the final status; the summary the CLI prints."""
        best = trajectory.best
        validated = best is not None and best.passed
        judged = self.checker.evaluator is not None and self.task.spec is not None
        ok = validated if judged else best is not None
        if self.task.mode == "fix" and best is not None and best.number == 1:
            trajectory.stop_reason = "the file already " + ("passes" if validated else "compiles")
        best_path = str(self.run_dir.write_best(best.source)) if best and best.source else None
        final: kbout.FinalTiming = self._final_timing if status == "finished" else (
            lambda attempt: None)
        extra = kbout.write_outputs(self.run_dir, self.task, best, final)
        self.run_dir.write_report(report.render(self.task, trajectory, self.checker.gpu_note,
                                                self.model.describe(), extra))
        evaluation = best.evaluation if best else None
        timing = evaluation.timings[0] if evaluation and evaluation.timings else None
        self.run_dir.update_meta(status=status, stop_reason=trajectory.stop_reason,
                                 best_attempt=best.number if best else None)
        return RunSummary(ok, best_path, len(trajectory.attempts), validated,
                          str(self.run_dir.path), trajectory.stop_reason, self.checker.gpu_note,
                          timing.ms if timing else None, timing.speedup if timing else None)

    def _final_timing(self, best: Attempt) -> Evaluation | None:
        """A passing KernelBench kernel once more, at every bench size, against torch eager and
        torch.compile (the loop's rounds skip torch.compile: compiling takes a while)."""
        if self.checker.evaluator is None or best.compile is None or self.task.spec is None:
            return None
        contract, _ = parse_contract(best.source or "", self.task.spec)
        options = EvalOptions(bench_budget_s=1.0, compile_baseline=True,
                              unsafe_no_sandbox=self.config.unsafe_no_sandbox)
        return evaluate(best.compile, contract, self.task.spec, self.task.arch, options=options)

    def close(self, status: str) -> None:
        """After Ctrl-C or a fatal error: report and best.cu from the finished attempts on disk."""
        trajectory = Trajectory(load_history(self.run_dir, self.task, self.checker),
                                stop_reason=status)
        self.finish(trajectory, status=status)

    def _seed_fix(self) -> Attempt:
        """Attempt 1 of a fix is the file as given, so the model starts from its real errors."""
        attempt = self.checker.check(self.task, self.task.source or "", 1, 0,
                                     notes="the input file as given")
        self.run_dir.save_attempt(attempt, "(the input file, not a model reply)")
        return attempt


def resolve_arch(arch: str | None) -> str:
    """--arch as given, else the local GPU's; with neither, one clear error."""
    if arch:
        return arch
    gpu = local_gpu()
    if gpu is None:
        raise UsageError("no GPU found to take the architecture from; pass --arch (e.g. "
                         "--arch sm_89)")
    return gpu[1].name


def build_task(config: RunConfig) -> Task:
    arch = parse_arch(resolve_arch(config.arch))
    if config.mode == "fix":
        return _fix_task(config, arch)
    spec = op_spec(config)
    dtype = config.dtype or next(iter(spec.dtypes))
    spec.check_dtype(dtype)
    return Task("generate", arch, spec, dtype)


def op_spec(config: RunConfig) -> OpSpec:
    """The op of a run: a KernelBench problem, a spec file, or a shipped op."""
    if config.kernelbench:
        return load_problem(Path(config.kernelbench))
    return load_op(config.op, Path(config.op_file) if config.op_file else None)


def _fix_task(config: RunConfig, arch: Arch) -> Task:
    path = Path(str(config.input_path))
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    source = path.read_bytes().decode("utf-8", errors="replace")
    contract, _ = parse_contract(source, None)
    op = config.op or (contract.op if contract else None)
    spec = None
    if config.op_file or config.kernelbench or (op and op in available_ops()):
        spec = op_spec(dataclasses.replace(config, op=op))
    dtype = config.dtype or (contract.dtype if contract else None)
    if spec is not None and dtype not in spec.dtypes:
        dtype = next(iter(spec.dtypes))
    return Task("fix", arch, spec, dtype, source, path)


def _checker_and_pool(task: Task, config: RunConfig,
                      workers: Workers | None) -> tuple[Checker, WorkerPool | None]:
    """The checker, judging on `workers`, else on a warm pool of the run's own (returned, so the
    run closes it), else (fresh_workers) on a new worker per candidate."""
    owned = None
    if workers is None and config.fresh_workers:
        workers = FreshWorkers(config.unsafe_no_sandbox)  # one at a time, as before the pool
    elif workers is None and not config.no_gpu:
        owned = WorkerPool.local(unsafe=config.unsafe_no_sandbox)  # starts nothing until used
        workers = owned
    return build_checker(task, config, workers), owned


def build_checker(task: Task, config: RunConfig, workers: Workers | None = None) -> Checker:
    """Compile settings and the GPU evaluator, with a plain note on what the GPU can do here."""
    if task.spec is None:
        return Checker(gpu_note="the file's op is unknown: it is compiled, not validated")
    if config.no_gpu:
        return Checker(gpu_note="--no-gpu given: candidates are compiled, not validated or timed")
    how = plan(task.arch)
    if not how.runnable:
        return Checker(gpu_note=how.message)
    options = EvalOptions.quick(task.spec, unsafe_no_sandbox=config.unsafe_no_sandbox,
                                profile=config.profile, sanitize=config.sanitize)

    def evaluator(compiled: CompileResult, contract: Contract, task: Task) -> Evaluation:
        result = evaluate(compiled, contract, task.spec, task.arch, options=options,
                          workers=workers)
        return result if result is not None else Evaluation("crash", "the GPU could not run it")

    return Checker(evaluator, embed_ptx=how.embed_ptx,
                   gpu_note=how.message or f"validated and timed on {how.local}")


def _for_resume(config: RunConfig) -> RunConfig:
    """What run.json keeps: absolute paths (resume from anywhere), no credentials in the URL."""
    def absolute(path: str | None) -> str | None:
        return str(Path(path).resolve()) if path and Path(path).exists() else path

    return dataclasses.replace(config, input_path=absolute(config.input_path),
                               op_file=absolute(config.op_file),
                               kernelbench=absolute(config.kernelbench),
                               prompt_set=config.prompt_set if config.prompt_set in
                               list_prompt_sets() else absolute(config.prompt_set) or "default",
                               base_url=safe_url(config.base_url) if config.base_url else None)


def load_config(run_dir: RunDir) -> RunConfig:
    saved = run_dir.meta()["config"]
    fields = {f.name for f in dataclasses.fields(RunConfig)}
    return RunConfig(**{k: v for k, v in saved.items() if k in fields})


def load_history(run_dir: RunDir, task: Task, checker: Checker) -> list[Attempt]:
    """Finished attempts back from the run directory (compiles come from the cache)."""
    history = []
    for rec in run_dir.finished_records():
        kernel = run_dir.attempt_dir(rec["attempt"]) / "kernel.cu"
        source = kernel.read_text() if kernel.exists() else None
        compiled = None
        if source is not None and rec.get("compile") is not None:
            include_dir = task.path.resolve().parent if task.path else None
            compiled = compile_source(source, task.arch, flags=checker.flags,
                                      include_dir=include_dir, embed_ptx=checker.embed_ptx)
        problems = tuple(Diagnostic(**{**p, "notes": tuple(p["notes"])}, category="contract")
                         for p in rec.get("problems", ()))
        saved = rec.get("evaluation") or rec.get("run")  # "run": run directories before 0.2
        evaluation = Evaluation.from_json(saved) if saved else None
        history.append(Attempt(rec["attempt"], rec["round"], source, rec.get("choices", ""),
                               rec.get("notes", ""), problems, compiled, evaluation))
    return history
