"""A run (`kgen generate` or `kgen fix`) as one object: start it or resume it from its run
directory, drive the loop, close it properly after Ctrl-C or a fatal error, return a summary.

The CLI parses options into a RunConfig, calls Run.start or Run.resume, then run.execute, and
prints; it knows nothing of the stages. A run directory read back is data: its run.json is
validated field by field, a prompt set it names is used only if kgen ships it or the user names
it again, and a key is sent only to an endpoint named in this invocation (kgen.loop.config).
SIGTERM and SIGHUP end a run as Ctrl-C does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgen import models, process
from kgen.arch import local_gpu, parse_arch
from kgen.compile import CompileResult, Diagnostic, compile_source
from kgen.contract import Contract
from kgen.errors import KgenError, UsageError, require_file
from kgen.gpu.client import FreshWorkers, Workers
from kgen.gpu.evaluate import EvalOptions, evaluate, plan
from kgen.gpu.pool import WorkerPool
from kgen.loop import kbout, report
from kgen.loop.attempt import Attempt
from kgen.loop.candidate import parse_contract
from kgen.loop.config import ResumeOptions, RunConfig, load_config, resumed_config, saved_config
from kgen.loop.loop import Checker, Trajectory, run_loop
from kgen.loop.rundir import RunDir, default_run_dir
from kgen.loop.signals import interrupt_reason, signals_as_interrupts, signals_held
from kgen.loop.task import Task
from kgen.models.base import Model
from kgen.ops import available_ops, load_op
from kgen.ops.kernelbench import load_problem
from kgen.spec import OpSpec
from kgen.verdict import Evaluation

__all__ = ["ResumeOptions", "Run", "RunConfig", "RunSummary", "build_task", "load_config",
           "load_history"]


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
        self._done: list[Attempt] = []  # attempts finished in this invocation (for close)
        if task.mode == "fix" and history and history[0].compile is not None:
            self.checker = _input_headers(checker, history[0].compile)

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
        saved = dataclasses.asdict(saved_config(config)) | {
            "arch": task.arch.name, "dtype": task.dtype, "model_description": model.describe()}
        run_dir = RunDir.create(out or default_run_dir(label), saved)
        checker, owned = _checker_and_pool(task, config, workers)
        run = cls(config, model, task, checker, run_dir, [], owned=owned)
        if task.mode == "fix":
            with signals_as_interrupts():
                try:
                    seed = run._seed_fix()
                except KeyboardInterrupt as exc:  # stopped while the input compiles
                    with signals_held():
                        run.close("interrupted", interrupt_reason(exc))
                    raise
            run.history.append(seed)
            run.checker = _input_headers(run.checker, seed.compile)
        return run

    @classmethod
    def resume(cls, path: Path, options: ResumeOptions | None = None, *,
               model: Model | None = None, workers: Workers | None = None) -> Run:
        """Reopen a run directory; its saved configuration wins, except what is given now (the
        model options, the prompt set, --unsafe-no-sandbox): another model may carry on, and
        credentials kept out of run.json come back this way. `model`/`workers` as for start."""
        options = options or ResumeOptions()
        run_dir = RunDir.open(path, options.skip_corrupt)
        config = resumed_config(load_config(run_dir), options, run_dir)
        model = model or models.resolve_model(config.backend, config.model, config.base_url)
        task = build_task(config)
        checker, owned = _checker_and_pool(task, config, workers)
        with signals_as_interrupts():  # recompiling (cache misses) stops cleanly too
            history = load_history(run_dir, task, checker)
        return cls(config, model, task, checker, run_dir, history, resumed=True, owned=owned)

    @property
    def resume_command(self) -> str:
        return f"kgen {self.task.mode} --resume {self.run_dir.path}"

    def execute(self, on_attempt: OnAttempt = lambda a, t: None) -> RunSummary:
        """Drive the loop to its end. After Ctrl-C, SIGTERM, SIGHUP or a fatal error the run
        directory is closed (status, report.md and best.cu from the finished attempts) and the
        exception goes on (the CLI exits 130, 143, 129 or the error's code)."""
        def seen(attempt: Attempt, trajectory: Trajectory) -> None:
            self._done.append(attempt)
            on_attempt(attempt, trajectory)

        with signals_as_interrupts():
            try:
                trajectory = run_loop(self.task, self.model, self.checker, self.run_dir,
                                      self.config.budget(), list(self.history),
                                      self.config.prompt_set, seen)
            except KeyboardInterrupt as exc:
                with signals_held():
                    process.kill_all()  # nvcc or a worker a compile/GPU thread started
                    self.close("interrupted", interrupt_reason(exc))
                raise
            except KgenError as exc:
                with signals_held():
                    self.close(f"stopped: {exc}")
                raise
            finally:
                if self.owned is not None:
                    self.owned.close()
            with signals_held():
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
        timing = best.timing if best else None
        self.run_dir.update_meta(status=status, stop_reason=trajectory.stop_reason,
                                 best_attempt=best.number if best else None)
        return RunSummary(ok, best_path, len(trajectory.attempts), validated,
                          str(self.run_dir.path), trajectory.stop_reason, self.checker.gpu_note,
                          timing.ms if timing else None, timing.speedup if timing else None)

    def _final_timing(self, best: Attempt) -> Evaluation | None:
        """A passing KernelBench kernel once more, at every bench size, against torch eager and
        (unless --no-compile-baseline) torch.compile: the loop's rounds skip it, compiling takes a
        while."""
        if self.checker.evaluator is None or best.compile is None or self.task.spec is None:
            return None
        contract, _ = parse_contract(best.source or "", self.task.spec)
        options = EvalOptions(bench_budget_s=1.0, compile_baseline=self.config.compile_baseline,
                              unsafe_no_sandbox=self.config.unsafe_no_sandbox)
        return evaluate(best.compile, contract, self.task.spec, self.task.arch, options=options)

    def close(self, status: str, reason: str | None = None) -> None:
        """After an interrupt or a fatal error: report and best.cu from the finished attempts
        (held in memory: closing never compiles anything again)."""
        trajectory = Trajectory([*self.history, *self._done], stop_reason=reason or status)
        self.finish(trajectory, status=status)

    def _seed_fix(self) -> Attempt:
        """Attempt 1 of a fix is the file as given, so the model starts from its real errors."""
        attempt = self.checker.check(self.task, self.task.source or "", 1, 0,
                                     notes="the input file as given", trusted=True)
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
    """The run's task. What the user typed (the op, the dtype, the file) is checked before the
    architecture is looked for, so a typo is named even on a machine with no GPU."""
    if config.mode == "fix":
        return _fix_task(config)
    spec = op_spec(config)
    dtype = config.dtype or next(iter(spec.dtypes))
    spec.check_dtype(dtype)
    return Task("generate", parse_arch(resolve_arch(config.arch)), spec, dtype)


def op_spec(config: RunConfig) -> OpSpec:
    """The op of a run: a KernelBench problem, a spec file, or a shipped op."""
    if config.kernelbench:
        return load_problem(Path(config.kernelbench))
    return load_op(config.op, Path(config.op_file) if config.op_file else None)


def _fix_task(config: RunConfig) -> Task:
    path = Path(str(config.input_path))
    require_file(path)
    arch = parse_arch(resolve_arch(config.arch))
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


def load_history(run_dir: RunDir, task: Task, checker: Checker) -> list[Attempt]:
    """Finished attempts back from the run directory (compiles come from the cache)."""
    history: list[Attempt] = []
    for rec in run_dir.finished_records():
        kernel = run_dir.attempt_dir(rec["attempt"]) / "kernel.cu"
        source = kernel.read_bytes().decode("utf-8", errors="replace") if kernel.is_file() \
            else None
        compiled = None
        if source is not None and rec.get("compile") is not None:
            include_dir = task.path.resolve().parent if task.path else None
            # A fix's attempt 1 is the user's own file; later ones may read only its headers.
            trusted = task.mode == "fix" and not history
            headers = None if trusted else (history[0].compile.headers if task.mode == "fix"
                                            and history[0].compile else ())
            compiled = compile_source(source, task.arch, flags=checker.flags,
                                      include_dir=include_dir, headers=headers,
                                      embed_ptx=checker.embed_ptx)
        problems = tuple(Diagnostic(**{**p, "notes": tuple(p["notes"])}, category="contract")
                         for p in rec.get("problems", ()))
        saved = rec.get("evaluation") or rec.get("run")  # "run": run directories before 0.2
        evaluation = Evaluation.from_json(saved) if saved else None
        history.append(Attempt(rec["attempt"], rec["round"], source, rec.get("choices", ""),
                               rec.get("notes", ""), problems, compiled, evaluation))
    return history


def _input_headers(checker: Checker, compiled: CompileResult | None) -> Checker:
    """Candidates of a fix may include the local headers the user's own file includes."""
    return dataclasses.replace(checker, headers=compiled.headers if compiled else ())
