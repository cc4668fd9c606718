"""Progress on stderr with rich: one line per attempt (status, resources, time, best so far)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from kgen.attempt import Attempt
from kgen.loop import Outcome

_COLORS = {"pass": "green", "compiled": "green", "wrong": "red", "crash": "red",
           "timeout": "red", "launch_error": "red", "suspicious": "yellow",
           "compile error": "yellow", "contract error": "yellow", "no code": "yellow"}


class Progress:
    """Prints to stderr so that `--json` output on stdout stays clean."""

    def __init__(self, quiet: bool = False):
        self.console = Console(stderr=True, highlight=False, quiet=quiet)
        self.status = self.console.status("")  # a spinner on a terminal, silent otherwise

    def working(self, next_attempt: int) -> None:
        """Show that attempt N is under way (model reply, nvcc, GPU), until the next line."""
        self.status.update(f"attempt {next_attempt}: asking the model, compiling, validating…")
        self.status.start()

    def say(self, text: str, markup: bool = True) -> None:
        self.console.print(text, markup=markup)

    def attempt(self, attempt: Attempt, outcome: Outcome) -> None:
        color = _COLORS.get(attempt.status, "white")
        detail = ""
        if attempt.compile is not None and not attempt.compile.ok:
            detail = f"{len(attempt.compile.errors)} error(s)"
        if attempt.run is not None and attempt.run.timings:
            t = attempt.run.timings[0]
            detail = f"{t.ms:.3f} ms" + (f", {t.speedup:.2f}x of baseline" if t.speedup else "")
        elif attempt.run is not None and attempt.run.message:
            detail = attempt.run.message.splitlines()[0][:90]
        detail = escape(detail)  # model and worker text is data, never rich markup
        best = outcome.best
        best_text = f"best: #{best.number}" if best else "best: none yet"
        if best is not None and best.best_ms is not None:
            best_text += f" {best.best_ms:.3f} ms"
        choices = f" [dim]{escape(attempt.choices)}[/dim]" if attempt.choices else ""
        self.status.stop()
        self.console.print(f"attempt {attempt.number:>2} (round {attempt.round}){choices}: "
                           f"[{color}]{attempt.status}[/{color}] {detail}  [dim]{best_text}[/dim]")
        self.working(attempt.number + 1)
