"""Progress on stderr with rich: one line per attempt (status, resources, time, best so far).

Every piece of text from outside kgen (model text, file names, spec fields, worker messages)
goes through kgen.textsafe.terminal: no escape sequences, no control characters, no markup."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from kgen.loop.attempt import Attempt
from kgen.loop.loop import Trajectory
from kgen.textsafe import terminal
from kgen.verdict import status_color

if TYPE_CHECKING:
    from kgen.loop.session import Run, RunSummary


class Progress:
    """Prints to stderr so that `--json` output on stdout stays clean."""

    def __init__(self, quiet: bool = False):
        self.console = Console(stderr=True, highlight=False, quiet=quiet)
        self.status = self.console.status("")  # a spinner on a terminal, silent otherwise

    def working(self, next_attempt: int) -> None:
        """Show that attempt N is under way (model reply, nvcc, GPU), until the next line."""
        self.status.update(f"attempt {next_attempt}: asking the model, compiling, validating…")
        self.status.start()

    def stop(self) -> None:
        self.status.stop()

    def say(self, text: str, markup: bool = True) -> None:
        """`markup=False` for text that holds data; kgen's own markup otherwise."""
        self.console.print(text if markup else terminal(text), markup=markup)

    def header(self, run: Run) -> None:
        """What runs, with which model, where; the attempts already finished (on resume)."""
        if run.config.unsafe_no_sandbox:
            self.say("[bold red]UNSAFE: --unsafe-no-sandbox: candidates run on the GPU without "
                     "bubblewrap isolation[/bold red]")
        self.say(f"kgen {run.task.label} with {run.model.describe()}", markup=False)
        self.say(f"run directory: {run.run_dir.path}   GPU: {run.checker.gpu_note}", markup=False)
        for attempt in run.history:
            self.attempt(attempt, Trajectory(run.history))
        self.working(len(run.history) + 1)

    def attempt(self, attempt: Attempt, trajectory: Trajectory) -> None:
        color = status_color(attempt.status)
        detail = ""
        evaluation = attempt.evaluation
        if attempt.compile is not None and not attempt.compile.ok:
            detail = f"{len(attempt.compile.errors)} error(s)"
        if attempt.timing is not None:
            detail = attempt.timing.short()
        elif evaluation is not None and evaluation.message:
            detail = evaluation.message.splitlines()[0][:90]
        detail = terminal(detail, markup=True)  # model and worker text is data, never markup
        best = trajectory.best
        best_text = f"best: #{best.number}" if best else "best: none yet"
        if best is not None and best.best_ms is not None:
            best_text += f" {best.best_ms:.3f} ms"
        choices = f" [dim]{terminal(attempt.choices, markup=True)}[/dim]" if attempt.choices \
            else ""
        self.status.stop()
        self.console.print(f"attempt {attempt.number:>2} (round {attempt.round}){choices}: "
                           f"[{color}]{attempt.status}[/{color}] {detail}  [dim]{best_text}[/dim]")
        self.working(attempt.number + 1)

    def summary(self, summary: RunSummary) -> None:
        self.stop()
        status = "[green]ok[/green]" if summary.ok else "[red]no candidate succeeded[/red]"
        self.say(f"{status}: {summary.attempts} attempt(s); stopped: "
                 f"{terminal(summary.stop_reason, markup=True)}")
        if summary.best:
            extra = f" ({summary.best_ms:.3f} ms" if summary.best_ms else ""
            if summary.speedup:
                extra += f", {summary.speedup:.2f}x of baseline"
            extra += ")" if extra else ""
            validated = "validated" if summary.validated else "compiled, not validated or timed"
            self.say(f"best: {terminal(summary.best, markup=True)}{extra} \\[{validated}]")
        self.say(f"report: {terminal(summary.run_dir, markup=True)}/report.md")
