"""The loop: ask the model, check its candidate (contract, nvcc, GPU), feed the result back, repeat.

Only this module knows the order of the stages. Each round asks for `candidates` replies rendered
from the same history (kgen.loop.batch asks and checks them concurrently and hands them back in
order); the run stops on budget (rounds, wall time, tokens), when the model gives up, or after
`patience` attempts without improvement once a candidate has succeeded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kgen import process
from kgen.compile import CompileResult, Diagnostic, compile_source
from kgen.contract import Contract
from kgen.errors import EnvironmentProblem
from kgen.loop import batch, prompts
from kgen.loop.attempt import Attempt, best_attempt
from kgen.loop.candidate import extract_source, parse_contract
from kgen.loop.geometry import launch_problems
from kgen.loop.rundir import RunDir
from kgen.loop.task import Task
from kgen.models.base import Model, Reply
from kgen.verdict import Evaluation

Evaluator = Callable[[CompileResult, Contract, Task], Evaluation]


@dataclass(frozen=True)
class Budget:
    rounds: int = 8
    candidates: int = 1  # per round, all from the same prompt
    patience: int = 3  # attempts without improvement after a success
    wall_seconds: float | None = None
    tokens: int | None = None


@dataclass(frozen=True)
class Checker:
    """How candidates are checked: compile settings and, where a GPU can run them, the evaluator."""

    evaluator: Evaluator | None = None
    embed_ptx: bool = False  # the local GPU runs the target through the PTX (see kgen.arch)
    gpu_note: str = "no GPU: candidates are compiled, not validated or timed"
    flags: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()  # local headers a candidate may include (the input's own)

    def check(self, task: Task, source: str, number: int, round_number: int,
              notes: str = "", trusted: bool = False) -> Attempt:
        """Contract, compile and (where a GPU can) run one source: the attempt's record.
        `trusted` is the user's own file (a fix's attempt 1), which may include any header of
        its folder; a model's candidate may include only `headers`."""
        contract: Contract | None = None
        problems: tuple[Diagnostic, ...] = ()
        if task.spec is not None or "// kgen:" in source:
            contract, problems = parse_contract(source, task.spec)
        include_dir = task.path.resolve().parent if task.path else None
        compiled = compile_source(source, task.arch, flags=self.flags, include_dir=include_dir,
                                  headers=None if trusted else self.headers,
                                  embed_ptx=self.embed_ptx)
        if contract is not None and task.spec is not None:  # impossible launches never run
            problems = launch_problems(contract, task.spec, task.arch, compiled.resources)
            contract = None if problems else contract
        evaluation = None
        if compiled.ok and contract is not None and task.spec is not None and self.evaluator:
            evaluation = self.evaluator(compiled, contract, task)
        return Attempt(number, round_number, source, contract.choices if contract else "", notes,
                       problems, compiled, evaluation)


@dataclass
class Trajectory:
    """The attempts of a run so far, why it stopped, and the tokens it spent."""

    attempts: list[Attempt] = field(default_factory=list)
    stop_reason: str = ""
    tokens: int = 0

    @property
    def best(self) -> Attempt | None:
        return best_attempt(self.attempts)


def succeeded(attempt: Attempt, validating: bool) -> bool:
    """Passed on the GPU, or (with no GPU to validate) compiled cleanly with a good contract."""
    return attempt.passed if validating else attempt.status == "compiled"


def run_loop(task: Task, model: Model, checker: Checker, run_dir: RunDir, budget: Budget,
             history: list[Attempt], prompt_set: str = "default",
             on_attempt: Callable[[Attempt, Trajectory], None] = lambda a, o: None) -> Trajectory:
    """Run rounds until success-and-patience, budget or give-up; every attempt is saved at once."""
    trajectory = Trajectory(list(history))
    start = time.monotonic()
    validating = checker.evaluator is not None and task.spec is not None
    while True:
        reason = _should_stop(trajectory, budget, start, validating)
        if reason:
            trajectory.stop_reason = reason
            return trajectory
        messages = prompts.build_messages(task, tuple(trajectory.attempts), prompt_set)
        round_number = 1 + max((a.round for a in trajectory.attempts), default=0)
        # Numbers go on after the last one, not the count, and after any folder whose record was
        # set aside on resume (run_dir.reserved): no attempt folder is ever written twice.
        first = 1 + max([a.number for a in trajectory.attempts] + [run_dir.reserved])
        round_ = batch.candidates(task, model, lambda r, n, k: _attempt(task, checker, r, n, k),
                                  messages, tuple(trajectory.attempts), run_dir,
                                  budget.candidates, first, round_number)
        try:
            for reply, attempt in round_:
                trajectory.tokens += reply.usage.total
                if attempt is None:
                    trajectory.stop_reason = f"the model ended the search: {reply.give_up}"
                    return trajectory
                run_dir.save_attempt(attempt, reply.text)
                trajectory.attempts.append(attempt)
                on_attempt(attempt, trajectory)
                if attempt.evaluation is not None and "gpu_unhealthy" in attempt.evaluation.extra:
                    raise EnvironmentProblem(attempt.evaluation.extra["gpu_unhealthy"])
        except BaseException:
            process.kill_all()  # compiles and GPU checks the round's other threads started
            raise
        finally:
            round_.close()


def _should_stop(trajectory: Trajectory, budget: Budget, start: float, validating: bool) -> str:
    attempts = trajectory.attempts
    rounds_done = max((a.round for a in attempts), default=0)
    if budget.wall_seconds is not None and time.monotonic() - start > budget.wall_seconds:
        return f"wall-time budget of {budget.wall_seconds:g} s spent"
    if budget.tokens is not None and trajectory.tokens >= budget.tokens:
        return f"token budget of {budget.tokens} spent"
    won = any(succeeded(a, validating) for a in attempts)
    if won and not validating:
        return "a candidate compiled cleanly (it cannot be validated or timed here)"
    best = best_attempt(attempts)
    if won and best is not None:  # best is the fastest passing attempt: count attempts since it
        if len(attempts) - 1 - attempts.index(best) >= budget.patience:
            return f"no improvement in the last {budget.patience} attempts"
    if rounds_done >= budget.rounds:
        return f"all {budget.rounds} rounds used"
    return ""


def _attempt(task: Task, checker: Checker, reply: Reply, number: int, round_number: int) -> Attempt:
    source = extract_source(reply.text)
    notes = reply.text.split("```", 1)[0].strip()[:2000]  # the author's stated reasons
    if source is None:
        return Attempt(number, round_number, None, notes=notes)
    return checker.check(task, source, number, round_number, notes)
